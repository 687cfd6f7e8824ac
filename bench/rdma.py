#!/usr/bin/env python3
"""Braid over its ib transport on Soft-RoCE, against perftest and against Braid over TCP, in one
qemu guest (tests/rdma/guest.sh): SendRecv and AllReduce, 2 ranks, against ib_write_bw and
ib_send_bw at the same sizes. Software emulation (TCG, rxe computing every packet's CRC on the
CPU) makes absolute figures meaningless; the ratios, measured in one guest run, are the point.

    python3 bench/rdma.py [--sizes 64K,256K,1M,4M,16M,64M] [--two-guests]
                          [--out bench/results/rdma_softroce.md]

Needs tools/setup.sh --rdma and a built tree (build/release).
"""
import argparse
import datetime
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "release")


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def label(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}iB"
    return f"{n} B"


def guest_script(sizes):
    """The commands the guest runs: each section starts with a '=== name size' line."""
    perf = os.path.join(BUILD, "bench", "perf")
    braidrun = os.path.join(BUILD, "tools", "braidrun")
    lines = ["set -u", "port=18600"]
    for size in sizes:
        # About 64 MiB moved per run (at least 10 messages), so small and large sizes take alike.
        iters = max(10, (64 << 20) // size)
        for tool in ("ib_write_bw", "ib_send_bw"):
            lines += [
                "port=$((port + 1))",
                f"echo '=== {tool} {size}'",
                f"{tool} -d rxe0 -x 1 -s {size} -n {iters} -p $port -F >/dev/null 2>&1 & srv=$!",
                "for i in $(seq 50); do",
                f"  out=$({tool} -d rxe0 -x 1 -s {size} -n {iters} -p $port -F $GUEST_ADDR 2>&1)"
                " && break; sleep 0.2; done",
                'echo "$out"; wait $srv',
            ]
    lo, hi = sizes[0], sizes[-1]
    # "ib R1": buffers from ncclMemAlloc, registered with the communicator (nccl-tests' -R 1), so
    # the ib transport writes between them in place.
    for transport, register in (("ib", 0), ("ib", 1), ("tcp", 0)):
        for binary in ("sendrecv_perf", "all_reduce_perf"):
            name = f"{binary} {transport}" + (" R1" if register else "")
            lines += [
                f"echo '=== {name}'",
                f"BRAID_TRANSPORTS={transport} NCCL_SOCKET_IFNAME=lo {braidrun} -np 2 --no-prefix "
                f"{perf}/{binary} -b {lo} -e {hi} -f 4 -n 5 -w 1 -c 1 -R {register} 2>&1 "
                "| grep -v INFO",
            ]
    return "\n".join(lines)


def two_guest_script(sizes):
    """Rank i in guest i, so every byte crosses the guests' virtual wire: Braid over ib (plain and
    registered buffers) and over tcp, the same binaries and sizes. Guest 0's lines come back
    prefixed "[0] "."""
    perf = os.path.join(BUILD, "bench", "perf")
    lo, hi = sizes[0], sizes[-1]
    lines = ["set -u"]
    port = 29600
    for transport, register in (("ib", 0), ("ib", 1), ("tcp", 0)):
        for binary in ("sendrecv_perf", "all_reduce_perf"):
            port += 1
            name = f"{binary} {transport}" + (" R1" if register else "")
            lines += [
                f"echo '=== {name}'",
                f"RANK=$GUEST_INDEX WORLD_SIZE=2 NCCL_COMM_ID=10.77.0.1:{port} "
                f"NCCL_SOCKET_IFNAME=eth0 BRAID_TRANSPORTS={transport} NCCL_SHM_DISABLE=1 "
                f"{perf}/{binary} -b {lo} -e {hi} -f 4 -n 5 -w 1 -c 1 -R {register} 2>&1 "
                "| grep -v INFO || true",  # rank 1 prints nothing: grep finds no line
            ]
    return "\n".join(lines)


def sections(text):
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r"^=== (.*)$", line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return out


def perftest_mbs(lines, size):
    """ib_*_bw's average bandwidth (MB/s) on its result line for `size`."""
    for line in lines:
        f = line.split()
        if len(f) >= 4 and f[0] == str(size):
            return float(f[3])
    return None


def nccl_busbw(lines):
    """size -> out-of-place algbw in MB/s, from the time column (nccl-tests columns: size count
    type redop root time algbw busbw #wrong ...; algbw itself has two decimals of GB/s), and
    whether any #wrong was non-zero."""
    rates, wrong = {}, False
    for line in lines:
        f = line.split()
        if len(f) >= 13 and f[0].isdigit():
            rates[int(f[0])] = int(f[0]) / float(f[5])  # bytes per us = MB/s
            wrong |= f[8] != "0" or f[12] != "0"
    return rates, wrong


def fail(run, what, out):
    """Stops, keeping the whole output of the failed guest run beside `out` (a run takes long)."""
    with open(out + ".failed.log", "w") as fh:
        fh.write(run.stdout + run.stderr)
    sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
    sys.exit(f"{what} exited with {run.returncode}; its output is in {out}.failed.log")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="64K,256K,1M,4M,16M,64M")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "rdma_softroce.md"))
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--two-guests", action="store_true",
                    help="also run Braid with one rank in each of two guests (ib and tcp across "
                         "the guests' virtual wire) and add that table")
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    cmd = ["bash", os.path.join(ROOT, "tests", "rdma", "guest.sh"), "--timeout",
           str(args.timeout), "--", "bash", "-c", guest_script(sizes)]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if run.returncode != 0:
        fail(run, "guest.sh", args.out)
    s = sections(run.stdout)
    two = None
    if args.two_guests:
        cmd = ["bash", os.path.join(ROOT, "tests", "rdma", "guest.sh"), "--guests", "2",
               "--timeout", str(args.timeout), "--", "bash", "-c", two_guest_script(sizes)]
        run2 = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if run2.returncode != 0:
            fail(run2, "guest.sh --guests 2", args.out)
        mine = "\n".join(l[4:] for l in run2.stdout.splitlines() if l.startswith("[0] "))
        two = sections(mine)
    braid = {f"{b} {t}": nccl_busbw(s.get(f"{b} {t}", []))
             for b in ("sendrecv_perf", "all_reduce_perf") for t in ("ib", "ib R1", "tcp")}
    wrong = [k for k, (_, w) in braid.items() if w]

    def cell(v):
        return "-" if v is None else f"{v:.1f}"

    def ratio(a, b):
        return "-" if a is None or not b else f"{a / b:.2f}"

    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         cwd=ROOT).stdout.strip()
    rows = []
    for size in sizes:
        wbw = perftest_mbs(s.get(f"ib_write_bw {size}", []), size)
        sbw = perftest_mbs(s.get(f"ib_send_bw {size}", []), size)
        sr = {t: braid[f"sendrecv_perf {t}"][0].get(size) for t in ("ib", "ib R1", "tcp")}
        ar = {t: braid[f"all_reduce_perf {t}"][0].get(size) for t in ("ib", "ib R1", "tcp")}
        rows.append(f"| {label(size)} | {cell(wbw)} | {cell(sbw)} | {cell(sr['ib'])} | "
                    f"{ratio(sr['ib'], wbw)} | {cell(sr['ib R1'])} | {ratio(sr['ib R1'], wbw)} | "
                    f"{cell(sr['tcp'])} | {cell(ar['ib'])} | {cell(ar['ib R1'])} | "
                    f"{cell(ar['tcp'])} | {ratio(ar['ib'], ar['tcp'])} | "
                    f"{ratio(ar['ib R1'], ar['tcp'])} |")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = f"""# Braid over ib on Soft-RoCE, against perftest and against Braid over TCP

`python3 bench/rdma.py --sizes {args.sizes}{" --two-guests" if args.two_guests else ""}`

{now}; git {rev}

One qemu guest (TCG, 2 vCPUs; tests/rdma/guest.sh) with rxe0 on its eth0; 2 ranks (braidrun -np 2),
the same guest and run for every column. Braid: out-of-place algbw of `sendrecv_perf` and
`all_reduce_perf` (-n 5 -w 1, every result checked), `BRAID_TRANSPORTS=ib` or `tcp` (loopback
inside the guest); "reg." columns with `-R 1` (buffers from ncclMemAlloc, registered with
ncclCommRegister: the ib transport writes between them in place). perftest: `ib_write_bw` /
`ib_send_bw -F` average bandwidth, about 64 MiB per size. MB/s; software emulation makes them
meaningless in absolute terms, only the ratios count.

| size | ib_write_bw | ib_send_bw | SendRecv ib | / ib_write_bw | SendRecv ib reg. | / ib_write_bw | SendRecv tcp | AllReduce ib | AllReduce ib reg. | AllReduce tcp | AllReduce ib / tcp | ib reg. / tcp |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + f"""

