#!/usr/bin/env python3
"""Braid over its ib transport on Soft-RoCE, against perftest and against Braid over TCP, in one
qemu guest (tests/rdma/guest.sh): SendRecv and AllReduce, 2 ranks, against ib_write_bw and
ib_send_bw at the same sizes. Software emulation (TCG, rxe computing every packet's CRC on the
CPU) makes absolute figures meaningless; the ratios, measured in one guest run, are the point.

    python3 bench/rdma.py [--sizes 64K,256K,1M,4M,16M,64M] [--out bench/results/rdma_softroce.md]

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
    for transport in ("ib", "tcp"):
        for binary in ("sendrecv_perf", "all_reduce_perf"):
            lines += [
                f"echo '=== {binary} {transport}'",
                f"BRAID_TRANSPORTS={transport} NCCL_SOCKET_IFNAME=lo {braidrun} -np 2 --no-prefix "
                f"{perf}/{binary} -b {lo} -e {hi} -f 4 -n 5 -w 1 -c 1 2>&1 | grep -v INFO",
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="64K,256K,1M,4M,16M,64M")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "rdma_softroce.md"))
    ap.add_argument("--timeout", type=int, default=1800)
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    cmd = ["bash", os.path.join(ROOT, "tests", "rdma", "guest.sh"), "--timeout",
           str(args.timeout), "--", "bash", "-c", guest_script(sizes)]
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
        sys.exit(f"guest.sh exited with {run.returncode}")
    s = sections(run.stdout)
    braid = {k: nccl_busbw(s.get(k, [])) for k in
             ("sendrecv_perf ib", "sendrecv_perf tcp", "all_reduce_perf ib", "all_reduce_perf tcp")}
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
        sr_ib = braid["sendrecv_perf ib"][0].get(size)
        sr_tcp = braid["sendrecv_perf tcp"][0].get(size)
        ar_ib = braid["all_reduce_perf ib"][0].get(size)
        ar_tcp = braid["all_reduce_perf tcp"][0].get(size)
        rows.append(f"| {label(size)} | {cell(wbw)} | {cell(sbw)} | {cell(sr_ib)} | "
                    f"{ratio(sr_ib, wbw)} | {cell(sr_tcp)} | {cell(ar_ib)} | {cell(ar_tcp)} | "
                    f"{ratio(ar_ib, ar_tcp)} |")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = f"""# Braid over ib on Soft-RoCE, against perftest and against Braid over TCP

`python3 bench/rdma.py --sizes {args.sizes}`

{now}; git {rev}

One qemu guest (TCG, 2 vCPUs; tests/rdma/guest.sh) with rxe0 on its eth0; 2 ranks (braidrun -np 2),
the same guest and run for every column. Braid: out-of-place algbw of `sendrecv_perf` and
`all_reduce_perf` (-n 5 -w 1, every result checked), `BRAID_TRANSPORTS=ib` or `tcp` (loopback
inside the guest). perftest: `ib_write_bw` / `ib_send_bw -F` average bandwidth, about 64 MiB per
size. MB/s; software emulation makes them meaningless in absolute terms, only the ratios count.

| size | ib_write_bw | ib_send_bw | Braid SendRecv ib | / ib_write_bw | Braid SendRecv tcp | Braid AllReduce ib | Braid AllReduce tcp | AllReduce ib / tcp |
|---|---|---|---|---|---|---|---|---|
""" + "\n".join(rows) + f"""

Results checked by the perf binaries: {"wrong results in " + ", ".join(wrong) if wrong else "0 wrong everywhere"}.
"""
    with open(args.out, "w") as fh:
        fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
