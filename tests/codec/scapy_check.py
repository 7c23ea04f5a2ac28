#!/usr/bin/python3
"""The codec's parser against frames scapy builds (IPv4: scapy computes the
RoCEv2 ICRC itself when BTH.icrc is left unset; it has no IPv6 ICRC).

Every frame goes through `roce_tool parse`, which must accept it (so the ICRC
scapy computed is the one the codec computes) and report every field scapy
set. scapy 2.5's RoCE contrib has BTH, AETH and the CNP padding but no RETH,
AtomicETH, DETH or ImmDt layer: those are packed here as Raw after the BTH (or
the AETH), which is what they are on the wire.

Environment: ROCE_TOOL (the roce_tool binary). Run with Debian's
/usr/bin/python3, the one with scapy.
"""
import json
import os
import struct
import subprocess
import sys

from scapy.compat import raw
from scapy.layers.inet import IP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
import scapy.contrib.roce as roce
from scapy.contrib.roce import AETH, BTH, cnp

from codec_checks import Checks

ROCE_TOOL = os.environ.get("ROCE_TOOL") or sys.exit("scapy_check: set ROCE_TOOL")

check = Checks(width=2)


def pattern(n, seed):
    return bytes((0x30 + (i * 11 + seed) % 71) for i in range(n))


# Raw extension headers (IBA 9.3), network order.
def reth(va, rkey, dmalen):
    return struct.pack("!QII", va, rkey, dmalen)


def atomic_eth(va, rkey, swap_add, compare):
    return struct.pack("!QIQQ", va, rkey, swap_add, compare)


def deth(qkey, sqpn):
    return struct.pack("!II", qkey, sqpn & 0xffffff)  # resv8 is the top byte


def immdt(value):
    return struct.pack("!I", value)


SMAC, DMAC = "02:5c:a9:00:00:01", "02:5c:a9:00:00:02"
SRC, DST = "192.0.2.17", "198.51.100.34"


def frame(name, bth, ext=b"", aeth=None, payload=b"", expect=None, vlan=None,
          ip_opts=None, eth_pad=0, ip=None, sport=0xd00d):
    """One case: scapy layers, and the fields roce_tool must report."""
    pad = (4 - len(payload) % 4) % 4
    bth.padcount = pad
    ipl = ip or dict(src=SRC, dst=DST, tos=0x8a, ttl=37, id=0x1234, flags="DF")
    if ip_opts:
        ipl["options"] = ip_opts
    l2 = Ether(src=SMAC, dst=DMAC)
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=vlan >> 13, id=(vlan >> 12) & 1, vlan=vlan & 0xfff)
    p = l2 / IP(**ipl) / UDP(sport=sport, dport=4791) / bth
    if aeth is not None:
        p = p / aeth
    body = ext + payload + b"\0" * pad
    if body:
        p = p / Raw(body)
    # Ethernet padding goes on as bytes, not as a scapy Padding layer:
    # scapy's BTH.compute_icrc takes raw() of the BTH's payload, which
    # includes a Padding layer, so its ICRC would cover the padding.
    roce_len = len(raw(p))
    b = raw(p) + b"\0" * eth_pad
    exp = {
        "ok": True, "drop": None, "ipv6": False,
        "opcode": bth.opcode, "dqpn": bth.dqpn, "psn": bth.psn, "pad": pad,
        "se": bool(bth.solicited), "mig": bool(bth.migreq), "ackreq": bool(bth.ackreq),
        "fecn": bool(bth.fecn), "becn": bool(bth.becn), "pkey": bth.pkey,
        "smac": SMAC, "dmac": DMAC, "sgid": ipl["src"], "dgid": ipl["dst"],
        "sport": sport, "tclass": ipl["tos"], "hop_limit": ipl["ttl"], "ip_id": ipl["id"],
        "flow_label": 0, "vlan": -1 if vlan is None else vlan,
        "payload_len": len(payload), "payload": payload.hex(),
        "len": roce_len, "frame_len": len(b),
        # The ICRC scapy computed: the 4 bytes before any Ethernet padding,
        # little-endian as stored.
        "icrc": int.from_bytes(b[roce_len - 4:roce_len], "little"),
    }
    if aeth is not None:
        exp["aeth_syndrome"] = aeth.syndrome
        exp["aeth_msn"] = aeth.msn
    exp.update(expect or {})
    return name, b, exp


