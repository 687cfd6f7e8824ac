#!/usr/bin/env python3
"""gloo_coll_perf: one torch.distributed collective on the "gloo" backend (float; sum where it
reduces), printed in the columns of bench/perf's binaries with their size convention and busbw
formulas: the Gloo baseline bench/compare.py sets beside Braid for every collective.

  --coll allreduce      all_reduce  --coll allgather      all_gather_into_tensor (all_gather into views where gloo lacks it)
  --coll reducescatter  reduce_scatter_tensor, where this torch's gloo has it
  --coll broadcast      broadcast            --coll reduce    reduce
  --coll alltoall       all_to_all_single    --coll gather    gather    --coll scatter  scatter
  --coll sendrecv       isend to rank+1 and irecv from rank-1, together

A collective this torch's gloo does not implement prints why and exits with code 3 ("not
available" to compare.py). In place: where torch has two buffers, the input is the rank's own
block of the output (AllGather, Gather) or the output the rank's block of the input
(ReduceScatter, Scatter's root), as NCCL defines it; broadcast and reduce work in place only, so
their out-of-place column copies the input into the output first (so does all_reduce: that is
what a PyTorch user writes for an out-of-place AllReduce);
all_to_all_single and send/recv have no in-place form, so that column copies the buffer aside and
receives into it.

Under a launcher (braidrun, torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) each
process is one rank; without one, --np N starts N copies of this script on 127.0.0.1. Gloo
picks its interface from GLOO_SOCKET_IFNAME, else from the hostname's address; without it,
the interfaces NCCL_SOCKET_IFNAME names (tools/netcluster sets it to each emulated host's own)
are given to gloo.
"""
import argparse
import os
import socket
import subprocess
import sys
import time

from gloo_common import fmt_time, free_port, parse_size, sizes

# name -> (reduces, rooted, split, busbw factor); split: the size is n blocks, the count one block
COLLS = {
    "allreduce": (True, False, False, lambda n: 2 * (n - 1) / n),
    "allgather": (False, False, True, lambda n: (n - 1) / n),
    "reducescatter": (True, False, True, lambda n: (n - 1) / n),
    "broadcast": (False, True, False, lambda n: 1.0),
    "reduce": (True, True, False, lambda n: 1.0),
    "alltoall": (False, False, True, lambda n: (n - 1) / n),
    "gather": (False, True, True, lambda n: (n - 1) / n),
    "scatter": (False, True, True, lambda n: (n - 1) / n),
    "sendrecv": (False, False, False, lambda n: 1.0),
}


def spawn(np_):
    """Runs np_ copies of this script as ranks; returns the worst exit code."""
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(np_))
    procs = []
    for r in range(np_):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        out = None if r == 0 else subprocess.DEVNULL
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:] + ["--np", "0"],
                                      env=e, stdout=out))
    codes = []
    for p in procs:
        codes.append(p.wait())
        if codes[-1] != 0:  # a dead rank leaves the others blocked in the collective
            for q in procs:
                try:
                    q.wait(timeout=10)  # ranks failing a check all exit 1 on their own
                except subprocess.TimeoutExpired:
                    q.terminate()
    return max((abs(c) for c in codes), default=0)


