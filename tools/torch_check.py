#!/usr/bin/env python3
"""PyTorch through Braid: torch.distributed with backend "nccl" and LD_PRELOAD=<Braid's
libnccl.so.2>, N ranks as processes on the one GPU.

Each rank checks all_reduce (several dtypes and ops), all_gather, reduce_scatter, broadcast and a
send/recv ring against exact expected values, then trains a small model with
DistributedDataParallel for 50 steps; rank 0 trains the same model alone on the concatenated
batch, and every step's loss must match within fp32 tolerance. Each rank also shows which
libnccl it runs on: the preloaded one must be mapped into the process (another one beside it is
reported), and the ranks' output must hold Braid's own INIT log line (NCCL_DEBUG=INFO).

    python3 tools/torch_check.py --lib build/libnccl.so.2 --world 2 --world 4
    python3 tools/torch_check.py --dry     # CPU only: gloo, no preload (tests this script's logic)

Exit code 0 when every world size passed. The last lines are one PASS/FAIL line per world size.
"""

import argparse
import os
import socket
import subprocess
import sys
import time

STEPS = 50
BATCH = 16  # per rank
FEATURES = 32


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---- worker (one rank) ------------------------------------------------------------------------

def mapped_nccls():
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "libnccl" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def gathered(dist, torch, mine, world):
    parts = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(parts, mine)
    return parts


def collectives(dist, torch, rank, world, device):
    # Integer-valued floats: every sum below is exact in fp32, fp16 and bf16 alike.
    dtypes = [torch.float32, torch.float16, torch.float64, torch.int32, torch.int64]
    if dist.get_backend() == "nccl":  # gloo (the dry run) reduces no bfloat16
        dtypes.append(torch.bfloat16)
    for dtype in dtypes:
        for n in (1, 7, 1 << 10, (1 << 20) + 3):
            x = (torch.arange(n, device=device) % 13 + rank).to(dtype)
            dist.all_reduce(x)
            want = (torch.arange(n, device=device) % 13 * world + world * (world - 1) // 2).to(dtype)
            check(torch.equal(x, want), f"all_reduce sum {dtype} n={n}")
    x = torch.full((1000,), float(rank + 1), device=device)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    check(torch.all(x == world).item(), "all_reduce max")
    x = torch.full((1000,), float(rank + 1), device=device)
    dist.all_reduce(x, op=dist.ReduceOp.MIN)
    check(torch.all(x == 1).item(), "all_reduce min")
    if dist.get_backend() == "nccl":  # gloo has no AVG
        x = torch.full((1000,), float(2 * rank), device=device)
        dist.all_reduce(x, op=dist.ReduceOp.AVG)
        check(torch.allclose(x, torch.full_like(x, float(world - 1))), "all_reduce avg")

    n = 4099
    mine = torch.arange(n, device=device, dtype=torch.float32) + 10000 * rank
    nccl = dist.get_backend() == "nccl"
    out = torch.empty(world * n, device=device)
    if nccl:
        dist.all_gather_into_tensor(out, mine)
    else:  # the dry run's gloo has only the list form
        out = torch.cat(gathered(dist, torch, mine, world))
    want = torch.cat([torch.arange(n, device=device, dtype=torch.float32) + 10000 * r for r in range(world)])
    check(torch.equal(out, want), "all_gather_into_tensor")
    check(torch.equal(torch.cat(gathered(dist, torch, mine, world)), want), "all_gather (list)")

    full = torch.arange(world * n, device=device, dtype=torch.float32) + rank
    got = torch.empty(n, device=device)
    if nccl:
        dist.reduce_scatter_tensor(got, full)
    else:  # gloo has no reduce_scatter: the same result through all_reduce
        summed = full.clone()
        dist.all_reduce(summed)
        got = summed[rank * n:(rank + 1) * n]
    want = (torch.arange(n, device=device, dtype=torch.float32) + rank * n) * world + world * (world - 1) / 2
    check(torch.equal(got, want), "reduce_scatter_tensor")

    for root in range(world):
        x = torch.arange(n, device=device, dtype=torch.float32) * (rank + 1)
        dist.broadcast(x, src=root)
        check(torch.equal(x, torch.arange(n, device=device, dtype=torch.float32) * (root + 1)), f"broadcast root {root}")

    nxt, prv = (rank + 1) % world, (rank - 1) % world
    send = torch.arange(n, device=device, dtype=torch.float32) + 100 * rank
    recv = torch.empty(n, device=device)
    ops = [dist.P2POp(dist.isend, send, nxt), dist.P2POp(dist.irecv, recv, prv)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    check(torch.equal(recv, torch.arange(n, device=device, dtype=torch.float32) + 100 * prv), "send/recv ring")
    if rank == 0:
        dist.send(send, dst=1)
    elif rank == 1:
        dist.recv(recv, src=0)
        check(torch.equal(recv, torch.arange(n, device=device, dtype=torch.float32)), "send/recv pair")
    if device.type == "cuda":
        torch.cuda.synchronize()


def make_model(torch):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))


