#!/usr/bin/python3
"""Small traffic helpers for the netns tests (run inside a namespace).

  send ADDR PORT COUNT [SIZE]   send COUNT UDP datagrams of SIZE bytes
  recv PORT SECONDS [ADDR]      count datagrams arriving on PORT until SECONDS of quiet
  tcp-echo PORT SECONDS         serve one TCP echo connection
  tcp-check ADDR PORT           connect, send, expect the echo
  raw IFNAME HEX                send one raw Ethernet frame (hex) on IFNAME
  raw-udp IFNAME DSTMAC SRC DST DPORT COUNT [vlan=ID] [ihl=N]
                                send COUNT hand-built Ethernet/[802.1Q]/IPv4/UDP
                                frames (ihl > 5 adds IPv4 options: NOPs)
  roce IFNAME DSTMAC SRC DST COUNT [size=N] [vlan=ID] [ihl=N] [icrc=bad]
                                send COUNT valid RoCEv2 RC SEND_ONLY frames of
                                N payload bytes (IPv4 or IPv6), ICRC computed
                                here with zlib: independent of vrdmad's codec
  roce-read IFNAME DSTMAC SRC DST QPN RKEY VA LEN DUPS [bad=N]
                                an RC RDMA READ request of LEN bytes at VA to
                                QP QPN at PSN 0, then DUPS duplicates of it
                                (a requester that keeps asking again), then N
                                that name more than the original asked for
                                (twice LEN): at most ~30000 frames a second
"""
import socket
import struct
import sys
import zlib
import time


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def ip_checksum(hdr):
    csum = sum(struct.unpack("!%dH" % (len(hdr) // 2), hdr))
    while csum >> 16:
        csum = (csum & 0xffff) + (csum >> 16)
    return ~csum & 0xffff


def roce_frame(src_mac, dst_mac, src, dst, psn, size, vlan=None, ihl=5,
               opcode=0x04, qpn=0x11, ext=b""):
    """Ethernet/[802.1Q]/IP/UDP/BTH/[ext]/payload/pad/ICRC, as IBA Annex A17
    says; RC SEND_ONLY with AckReq unless opcode (and ext, its other
    headers) say otherwise."""
    v6 = ":" in dst
    pad = (4 - size % 4) % 4
    bth = struct.pack("!BBHI I", opcode, pad << 4, 0xffff, qpn,
                      0x80000000 | (psn & 0xffffff))
    body = bth + ext + bytes((psn + i) & 0xff for i in range(size)) + b"\x00" * pad
    udp_len = 8 + len(body) + 4
    udp = struct.pack("!HHHH", 0xc000 | (psn & 0x3fff), 4791, udp_len, 0)
    if v6:
        ip = struct.pack("!IHBB16s16s", 6 << 28, udp_len, 17, 64,
                         socket.inet_pton(socket.AF_INET6, src),
                         socket.inet_pton(socket.AF_INET6, dst))
        masked = bytearray(ip)
        masked[0] |= 0x0f
        masked[1:4] = b"\xff\xff\xff"
        masked[7] = 0xff
        ethertype = 0x86dd
    else:
        opts = b"\x01" * (ihl * 4 - 20)
        ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + udp_len, psn & 0xffff,
                         0x4000, 64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst)) + opts
        ip = ip[:10] + struct.pack("!H", ip_checksum(ip)) + ip[12:]
        masked = bytearray(ip)
        masked[1] = 0xff
        masked[8] = 0xff
        masked[10:12] = b"\xff\xff"
        ethertype = 0x0800
    mudp = udp[:6] + b"\xff\xff"
    mbth = body[:4] + b"\xff" + body[5:]
    icrc = zlib.crc32(b"\xff" * 8 + bytes(masked) + mudp + mbth) & 0xffffffff
    eth = dst_mac + src_mac
    if vlan is not None:
        eth += struct.pack("!HH", 0x8100, vlan)
    return eth + struct.pack("!H", ethertype) + ip + udp + body + struct.pack("<I", icrc)


def main(argv):
    cmd = argv[1]
    if cmd == "send":
        addr, port, count = argv[2], int(argv[3]), int(argv[4])
        size = int(argv[5]) if len(argv) > 5 else 64
        s = socket.socket(family(addr), socket.SOCK_DGRAM)
        for i in range(count):
            s.sendto(bytes([i & 0xff]) * size, (addr, port))
            if i % 32 == 31:
                time.sleep(0.001)  # stay within the veth queue
        return 0
    if cmd == "recv":
        port, quiet = int(argv[2]), float(argv[3])
        addr = argv[4] if len(argv) > 4 else "::"
        s = socket.socket(family(addr), socket.SOCK_DGRAM)
        if family(addr) == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind((addr, port))
        s.settimeout(quiet)
        print("ready", flush=True)
        n = 0
        try:
            while True:
                s.recv(65536)
                n += 1
        except socket.timeout:
            pass
        print(n, flush=True)
        return 0
    if cmd == "tcp-echo":
        port, timeout = int(argv[2]), float(argv[3])
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::", port))
        s.listen(1)
        s.settimeout(timeout)
        print("ready", flush=True)
        c, _ = s.accept()
        c.sendall(c.recv(1024))
        c.close()
        return 0
    if cmd == "tcp-check":
        addr, port = argv[2], int(argv[3])
        c = socket.create_connection((addr, port), timeout=5)
        c.sendall(b"hello vrdmad")
        return 0 if c.recv(1024) == b"hello vrdmad" else 1
    if cmd == "raw-udp":
        ifname, dst_mac, src, dst = argv[2], argv[3], argv[4], argv[5]
        dport, count = int(argv[6]), int(argv[7])
        opts = dict(a.split("=") for a in argv[8:])
        ihl = int(opts.get("ihl", 5))
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((ifname, 0))
        src_mac = s.getsockname()[4]
        payload = b"\x00" * 32
        udp = struct.pack("!HHHH", 49152, dport, 8 + len(payload), 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(udp), 1, 0x4000,
                         64, 17, 0, socket.inet_aton(src), socket.inet_aton(dst))
        ip += b"\x01" * (ihl * 4 - 20)
        csum = sum(struct.unpack("!%dH" % (len(ip) // 2), ip))
        while csum >> 16:
            csum = (csum & 0xffff) + (csum >> 16)
        ip = ip[:10] + struct.pack("!H", ~csum & 0xffff) + ip[12:]
        eth = bytes.fromhex(dst_mac.replace(":", "")) + src_mac
        if "vlan" in opts:
            eth += struct.pack("!HH", 0x8100, int(opts["vlan"]))
        frame = eth + b"\x08\x00" + ip + udp
        for _ in range(count):
            s.send(frame)
        return 0
    if cmd == "roce":
        ifname, dst_mac, src, dst, count = argv[2], argv[3], argv[4], argv[5], int(argv[6])
        opts = dict(a.split("=") for a in argv[7:])
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((ifname, 0))
        for psn in range(count):
            f = roce_frame(s.getsockname()[4], bytes.fromhex(dst_mac.replace(":", "")),
                           src, dst, psn, int(opts.get("size", 64)),
                           int(opts["vlan"]) if "vlan" in opts else None,
                           int(opts.get("ihl", 5)))
            if opts.get("icrc") == "bad":
                f = f[:-1] + bytes([f[-1] ^ 0xff])
            s.send(f)
            if psn % 32 == 31:
                time.sleep(0.001)
        return 0
    if cmd == "roce-read":
        ifname, dst_mac, src, dst = argv[2], argv[3], argv[4], argv[5]
        qpn, rkey, va, length, dups = (int(a, 0) for a in argv[6:11])
        opts = dict(a.split("=") for a in argv[11:])
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((ifname, 0))
        mac = bytes.fromhex(dst_mac.replace(":", ""))
        good = roce_frame(s.getsockname()[4], mac, src, dst, 0, 0, opcode=0x0c, qpn=qpn,
                          ext=struct.pack("!QII", va, rkey, length))
        bad = roce_frame(s.getsockname()[4], mac, src, dst, 0, 0, opcode=0x0c, qpn=qpn,
                         ext=struct.pack("!QII", va, rkey, 2 * length))
        frames = [good] * (1 + dups) + [bad] * int(opts.get("bad", 0))
        for i, f in enumerate(frames):
            s.send(f)
            if i % 32 == 31:
                time.sleep(0.001)
        return 0
    if cmd == "raw":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((argv[2], 0))
        s.send(bytes.fromhex(argv[3]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