class Bench:
    """Buffers and calls of one collective; plan() gives one row's prepare/call/check."""

    def __init__(self, torch, dist, coll, rank, n, root, maxbytes):
        self.torch, self.dist, self.coll = torch, dist, coll
        self.rank, self.n, self.root = rank, n, root
        self.reduces, self.rooted, self.split, self.factor = COLLS[coll]
        count = maxbytes // 4
        self.idx = torch.arange(count, dtype=torch.int64)
        self.send = torch.zeros(count, dtype=torch.float32)
        self.recv = torch.zeros(count, dtype=torch.float32)
        self.aside = torch.zeros(count, dtype=torch.float32)
        self.gather_api = "all_gather_into_tensor"

    # Reductions: small integers whose sums are exact in float. Moved data: values that differ
    # between ranks and neighbouring elements, so a misplaced block shows.
    def value(self, rank, start, length):
        i = self.idx[start:start + length]
        if self.reduces:
            return ((i * 7 + rank * 3) % 10).to(self.torch.float32)
        return ((i * 7 + rank * 13 + 1) % 251).to(self.torch.float32)

    def reduced(self, start, length):
        return sum(self.value(r, start, length) for r in range(self.n))

    def block(self, c):
        return c if not self.split else c // self.n

    def plan(self, nbytes, in_place):
        """(size bytes, count, prepare, call, result tensor or None, expected)."""
        size, count, prepare, call, result, expect = self._plan(nbytes, in_place)
        # Rows below one element per block move nothing; gloo refuses some empty tensors.
        return size, count, prepare, (call if size else (lambda: None)), result, expect

    def _plan(self, nbytes, in_place):
        t, d, n, me, root = self.torch, self.dist, self.n, self.rank, self.root
        c = self.block(nbytes // 4)
        S, R = self.send, self.recv
        nan = float("nan")
        coll = self.coll

        def reset(*bufs):
            for b in bufs:
                b.fill_(nan)

        if coll == "allgather":
            out, inp = R[:c * n], (R[me * c:(me + 1) * c] if in_place else S[:c])

            def prepare():
                reset(out)
                inp.copy_(self.value(me, 0, c))
            call = lambda: self.allgather(out, inp, c)
            expect = t.cat([self.value(r, 0, c) for r in range(n)]) if c else out[:0]
            return c * n * 4, c, prepare, call, out, expect
        if coll == "reducescatter":
            inp = R[:c * n] if in_place else S[:c * n]
            out = R[me * c:(me + 1) * c] if in_place else R[:c]

            def prepare():
                reset(R[:c * n])
                inp.copy_(self.value(me, 0, c * n))
            call = lambda: d.reduce_scatter_tensor(out, inp)
            return c * n * 4, c, prepare, call, out, self.reduced(me * c, c)
        if coll in ("allreduce", "broadcast", "reduce"):
            buf = R[:c]

            def prepare():
                reset(buf)
                (buf if in_place else S[:c]).copy_(self.value(me, 0, c))
            op = {"allreduce": lambda: d.all_reduce(buf), "broadcast": lambda: d.broadcast(buf, src=root),
                  "reduce": lambda: d.reduce(buf, dst=root)}[coll]
            call = op if in_place else (lambda: (buf.copy_(S[:c]), op()))
            if coll == "allreduce":
                return c * 4, c, prepare, call, buf, self.reduced(0, c)
            if coll == "broadcast":
                return c * 4, c, prepare, call, buf, self.value(root, 0, c)
            return c * 4, c, prepare, call, (buf if me == root else None), self.reduced(0, c)
        if coll in ("alltoall", "sendrecv"):
            length = c * n if coll == "alltoall" else c
            out, inp = R[:length], (self.aside[:length] if in_place else S[:length])

            def prepare():
                reset(out)
                (out if in_place else inp).copy_(self.value(me, 0, length))
            op = (lambda: d.all_to_all_single(out, inp)) if coll == "alltoall" else (lambda: self.sendrecv(out, inp))
            call = (lambda: (inp.copy_(out), op())) if in_place else op
            if coll == "alltoall":
                expect = t.cat([self.value(r, me * c, c) for r in range(n)]) if c else out[:0]
            else:
                expect = self.value((me - 1) % n, 0, c)
            return length * 4, c, prepare, call, out, expect
        if coll == "gather":
            out, inp = R[:c * n], (R[me * c:(me + 1) * c] if in_place else S[:c])
            views = list(out.split(c)) if c else [out[:0]] * n

            def prepare():
                reset(out)
                inp.copy_(self.value(me, 0, c))
            call = lambda: d.gather(inp, gather_list=views if me == root else None, dst=root)
            expect = t.cat([self.value(r, 0, c) for r in range(n)]) if c else out[:0]
            return c * n * 4, c, prepare, call, (out if me == root else None), expect
        if coll == "scatter":
            full = R[:c * n] if in_place else S[:c * n]
            out = R[me * c:(me + 1) * c] if in_place and me == root else R[:c]
            views = list(full.split(c)) if c else [full[:0]] * n

            def prepare():
                reset(R[:c * n])
                if me == root:
                    full.copy_(self.value(me, 0, c * n))
            call = lambda: d.scatter(out, scatter_list=views if me == root else None, src=root)
            return c * n * 4, c, prepare, call, out, self.value(root, me * c, c)
        raise ValueError(coll)

    def allgather(self, out, inp, c):
        if self.gather_api == "all_gather_into_tensor":
            self.dist.all_gather_into_tensor(out, inp)
        else:
            self.dist.all_gather(list(out.split(c)) if c else [out[:0]] * self.n, inp)

    def sendrecv(self, out, inp):
        n, me = self.n, self.rank
        reqs = [self.dist.isend(inp, (me + 1) % n), self.dist.irecv(out, (me - 1) % n)]
        for r in reqs:
            r.wait()

    def probe(self):
        """Runs one small call of each form; returns None, or why this gloo cannot."""
        for in_place in (False, True):
            try:
                _, _, prepare, call, _, _ = self.plan(4 * self.n * 4, in_place)
                prepare()
                call()
            except (RuntimeError, AttributeError, ValueError, NotImplementedError) as e:
                if self.coll == "allgather" and self.gather_api == "all_gather_into_tensor":
                    self.gather_api = "all_gather"  # older gloo: the list form into views
                    return self.probe()
                return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return None


def gloo_ifname(nccl_if):
    """NCCL_SOCKET_IFNAME as GLOO_SOCKET_IFNAME, which takes exact names: NCCL's entries are
    prefixes ("eth": eth0, eth1, ...), or exact names after "="; None for an exclusion ("^...")
    or where no interface matches."""
    if not nccl_if or nccl_if.startswith("^"):
        return None
    exact, wanted = nccl_if.startswith("="), nccl_if.lstrip("=").split(",")
    names = [name for _, name in socket.if_nameindex()]
    found = [n for n in names if any(n == w if exact else n.startswith(w) for w in wanted if w)]
    return ",".join(found) or None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-C", "--coll", choices=sorted(COLLS), required=True)
    ap.add_argument("-b", "--minbytes", type=parse_size, default=32 << 20)
    ap.add_argument("-e", "--maxbytes", type=parse_size, default=32 << 20)
    ap.add_argument("-i", "--stepbytes", type=parse_size, default=1 << 20)
    ap.add_argument("-f", "--stepfactor", type=float, default=0)
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-w", "--warmup_iters", type=int, default=5)
    ap.add_argument("-c", "--check", type=int, default=1)
    ap.add_argument("-r", "--root", type=int, default=0)
    ap.add_argument("--np", type=int, default=None, help="start this many ranks (when no launcher set RANK)")
    args = ap.parse_args()

    if args.np and args.np > 0 and "RANK" not in os.environ:
        return spawn(args.np)
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))

    if "GLOO_SOCKET_IFNAME" not in os.environ:
        gloo_if = gloo_ifname(os.environ.get("NCCL_SOCKET_IFNAME", ""))
        if gloo_if:
            os.environ["GLOO_SOCKET_IFNAME"] = gloo_if
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        print(f"gloo_coll_perf: torch is not available: {e}", file=sys.stderr)
        return 3
    if not dist.is_available() or not dist.is_gloo_available():
        print("gloo_coll_perf: this torch has no gloo backend", file=sys.stderr)
        return 3
    torch.set_num_threads(1)  # ranks share the cores; gloo's own threads do the work
    dist.init_process_group("gloo", init_method="env://")
    rank, n = dist.get_rank(), dist.get_world_size()
    if args.root >= n:
        print(f"gloo_coll_perf: root {args.root} is not below the rank count {n}", file=sys.stderr)
        return 2
    bench = Bench(torch, dist, args.coll, rank, n, args.root if COLLS[args.coll][1] else -1,
                  max(args.maxbytes, 16 * n * 4))
    why = bench.probe()
    if why:
        if rank == 0:
            print(f"gloo_coll_perf: {args.coll} is not available on this torch's gloo ({why})", file=sys.stderr)
        return 3  # no teardown: the other ranks may be stuck in the failed call

    def mean_seconds(fn, iters):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sec = (time.perf_counter() - t0) / iters if iters else 0.0
        t = torch.tensor([sec], dtype=torch.float64)
        dist.all_reduce(t)
        return t.item() / n

    if rank == 0:
        api = f" ({bench.gather_api})" if args.coll == "allgather" else ""
        print(f"# Collective test starting: gloo_coll_perf --coll {args.coll}{api}")
        where = os.environ.get("GLOO_SOCKET_IFNAME")
        print(f"# torch {torch.__version__}, torch.distributed backend gloo"
              + (f", GLOO_SOCKET_IFNAME {where}" if where else ""))
        print(f"# nProcs {n} minBytes {args.minbytes} maxBytes {args.maxbytes} warmup iters: "
              f"{args.warmup_iters} iters: {args.iters} validation: {args.check}\n#")
        place = "  {:>8}  {:>7}  {:>7}  {:>6}"
        print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>36}  {:>36}".format("", "", "", "", "", "out-of-place", "in-place"))
        print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}".format("size", "count", "type", "redop", "root")
              + place.format("time", "algbw", "busbw", "#wrong") * 2)
        print("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}".format("(B)", "(elements)", "", "", "")
              + place.format("(us)", "(GB/s)", "(GB/s)", "") * 2, flush=True)

    if args.warmup_iters:
        # As nccl-tests: warm up at the largest size, then at the smallest (the first row timed).
        for nbytes in (args.maxbytes, args.minbytes):
            _, _, prepare, call, _, _ = bench.plan(nbytes, False)
            prepare()
            mean_seconds(call, args.warmup_iters)
    total_wrong, busbw_sum, rows = 0, 0.0, 0
    redop = "sum" if bench.reduces else "none"
    for nbytes in sizes(args):
        results = []
        for in_place in (False, True):
            size, count, prepare, call, result, expect = bench.plan(nbytes, in_place)
            prepare()
            sec = mean_seconds(call, args.iters)
            wrong = 0
            if args.check:
                prepare()
                call()
                mine = int((result != expect).sum().item()) if result is not None else 0  # NaN != anything
                w = torch.tensor([mine], dtype=torch.int64)
                dist.all_reduce(w)
                wrong = int(w.item())
            results.append((sec, wrong))
        if rank == 0:
            line = f"{size:12d}  {count:12d}  {'float':>8}  {redop:>6}  {bench.root:6d}"
            for sec, wrong in results:
                algbw = size / 1e9 / sec if sec > 0 else 0.0
                busbw = algbw * bench.factor(n)
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