def data(torch, world, device):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(STEPS, world * BATCH, FEATURES, generator=g)
    y = torch.randn(STEPS, world * BATCH, 1, generator=g)
    return x.to(device), y.to(device)


def train(torch, model, xs, ys, step_loss):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for s in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xs[s]), ys[s])
        loss.backward()
        opt.step()
        losses.append(step_loss(loss.detach()))
    return losses


def ddp(dist, torch, rank, world, device):
    from torch.nn.parallel import DistributedDataParallel
    xs, ys = data(torch, world, device)
    model = make_model(torch).to(device)
    wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    mine = slice(rank * BATCH, (rank + 1) * BATCH)

    def global_loss(loss):
        # Equal local batches: the mean of the ranks' mean losses is the full batch's mean loss.
        loss = loss.clone()
        dist.all_reduce(loss)
        return (loss / world).item()

    losses = train(torch, wrapped, xs[:, mine], ys[:, mine], global_loss)
    if rank != 0:
        return None
    reference = train(torch, make_model(torch).to(device), xs, ys, lambda l: l.item())
    worst = 0.0
    for s, (a, b) in enumerate(zip(losses, reference)):
        err = abs(a - b) / max(abs(b), 1e-6)
        worst = max(worst, err)
        check(err <= 1e-4, f"DDP step {s}: loss {a!r} vs single process {b!r} (relative error {err:.2e})")
    print(f"rank 0: DDP {STEPS} steps, loss {losses[0]:.6f} -> {losses[-1]:.6f}, worst relative "
          f"difference from the single-process run {worst:.2e}", flush=True)
    return worst


def worker(args):
    import torch
    import torch.distributed as dist
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device("cpu") if args.dry else torch.device("cuda", 0)
    if not args.dry:
        torch.cuda.set_device(device)
    dist.init_process_group("gloo" if args.dry else "nccl", rank=rank, world_size=world,
                            **({} if args.dry else {"device_id": device}))
    # A first collective makes sure the communicator exists before the libraries are listed.
    t = torch.ones(1, device=device)
    dist.all_reduce(t)
    check(t.item() == world, "first all_reduce")
    if not args.dry:
        libs = mapped_nccls()
        want = os.path.realpath(args.lib)
        print(f"rank {rank}: libnccl mapped: {libs}; torch.cuda.nccl.version() = {torch.cuda.nccl.version()}",
              flush=True)
        check(want in libs, f"Braid's {want} is not mapped: {libs}")
        if len(libs) > 1:  # loaded by path (torch may preload pip's libs): the calls still bind
            print(f"rank {rank}: note: another libnccl is mapped beside Braid's; the preloaded "
                  f"one comes first, and Braid's INIT log lines show it served the calls", flush=True)
    collectives(dist, torch, rank, world, device)
    print(f"rank {rank}: collectives OK", flush=True)
    ddp(dist, torch, rank, world, device)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank}: OK", flush=True)


# ---- launcher ---------------------------------------------------------------------------------

def launch(args, world):
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), PYTHONUNBUFFERED="1")
        if not args.dry:
            env["LD_PRELOAD"] = os.path.realpath(args.lib)
            env.setdefault("NCCL_DEBUG", "INFO")
            env.setdefault("NCCL_DEBUG_SUBSYS", "INIT")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker"] + (["--dry"] if args.dry else [])
                                      + ["--lib", args.lib], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    deadline = time.monotonic() + args.timeout
    outputs, codes = [], []
    for rank, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            out += f"\nrank {rank}: killed after {args.timeout} s\n"
        outputs.append(out)
        codes.append(p.returncode)
    for rank, out in enumerate(outputs):
        for line in out.splitlines():
            print(f"[{world} ranks, rank {rank}] {line}")
    text = "\n".join(outputs)
    ok = all(c == 0 for c in codes)
    if not args.dry and "NCCL INFO Braid " not in text:
        print(f"[{world} ranks] no Braid log line (NCCL_DEBUG=INFO): was Braid loaded?")
        ok = False
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default="build/libnccl.so.2", help="Braid's libnccl.so.2, preloaded")
    ap.add_argument("--world", type=int, action="append", help="ranks (repeatable); default 2 and 4")
    ap.add_argument("--timeout", type=float, default=150, help="seconds per world size")
    ap.add_argument("--dry", action="store_true", help="CPU and gloo, no preload: checks the script itself")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        try:
            worker(args)
        except Exception as e:  # the launcher prints it with the rank
            import traceback
            traceback.print_exc()
            print(f"rank {os.environ.get('RANK')}: FAIL: {e}", flush=True)
            sys.exit(1)
        return
    if not args.dry and not os.path.exists(args.lib):
        sys.exit(f"torch_check: {args.lib} does not exist")
    results = [(w, launch(args, w)) for w in (args.world or [2, 4])]
    for w, ok in results:
        print(f"torch_check {'dry (gloo, CPU)' if args.dry else 'nccl=Braid'} {w} ranks: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if all(ok for _, ok in results) else 1)


if __name__ == "__main__":
    main()
