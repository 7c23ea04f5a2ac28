#!/usr/bin/python3
"""The codec's builder against tshark's RoCEv2 ("infiniband") dissector, and
its ICRC against an independent implementation.

1. `roce_tool build-all` writes every opcode x {IPv4, IPv6} x {untagged,
   VLAN 100} (+ a 1000-byte frame per family) to a pcap, and the values it
   built them from to a JSON-lines file.
2. tshark decodes the pcap: for every frame the Ethernet, VLAN, IP, UDP, BTH
   and extension header fields, and the payload, must be what was built; no
   frame may be malformed.
3. The ICRC of every frame is recomputed here with zlib.crc32 over the masked
   pseudo-header (IBA A17.3.3, as daemon/roce/icrc.h states it), written from the
   spec, not from the codec: it must equal the frame's last 4 bytes read
   little-endian.
4. `roce_tool parse` must accept every built frame and report what was built,
   the same with the frame split over 7-byte buffers, and accept the golden
   vectors (whose ICRCs, from real hardware and rxe, also check the Python
   ICRC here).

Environment: ROCE_TOOL, VECTORS; CODEC_TMP (a directory for the pcap; a
temporary one otherwise).
"""
import collections
import ipaddress
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

from codec_checks import Checks

ROCE_TOOL = os.environ.get("ROCE_TOOL") or sys.exit("tshark_check: set ROCE_TOOL")
VECTORS = os.environ.get("VECTORS") or sys.exit("tshark_check: set VECTORS")

check = Checks(width=3, cut=66, max_details=40)


# ---- an independent ICRC (IBA 1.4 Annex A17.3.3) ----

def icrc_of(frame):
    """(computed, stored, roce_len) for one Ethernet frame, or raises."""
    be16 = lambda o: struct.unpack_from("!H", frame, o)[0]
    off, etype = 14, be16(12)
    if etype == 0x8100:
        off, etype = 18, be16(16)
    if etype == 0x0800:
        ihl = (frame[off] & 0x0f) * 4
        end = off + be16(off + 2)
        ip = bytearray(frame[off:off + ihl])
        ip[1] = 0xff                    # TOS
        ip[8] = 0xff                    # TTL
        ip[10:12] = b"\xff\xff"         # header checksum
    elif etype == 0x86dd:
        ihl = 40
        end = off + 40 + be16(off + 4)
        ip = bytearray(frame[off:off + 40])
        ip[0] |= 0x0f                   # traffic class, high nibble
        ip[1:4] = b"\xff\xff\xff"       # traffic class low nibble, flow label
        ip[7] = 0xff                    # hop limit
    else:
        raise ValueError("ethertype 0x%04x" % etype)
    l4 = off + ihl
    udp = bytearray(frame[l4:l4 + 8])
    udp[6:8] = b"\xff\xff"              # UDP checksum
    bth = bytearray(frame[l4 + 8:l4 + 20])
    bth[4] = 0xff                       # FECN, BECN, resv6
    rest = frame[l4 + 20:end - 4]
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + rest) & 0xffffffff
    return crc, int.from_bytes(frame[end - 4:end], "little"), end


# ---- tshark's JSON ----

def num(s):
    if isinstance(s, list):
        s = s[0]
    return int(s, 16) if s.startswith("0x") else int(s)


def hexbytes(s):
    if isinstance(s, list):
        s = s[0]
    return s.replace(":", "")