def cases():
    out = []
    pay17 = pattern(17, 1)
    out.append(frame("rc_send_only", BTH(opcode=0x04, dqpn=0x0a0b0c, psn=0x123456,
                                         ackreq=1, solicited=1, pkey=0xffff), payload=pay17))
    va, rkey = 0xfedcba9876543210, 0x89abcdef
    out.append(frame("rc_write_first", BTH(opcode=0x06, dqpn=0x00f00d, psn=0xfffffe,
                                           pkey=0x8001),
                     ext=reth(va, rkey, 8192), payload=pattern(256, 2),
                     expect=dict(reth_va=va, reth_rkey=rkey, reth_len=8192)))
    out.append(frame("rc_write_only", BTH(opcode=0x0a, dqpn=0xabcdef, psn=0xffffff, ackreq=1,
                                          migreq=1),
                     ext=reth(va + 1, rkey + 1, 13), payload=pattern(13, 3),
                     expect=dict(reth_va=va + 1, reth_rkey=rkey + 1, reth_len=13)))
    out.append(frame("rc_read_request", BTH(opcode=0x0c, dqpn=0x000001, psn=0x000000, ackreq=1),
                     ext=reth(0x1000, 0x42, 0x100000),
                     expect=dict(reth_va=0x1000, reth_rkey=0x42, reth_len=0x100000)))
    out.append(frame("rc_read_response_only", BTH(opcode=0x10, dqpn=0x112233, psn=0x000000),
                     aeth=AETH(syndrome=0x1f, msn=0x7fffff), payload=pattern(1023, 4)))
    out.append(frame("rc_ack", BTH(opcode=0x11, dqpn=0x445566, psn=0x800000),
                     aeth=AETH(syndrome=0x1f, msn=0x000102)))
    # NAK, PSN sequence error: syndrome 0b011_00000 (9.7.5.2.4)
    out.append(frame("rc_nak_psn_seq_err", BTH(opcode=0x11, dqpn=0x445566, psn=0x800001),
                     aeth=AETH(syndrome=0x60, msn=0x000103)))
    out.append(frame("rc_compare_swap", BTH(opcode=0x13, dqpn=0x0c0c0c, psn=0x0d0d0d, ackreq=1),
                     ext=atomic_eth(0xffff800000001000, 0xcafe, 0x8000000000000001,
                                    0xffffffffffffffff),
                     expect=dict(atomic_va=0xffff800000001000, atomic_rkey=0xcafe,
                                 atomic_swap_add=0x8000000000000001,
                                 atomic_compare=0xffffffffffffffff)))
    out.append(frame("ud_send_only_imm", BTH(opcode=0x65, dqpn=0x000001, psn=0x0a0a0a,
                                             solicited=1),
                     ext=deth(0x80010000, 0xfedcba) + immdt(0xdeadbeef), payload=pattern(3, 5),
                     expect=dict(deth_qkey=0x80010000, deth_sqpn=0xfedcba, imm=0xdeadbeef)))
    # Variants the codec must also take: 802.1Q, IPv4 options, Ethernet
    # padding after the ICRC, a CNP from scapy's own helper.
    out.append(frame("rc_send_only_vlan", BTH(opcode=0x04, dqpn=0x0a0b0c, psn=0x000010),
                     payload=pattern(64, 6), vlan=(5 << 13) | 0x123))
    out.append(frame("rc_send_only_ip_options", BTH(opcode=0x04, dqpn=0x0a0b0c, psn=0x000011),
                     payload=pattern(6, 7), ip_opts=[IPOption_NOP(), IPOption_RR(routers=["10.9.8.7"])]))
    out.append(frame("rc_ack_eth_padding", BTH(opcode=0x11, dqpn=0x445566, psn=0x000012),
                     aeth=AETH(syndrome=0x00, msn=0x000001), eth_pad=10))
    c = cnp(0x00beef)
    out.append(frame("cnp", c, sport=0))
    return out


