#!/usr/bin/env python3
"""gloo_allreduce_perf: torch.distributed all_reduce on the "gloo" backend (float, sum), printed
in all_reduce_perf's columns: the Gloo baseline for bench/compare.py.

Under a launcher (braidrun, torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) each
process is one rank. Without one, --np N starts N copies of itself on 127.0.0.1.

torch's all_reduce works in place, so "out-of-place" here is what a PyTorch user writes for it:
copy the input into the output tensor, then reduce that in place.
"""
import argparse
import os
import socket
import subprocess
import sys
import time


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in mult:
        return int(round(float(t[:-1]) * mult[t[-1]]))
    return int(round(float(t)))


def sizes(args):
    s = args.minbytes
    while s <= args.maxbytes:
        yield s
        nxt = int(s * args.stepfactor) if args.stepfactor > 1 else s + args.stepbytes
        if nxt <= s:
            return
        s = nxt


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn(np_):
    """Runs np_ copies of this script as ranks; returns the worst exit code."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(np_))
    argv = [a for a in sys.argv[1:]]
    procs = []
    for r in range(np_):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        out = None if r == 0 else subprocess.DEVNULL
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv + ["--np", "0"],
                                      env=e, stdout=out))
    codes = []
    for p in procs:
        codes.append(p.wait())
        if codes[-1] != 0:  # a dead rank leaves the others blocked in the collective
            for q in procs:
                if q.poll() is None:
                    q.terminate()
    return max((abs(c) for c in codes), default=0)


def fmt_time(us):
    return f"{us:.2f}" if us < 1e4 else f"{us:.1f}" if us < 1e6 else f"{us:.0f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-b", "--minbytes", type=parse_size, default=32 << 20)
    ap.add_argument("-e", "--maxbytes", type=parse_size, default=32 << 20)
    ap.add_argument("-i", "--stepbytes", type=parse_size, default=1 << 20)
    ap.add_argument("-f", "--stepfactor", type=float, default=0)
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-w", "--warmup_iters", type=int, default=5)
    ap.add_argument("-c", "--check", type=int, default=1)
    ap.add_argument("--np", type=int, default=None, help="start this many ranks (when no launcher set RANK)")
    args = ap.parse_args()

    if args.np and args.np > 0 and "RANK" not in os.environ:
        return spawn(args.np)
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))

    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"gloo_allreduce_perf: torch is not available: {e}", file=sys.stderr)
        return 3
    if not dist.is_available() or not dist.is_gloo_available():
        print("gloo_allreduce_perf: this torch has no gloo backend", file=sys.stderr)
        return 3
    torch.set_num_threads(1)  # ranks share the cores; gloo's own threads do the work
    dist.init_process_group("gloo", init_method="env://")
    rank, n = dist.get_rank(), dist.get_world_size()

    def mean_seconds(fn, iters):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sec = (time.perf_counter() - t0) / iters if iters else 0.0
        t = torch.tensor([sec], dtype=torch.float64)
        dist.all_reduce(t)
        return t.item() / n

    maxcount = args.maxbytes // 4
    idx = torch.arange(maxcount, dtype=torch.int64)
    # small integers: sums over any number of ranks are exact in float
    send_all = ((idx * 7 + rank * 3) % 10).to(torch.float32)
    expect_all = sum(((idx * 7 + r * 3) % 10) for r in range(n)).to(torch.float32) if args.check else None
    recv_all = torch.empty(maxcount, dtype=torch.float32)

    if rank == 0:
        print("# Collective test starting: gloo_allreduce_perf")
        print(f"# torch {torch.__version__}, torch.distributed backend gloo")
        print(f"# nProcs {n} minBytes {args.minbytes} maxBytes {args.maxbytes} warmup iters: "
              f"{args.warmup_iters} iters: {args.iters} validation: {args.check}\n#")
        place = "  {:>8}  {:>7}  {:>7}  {:>6}"
        print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>36}  {:>36}".format("", "", "", "", "", "out-of-place", "in-place"))
        print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}".format("size", "count", "type", "redop", "root")
              + place.format("time", "algbw", "busbw", "#wrong") * 2)
        print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}".format("(B)", "(elements)", "", "", "")
              + place.format("(us)", "(GB/s)", "(GB/s)", "") * 2, flush=True)

    if args.warmup_iters:
        mean_seconds(lambda: dist.all_reduce(recv_all), args.warmup_iters)
    total_wrong, busbw_sum, rows = 0, 0.0, 0
    for nbytes in sizes(args):
        count = nbytes // 4
        send, recv = send_all[:count], recv_all[:count]

        def out_of_place():
            recv.copy_(send)
            dist.all_reduce(recv)

        recv.copy_(send)
        results = []
        for op in (out_of_place, lambda: dist.all_reduce(recv)):
            sec = mean_seconds(op, args.iters)
            wrong = 0
            if args.check:
                recv.copy_(send)
                dist.all_reduce(recv)
                w = torch.tensor([int((recv != expect_all[:count]).sum().item())], dtype=torch.int64)
                dist.all_reduce(w)
                wrong = int(w.item())
            results.append((sec, wrong))
            recv.copy_(send)
        if rank == 0:
            line = f"{count * 4:12d}  {count:12d}  {'float':>8}  {'sum':>6}  {-1:6d}"
            for sec, wrong in results:
                algbw = count * 4 / 1e9 / sec if sec > 0 else 0.0
                busbw = algbw * 2 * (n - 1) / n
                busbw_sum += busbw
                rows += 1
                line += f"  {fmt_time(sec * 1e6):>8}  {algbw:7.2f}  {busbw:7.2f}  {wrong if args.check else 'N/A':>6}"
            print(line, flush=True)
        total_wrong += sum(w for _, w in results)
    if rank == 0:
        print(f"# Out of bounds values : {total_wrong} {'FAILED' if total_wrong else 'OK'}")
        print(f"# Avg bus bandwidth    : {busbw_sum / rows if rows else 0:g} \n#", flush=True)
    dist.destroy_process_group()
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