Results checked by the perf binaries: {"wrong results in " + ", ".join(wrong) if wrong else "0 wrong everywhere"}.
"""
    if two is not None:
        tb = {f"{b} {t}": nccl_busbw(two.get(f"{b} {t}", []))
              for b in ("sendrecv_perf", "all_reduce_perf") for t in ("ib", "ib R1", "tcp")}
        wrong2 = [k for k, (_, w) in tb.items() if w]
        rows2 = []
        for size in sizes:
            sr = {t: tb[f"sendrecv_perf {t}"][0].get(size) for t in ("ib", "ib R1", "tcp")}
            ar = {t: tb[f"all_reduce_perf {t}"][0].get(size) for t in ("ib", "ib R1", "tcp")}
            rows2.append(f"| {label(size)} | {cell(sr['ib'])} | {cell(sr['ib R1'])} | "
                         f"{cell(sr['tcp'])} | {cell(ar['ib'])} | {cell(ar['ib R1'])} | "
                         f"{cell(ar['tcp'])} | {ratio(ar['ib'], ar['tcp'])} | "
                         f"{ratio(ar['ib R1'], ar['tcp'])} |")
        text += f"""
## Two guests

The same run: rank i in guest i (tests/rdma/guest.sh
--guests 2, eth0s joined by a qemu stream socket), so ib's RoCEv2 packets and tcp's segments
cross the same virtual wire; the same binaries and options as above, NCCL_SHM_DISABLE=1. MB/s
(out-of-place algbw, guest 0's rows).

| size | SendRecv ib | SendRecv ib reg. | SendRecv tcp | AllReduce ib | AllReduce ib reg. | AllReduce tcp | AllReduce ib / tcp | ib reg. / tcp |
|---|---|---|---|---|---|---|---|---|
""" + "\n".join(rows2) + f"""

Results checked by the perf binaries: {"wrong results in " + ", ".join(wrong2) if wrong2 else "0 wrong everywhere"}.
"""
    with open(args.out, "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