def run_tool(lines):
    r = subprocess.run([ROCE_TOOL, "parse"], input="".join(lines), capture_output=True,
                       text=True)
    if r.returncode != 0 or r.stderr.strip():
        print("scapy_check: roce_tool parse failed (%d): %s" % (r.returncode, r.stderr.strip()))
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


def compare(got, exp):
    bad = []
    for k, v in exp.items():
        if got.get(k, "<missing>") != v:
            bad.append("%s: scapy %r, roce_tool %r" % (k, v, got.get(k, "<missing>")))
    return bad


def main():
    print("scapy %s, RoCE layers in scapy.contrib.roce: %s" % (
        __import__("scapy").VERSION,
        ", ".join(n for n in ("BTH", "AETH", "RETH", "AtomicETH", "AtomicAckETH", "DETH",
                              "ImmDt", "IETH", "CNPPadding") if hasattr(roce, n))))
    missing = [n for n in ("RETH", "AtomicETH", "DETH", "ImmDt") if not hasattr(roce, n)]
    if missing:
        print("note: no scapy layer for %s: built as Raw bytes after the BTH/AETH"
              % ", ".join(missing))
    cs = cases()
    res = run_tool(["%s %s\n" % (n, b.hex()) for n, b, _ in cs])
    by_name = {r.get("name"): r for r in res}
    for name, b, exp in cs:
        got = by_name.get(name, {})
        bad = compare(got, exp)
        if got and not got.get("ok"):
            bad.insert(0, "dropped: %s" % got.get("drop"))
        check("scapy %-24s %4d B: %2d fields agree" % (name, len(b), len(exp)),
              got and not bad, bad or ["no output from roce_tool"])

    # The ICRC masks what routers change (A17.3.3): rewrite TOS, TTL, the UDP
    # checksum and FECN/BECN, keep scapy's ICRC: still accepted. A flipped
    # payload byte is not.
    name, b, exp = cs[0]
    p = Ether(b)
    icrc = p[BTH].icrc
    p[IP].tos, p[IP].ttl, p[IP].chksum = 0x03, 1, None
    p[UDP].chksum = 0x4242
    p[BTH].fecn, p[BTH].becn, p[BTH].icrc = 1, 1, icrc
    p[BTH].resv6 = 0x3f
    mutated = raw(p)
    bad_payload = bytearray(b)
    bad_payload[-6] ^= 0x01
    bad_bth = bytearray(b)
    bad_bth[14 + 20 + 8 + 3] ^= 0x01  # P_Key low byte: covered by the ICRC
    r = run_tool(["masked %s\n" % mutated.hex(), "payload %s\n" % bytes(bad_payload).hex(),
                  "pkey %s\n" % bytes(bad_bth).hex()])
    check("scapy TOS/TTL/UDP csum/FECN/BECN rewritten, same ICRC: accepted",
          len(r) == 3 and r[0].get("ok") and r[0].get("fecn") and r[0].get("becn")
          and r[0].get("hop_limit") == 1 and r[0].get("tclass") == 3,
          [json.dumps(r[0]) if r else "no output"])
    check("scapy payload byte flipped: dropped for icrc",
          len(r) == 3 and r[1].get("ok") is False and r[1].get("drop") == "icrc",
          [json.dumps(r[1]) if len(r) > 1 else "no output"])
    check("scapy P_Key bit flipped: dropped for icrc",
          len(r) == 3 and r[2].get("ok") is False and r[2].get("drop") == "icrc",
          [json.dumps(r[2]) if len(r) > 2 else "no output"])

    return check.summary("scapy")


if __name__ == "__main__":
    sys.exit(main())
