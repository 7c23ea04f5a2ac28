#!/usr/bin/python3
"""Stand-in for systemd's service manager, as far as restarts of vrdmad go
(docs/restart.md): runs a command with a notify socket and a file descriptor
store, and starts it again on request with the fds stored, as systemd 252
does on `systemctl restart` (FileDescriptorStoreMax=, sd_notify FDSTORE=1 /
FDSTOREREMOVE=1 with FDNAME=; LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID).
tests/systemd/nspawn.sh runs the real one; this one runs in the netns suite.

  fdstore.py LOG MAX -- CMD...

Commands, one per line on stdin:
  restart     SIGTERM, wait for the exit, start again with the store
  kill        SIGKILL, then start again with the store (Restart=, a crash)
  abort-at N  SIGTERM, then SIGABRT at the Nth fd stored, and the fds after
              it never stored (a crash there while saving), then start again
  stop        SIGTERM, wait, empty the store (systemctl stop), exit
Prints to LOG: "start PID N NAMES" (the fds handed over), "exit RC MS" (its
exit code, ms since the signal), "store N" after each exit, "done".

As systemd 252: a file already in the store is dropped when stored again
under another name (same inode, for files with their own); past MAX the fd
is dropped with a warning; FDSTOREREMOVE=1 drops every fd of that name;
"stop" closes them all.
"""
import fcntl
import os
import select
import signal
import socket
import stat
import sys
import tempfile
import time

log_path, max_fds = sys.argv[1], int(sys.argv[2])
cmd = sys.argv[sys.argv.index("--") + 1:]
log = open(log_path, "a", buffering=1)
tmp = tempfile.mkdtemp(prefix="fdstore.")
path = os.path.join(tmp, "notify")
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(path)
store = []		# [name, fd]
child = None
abort_at = 0		# SIGABRT at this FDSTORE message of the stop (0: never)
stored_in_stop = 0
signal_at = 0.0


def say(*words):
    print(*words, file=log, flush=True)


def same_file(a, b):
    sa, sb = os.fstat(a), os.fstat(b)
    own = stat.S_ISREG(sa.st_mode) or stat.S_ISSOCK(sa.st_mode)
    return own and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def on_message():
    global stored_in_stop
    msg, fds, _, _ = socket.recv_fds(sock, 65536, 64)
    lines = dict(l.split("=", 1) for l in msg.decode().splitlines() if "=" in l)
    name = lines.get("FDNAME", "stored")
    if lines.get("FDSTOREREMOVE") == "1":
        for e in [e for e in store if e[0] == name]:
            os.close(e[1])
            store.remove(e)
    if lines.get("FDSTORE") == "1":
        for fd in fds:
            stored_in_stop += 1
            if abort_at and stored_in_stop > abort_at:
                os.close(fd)		# sent after the crash point: never stored
            elif any(same_file(fd, e[1]) for e in store):
                os.close(fd)		# systemd 252: silently
            elif len(store) >= max_fds:
                say("warning: store full, dropping", name)
                os.close(fd)
            else:
                store.append([name, fd])
            if abort_at and stored_in_stop == abort_at and child:
                child.send_signal(signal.SIGABRT)
        return
    for fd in fds:
        os.close(fd)


class Child:
    """The service: forked and exec'ed here, its fds placed as systemd does."""

    def __init__(self, fds, env):
        self.pid = os.fork()
        if self.pid == 0:
            try:
                high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in fds]
                for i, h in enumerate(high):
                    os.dup2(h, 3 + i)
                os.closerange(3 + len(fds), 65536)
                env["LISTEN_PID"] = str(os.getpid())
                os.execvpe(cmd[0], cmd, env)
            finally:
                os._exit(127)
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, sig):
        if self.returncode is None:
            os.kill(self.pid, sig)

    def wait(self):
        while self.poll() is None:
            time.sleep(0.01)


def start():
    global child, stored_in_stop
    fds = [e[1] for e in store]
    env = dict(os.environ, NOTIFY_SOCKET=path)
    for k in ("LISTEN_FDS", "LISTEN_FDNAMES", "LISTEN_PID"):
        env.pop(k, None)
    if fds:
        env["LISTEN_FDS"] = str(len(fds))
        env["LISTEN_FDNAMES"] = ":".join(e[0] for e in store)
    child = Child(fds, env)
    stored_in_stop = 0
    say("start", child.pid, len(fds), " ".join(sorted(e[0] for e in store)))


def wait_exit():
    global child
    while child.poll() is None:
        r, _, _ = select.select([sock], [], [], 0.01)
        if r:
            on_message()
    while select.select([sock], [], [], 0)[0]:
        on_message()
    say("exit", child.returncode, int((time.monotonic() - signal_at) * 1000))
    say("store", len(store))
    child = None


start()
while True:
    r, _, _ = select.select([sock, sys.stdin], [], [], 0.05)
    if sock in r:
        on_message()
    if child and child.poll() is not None:
        signal_at = time.monotonic()
        wait_exit()		# died by itself: Restart=on-failure
        start()
    if sys.stdin not in r:
        continue
    line = sys.stdin.readline()
    if not line:
        break
    words = line.split()
    if not words:
        continue
    signal_at = time.monotonic()
    if words[0] in ("restart", "stop"):
        child.send_signal(signal.SIGTERM)
    elif words[0] == "kill":
        child.send_signal(signal.SIGKILL)
    elif words[0] == "abort-at":
        abort_at = int(words[1])
        child.send_signal(signal.SIGTERM)
    else:
        say("unknown command", words[0])
        continue
    wait_exit()
    abort_at = 0
    if words[0] == "stop":
        for e in store:
            os.close(e[1])
        store.clear()
        break
    start()
if child:
    child.send_signal(signal.SIGTERM)
    child.wait()
say("done")
os.unlink(path)
os.rmdir(tmp)
