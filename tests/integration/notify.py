#!/usr/bin/python3
"""Stand-in for systemd's notify socket: print every datagram's lines.

  notify.py SOCKET SECONDS   listen on the datagram SOCKET for SECONDS
"""
import os
import socket
import sys
import time

path, seconds = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
print("ready", flush=True)
end = time.monotonic() + seconds
while time.monotonic() < end:
    s.settimeout(max(0.01, end - time.monotonic()))
    try:
        msg = s.recv(4096).decode()
    except socket.timeout:
        break
    for line in msg.splitlines():
        print(line, flush=True)
        if line == "STOPPING=1":
            sys.exit(0)
os.unlink(path)