def find(tree, key):
    """First value of key anywhere in a tshark JSON tree."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        for v in tree.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(tree, list):
        for v in tree:
            r = find(v, key)
            if r is not None:
                return r
    return None


class Cmp:
    """Collects mismatches between what was built and what someone read."""

    def __init__(self, who):
        self.who, self.bad, self.n = who, [], 0

    def eq(self, what, want, got):
        self.n += 1
        if want != got:
            cut = lambda v: repr(v) if len(repr(v)) < 100 else repr(v)[:96] + "..."
            self.bad.append("%s: built %s, %s %s" % (what, cut(want), self.who, cut(got)))

    def field(self, layers, key, want, conv=num):
        v = find(layers, key)
        if v is None:
            self.n += 1
            self.bad.append("%s: built %r, %s has no such field" % (key, want, self.who))
            return
        try:
            got = conv(v)
        except (ValueError, TypeError) as e:
            got = "%r (%s)" % (v, e)
        self.eq(key, want, got)


# The numeric extension header fields: the key that says a frame has the
# header, tshark's tree for it (None: infiniband's own), tshark's field for
# each key.
EXT_FIELDS = (
    ("reth_va", "infiniband.reth_tree", (("infiniband.reth.va", "reth_va"),
                                         ("infiniband.reth.r_key", "reth_rkey"),
                                         ("infiniband.reth.dmalen", "reth_len"))),
    ("aeth_syndrome", "infiniband.aeth_tree", (("infiniband.aeth.syndrome", "aeth_syndrome"),
                                               ("infiniband.aeth.msn", "aeth_msn"))),
    # tshark reuses RETH's fields for the AtomicETH's address and key
    ("atomic_va", "infiniband.atomiceth_tree", (("infiniband.reth.va", "atomic_va"),
                                                ("infiniband.reth.r_key", "atomic_rkey"),
                                                ("infiniband.atomiceth.swapdt", "atomic_swap_add"),
                                                ("infiniband.atomiceth.cmpdt", "atomic_compare"))),
    ("atomic_orig", None, (("infiniband.atomicacketh.origremdt", "atomic_orig"),)),
    ("deth_qkey", "infiniband.deth_tree", (("infiniband.deth.q_key", "deth_qkey"),
                                           ("infiniband.deth.srcqp", "deth_sqpn"))),
)


def check_tshark(e, layers):
    c = Cmp("tshark")
    protos = find(layers, "frame.protocols") or ""
    c.eq("frame.protocols has infiniband", True, ":infiniband" in protos)
    c.field(layers, "frame.len", e["len"])
    ib = layers.get("infiniband", {})
    c.field(layers, "eth.src", e["smac"], str)
    c.field(layers, "eth.dst", e["dmac"], str)
    if e["vlan"] >= 0:
        c.field(layers, "vlan.id", e["vlan"] & 0xfff)
        c.field(layers, "vlan.priority", e["vlan"] >> 13)
    else:
        c.eq("vlan layer", False, "vlan" in layers)
    l4 = 14 + (4 if e["vlan"] >= 0 else 0)
    if e["family"] == "ipv4":
        ip = layers.get("ip", {})
        c.field(ip, "ip.src", e["sgid"], str)
        c.field(ip, "ip.dst", e["dgid"], str)
        c.field(ip, "ip.dsfield", e["tclass"])
        c.field(ip, "ip.ttl", e["hop_limit"])
        c.field(ip, "ip.id", e["ip_id"])
        c.field(ip, "ip.flags.df", 1)
        c.field(ip, "ip.len", e["len"] - l4)
        c.field(ip, "ip.checksum.status", 1)        # Good (ip.check_checksum on)
        l4 += 20
    else:
        ip = layers.get("ipv6", {})
        c.field(ip, "ipv6.src", ipaddress.ip_address(e["sgid"]), ipaddress.ip_address)
        c.field(ip, "ipv6.dst", ipaddress.ip_address(e["dgid"]), ipaddress.ip_address)
        c.field(ip, "ipv6.tclass", e["tclass"])
        c.field(ip, "ipv6.flow", e["flow_label"])
        c.field(ip, "ipv6.hlim", e["hop_limit"])
        c.field(ip, "ipv6.nxt", 17)
        c.field(ip, "ipv6.plen", e["len"] - l4 - 40)
        l4 += 40
    udp = layers.get("udp", {})
    c.field(udp, "udp.srcport", e["sport"])
    c.field(udp, "udp.dstport", 4791)
    c.field(udp, "udp.length", e["len"] - l4)

    bth = ib.get("infiniband.bth_tree", {})
    c.field(bth, "infiniband.bth.opcode", e["opcode"])
    c.field(bth, "infiniband.bth.destqp", e["dqpn"])
    c.field(bth, "infiniband.bth.psn", e["psn"])
    c.field(bth, "infiniband.bth.padcnt", e["padcnt"])
    c.field(bth, "infiniband.bth.tver", 0)
    c.field(bth, "infiniband.bth.p_key", e["pkey"])
    c.field(bth, "infiniband.bth.se", int(e["se"]))
    c.field(bth, "infiniband.bth.m", int(e["mig"]))
    c.field(bth, "infiniband.bth.a", int(e["ackreq"]))
    c.field(bth, "infiniband.reserved", int(e["fecn"]) << 7 | int(e["becn"]) << 6,
            lambda v: int(hexbytes(v), 16))         # BTH byte 4: FECN BECN resv6
    if e["opcode"] == 0x81:
        # tshark 4.0 does not know the CNP opcode: it shows the 16 reserved
        # bytes and the ICRC as "vendor" data and no ICRC field.
        c.field(ib, "infiniband.vendor_tree", "00" * 16 + e["hex"][-8:],
                lambda v: hexbytes(v["infiniband.vendor"]))
        return c

    for key, tree, fields in EXT_FIELDS:
        if key in e:
            t = ib.get(tree, {}) if tree else ib
            for field, k in fields:
                c.field(t, field, e[k])
    if "imm" in e:
        c.field(ib, "infiniband.immdt", "%08x" % e["imm"], hexbytes)
    if "ieth_rkey" in e:
        c.field(ib, "infiniband.ieth", "%08x" % e["ieth_rkey"], hexbytes)
    # tshark reads the ICRC field big-endian: the stored value byte-swapped.
    c.field(ib, "infiniband.invariant.crc",
            struct.unpack("<I", struct.pack(">I", e["icrc"]))[0])
    # The payload goes to tshark's "data" dissector, pad bytes included.
    if e["payload_len"]:
        c.field(layers, "data.data", e["payload"] + "00" * e["padcnt"], hexbytes)
    else:
        c.eq("data layer", False, "data" in layers)
    return c


PARSE_KEYS = ("opcode", "opname", "vlan", "smac", "dmac", "sgid", "dgid", "sport", "tclass",
              "hop_limit", "flow_label", "ip_id", "se", "mig", "pkey", "fecn", "becn",
              "ackreq", "dqpn", "psn", "payload_len", "payload", "len", "icrc")
EXT_KEYS = ("reth_va", "reth_rkey", "reth_len", "aeth_syndrome", "aeth_msn", "atomic_va",
            "atomic_rkey", "atomic_swap_add", "atomic_compare", "atomic_orig", "deth_qkey",
            "deth_sqpn", "imm", "ieth_rkey")


def check_parse(e, p):
    c = Cmp("roce_tool parse")
    if p is None:
        c.eq("parse output", "a line", None)
        return c
    c.eq("ok", True, p.get("ok"))
    c.eq("drop", None, p.get("drop"))
    c.eq("ipv6", e["family"] == "ipv6", p.get("ipv6"))
    c.eq("pad", e["padcnt"], p.get("pad"))
    for k in PARSE_KEYS:
        c.eq(k, e[k], p.get(k))
    for k in EXT_KEYS:      # exactly the opcode's extension fields
        c.eq(k, e.get(k), p.get(k))
    return c


def tool(args, stdin=None):
    r = subprocess.run([ROCE_TOOL] + args, input=stdin, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def tshark(args):
    r = subprocess.run(["tshark", "-n"] + args, capture_output=True, text=True)
    err = "\n".join(x for x in r.stderr.splitlines() if "dangerous" not in x)
    return r.returncode, r.stdout, err


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, b in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(b), len(b)) + b)


def main(tmp):
    pcap, jsonl = os.path.join(tmp, "built.pcap"), os.path.join(tmp, "built.jsonl")
    rc, _, err = tool(["build-all", pcap, jsonl])
    exp = []
    if rc == 0 and os.path.exists(jsonl):
        with open(jsonl) as f:
            exp = [json.loads(x) for x in f if x.strip()]
    nops = len({e["opcode"] for e in exp})
    check("roce_tool build-all: %d frames, %d opcodes x 2 families x 2 tags + 2"
          % (len(exp), nops), rc == 0 and len(exp) == nops * 4 + 2 and nops > 30,
          [err.strip()])

    rc, out, err = tshark(["-o", "ip.check_checksum:TRUE", "-r", pcap, "-T", "json",
                           "--no-duplicate-keys"])
    pkts = json.loads(out) if rc == 0 and out.strip() else []
    check("tshark reads the pcap: %d frames" % len(pkts), rc == 0 and len(pkts) == len(exp),
          [err])

    rc, out, err = tshark(["-r", pcap, "-Y", "_ws.malformed", "-T", "fields",
                           "-e", "frame.number"])
    check("tshark: no frame is malformed (-Y _ws.malformed)", rc == 0 and not out.strip(),
          ["malformed frames: " + " ".join(out.split()), err])
    rc, out, err = tshark(["-o", "ip.check_checksum:TRUE", "-r", pcap, "-Y", "_ws.expert",
                           "-T", "fields", "-E", "separator=|", "-E", "occurrence=a",
                           "-E", "aggregator=;", "-e", "frame.number",
                           "-e", "_ws.expert.severity", "-e", "_ws.expert.message"])
    experts = collections.Counter()
    frames_by_msg = collections.defaultdict(set)
    for line in out.splitlines():
        fno, sev, msgs = (line.split("|") + ["", ""])[:3]
        sev_name = {"1048576": "comment", "2097152": "chat", "4194304": "note",
                    "6291456": "warn", "8388608": "error"}
        for s, m in zip(sev.split(";"), msgs.split(";")):
            key = "%s: %s" % (sev_name.get(s, s), m)
            experts[key] += 1
            frames_by_msg[key].add(int(fno) - 1)
    bad_expert = [k for k in experts if "alformed" in k]
    check("tshark: no expert info says malformed", rc == 0 and not bad_expert, bad_expert)
    for k, n in sorted(experts.items()):
        fams = collections.Counter(exp[i]["family"] for i in frames_by_msg[k] if i < len(exp))
        print("       note: tshark expert info on %d frames (%s): %s" % (
            n, ", ".join("%s %d" % x for x in sorted(fams.items())), k))

    rc, out, err = tool(["parse"], "".join("%s %s\n" % (e["opname"], e["hex"]) for e in exp))
    parsed = [json.loads(x) for x in out.splitlines() if x.strip()]
    check("roce_tool parse: one answer per built frame",
          rc == 0 and exp and len(parsed) == len(exp),
          [err.strip()])
    rc2, out2, err2 = tool(["parse", "--frag", "7"],
                           "".join("%s %s\n" % (e["opname"], e["hex"]) for e in exp))
    strip = lambda s: [{k: v for k, v in json.loads(x).items() if k != "nfrags"}
                       for x in s.splitlines() if x.strip()]
    check("roce_tool parse --frag 7 (chain of 7-byte buffers): same answers",
          rc2 == 0 and exp and strip(out2) == strip(out) and len(parsed) == len(exp),
          [err2.strip()] + ["first difference: %s / %s" % (a, b) for a, b in
                            zip(strip(out), strip(out2)) if a != b][:1])

    ncrc = 0
    for i, e in enumerate(exp):
        frame = bytes.fromhex(e["hex"])
        layers = pkts[i]["_source"]["layers"] if i < len(pkts) else {}
        t = check_tshark(e, layers)
        bad = list(t.bad)
        try:
            crc, stored, end = icrc_of(frame)
            if crc != stored or stored != e["icrc"] or end != len(frame):
                bad.append("ICRC: zlib 0x%08x, in frame 0x%08x, codec said 0x%08x, "
                           "end %d of %d" % (crc, stored, e["icrc"], end, len(frame)))
            else:
                ncrc += 1
        except (ValueError, IndexError, struct.error) as x:
            bad.append("ICRC: %s" % x)
        p = check_parse(e, parsed[i] if i < len(parsed) else None)
        bad += p.bad
        short = e["opname"].replace("_WITH_IMMEDIATE", "_IMM").replace(
            "_WITH_INVALIDATE", "_INV").replace("RDMA_", "")
        check("#%-3d %s %-4s %-24s tshark %2d, parse %2d, ICRC" % (
            i + 1, e["family"][-2:], "v%d" % e["vlan"] if e["vlan"] >= 0 else "-",
            short, t.n, p.n), not bad, bad)
    print("       note: zlib ICRC equals the stored ICRC on %d of %d built frames" % (
        ncrc, len(exp)))

    # Golden frames (real hardware, rxe): the codec accepts them, the Python
    # ICRC agrees with their stored ICRC, tshark sees the same header fields.
    golden = []
    with open(VECTORS) as f:
        for line in f:
            w = line.split()
            if w and not w[0].startswith("#"):
                golden.append((w[0], w[1], bytes.fromhex(w[-1])))
    rc, out, err = tool(["parse"], "".join("%s %s\n" % (n, b.hex()) for n, _, b in golden))
    gparsed = [json.loads(x) for x in out.splitlines() if x.strip()]
    gpcap = os.path.join(tmp, "golden.pcap")
    write_pcap(gpcap, [b for _, _, b in golden])
    _, gout, _ = tshark(["-r", gpcap, "-T", "json", "--no-duplicate-keys"])
    gpkts = json.loads(gout) if gout.strip() else []
    check("golden vectors: %d frames, %d parsed" % (len(golden), len(gparsed)),
          golden and len(gparsed) == len(golden) and len(gpkts) == len(golden), [err])
    for i, (name, src, b) in enumerate(golden):
        p = gparsed[i] if i < len(gparsed) else {}
        bad = [] if p.get("ok") else ["roce_tool: %s" % json.dumps(p)]
        crc, stored, _ = icrc_of(b)
        if crc != stored or p.get("icrc") != stored:
            bad.append("ICRC: zlib 0x%08x, stored 0x%08x, roce_tool %r" % (crc, stored,
                                                                            p.get("icrc")))
        bt = find(gpkts[i]["_source"]["layers"], "infiniband.bth_tree") if i < len(gpkts) else None
        if not bt:
            bad.append("tshark: no BTH")
        else:
            for k, key in (("opcode", "infiniband.bth.opcode"), ("dqpn", "infiniband.bth.destqp"),
                           ("psn", "infiniband.bth.psn"), ("pad", "infiniband.bth.padcnt")):
                if num(bt[key]) != p.get(k):
                    bad.append("%s: tshark %s, roce_tool %r" % (k, bt[key], p.get(k)))
        check("golden %s (%s): parse, ICRC, tshark" % (name, src), 
              not bad, bad)

    return check.summary("tshark")


if __name__ == "__main__":
    d = os.environ.get("CODEC_TMP")
    if d:
        sys.exit(main(d))
    d = tempfile.mkdtemp(prefix="tshark_check.")
    try:
        sys.exit(main(d))
    finally:
        shutil.rmtree(d, ignore_errors=True)
