#!/usr/bin/python3
"""End-to-end data-parallel training on Braid against Gloo: DistributedDataParallel on CPU,
a multilayer perceptron on scikit-learn's bundled digits (1797 8x8 images, 10 classes; Debian's
python3-sklearn), per setting and backend side by side in one run.

    /usr/bin/python3 bench/train/train_ddp.py                      # 4 local ranks, braid and gloo
    /usr/bin/python3 bench/train/train_ddp.py --settings host,cluster,cluster-int8,cluster-topk \\
        --out bench/results/train_ddp.md

Settings: `host` runs --np ranks as processes of this machine (127.0.0.1), `host-int8` and
`host-topk` the same compressed (below); `cluster` runs one
rank per host of `tools/netcluster --hosts 8 --racks 2` (host links 2 Gbit/s, rack uplinks a
third of that, ranks alternating racks; root needed), `cluster-int8` / `cluster-topk` the same
with BRAID_COMPRESS=int8 / topk:0.01 (and BRAID_COMPRESS_MIN_BYTES=--compress-min-bytes) for
Braid only (Gloo has no compression: compare with its
run in `cluster`). Each (setting, backend) runs --rounds times, the backends taking turns,
and the table keeps each metric's median over rounds.

Per run, every rank trains --steps steps of --batch samples (a fresh shuffle each epoch, each
rank its own slice), evaluates the validation split every --eval-every steps (not counted in the
training time), and reports:
- step time: mean wall time of a step after --warmup steps (forward, backward with DDP's bucket
  AllReduces, optimizer);
- overlap: the share of communication hidden behind backward. Each bucket's AllReduce runs from
  the moment DDP hands it over (a comm hook stamps it) to its completion (a callback on its
  future stamps that); communication is the union of those intervals, and hidden is the part of
  it before the last bucket was handed over (by then backward has computed every gradient);
- throughput: samples per second over all ranks (world x batch / step time);
- time to accuracy: training time until the validation accuracy first reached --target, and the
  final accuracy.

`--worker` is one rank (internal: the driver starts it).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NETCLUSTER = ROOT / "tools" / "netcluster"
CLUSTER_ARGS = ["--hosts", "8", "--racks", "2", "--placement", "alternate"]
SETTINGS = {
    "host": {"cluster": False, "compress": None},
    "host-int8": {"cluster": False, "compress": "int8"},
    "host-topk": {"cluster": False, "compress": "topk:0.01"},
    "cluster": {"cluster": True, "compress": None},
    "cluster-int8": {"cluster": True, "compress": "int8"},
    "cluster-topk": {"cluster": True, "compress": "topk:0.01"},
}


# ---- one rank ----

def load_digits_split(seed):
    from sklearn.datasets import load_digits
    import numpy as np
    d = load_digits()
    x = (d.data / 16.0).astype("float32")
    y = d.target.astype("int64")
    perm = np.random.RandomState(seed).permutation(len(x))
    x, y = x[perm], y[perm]
    n_val = len(x) // 6
    return x[n_val:], y[n_val:], x[:n_val], y[:n_val]


def worker(args):
    if "GLOO_SOCKET_IFNAME" not in os.environ and os.environ.get("NCCL_SOCKET_IFNAME"):
        os.environ["GLOO_SOCKET_IFNAME"] = os.environ["NCCL_SOCKET_IFNAME"].lstrip("=")
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    if args.backend == "braid":
        global braid_torch
        import braid_torch  # registers the "braid" backend
    torch.set_num_threads(1)  # ranks share the machine's cores
    torch.manual_seed(0)
    dist.init_process_group(args.backend, init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()

    xt, yt, xv, yv = load_digits_split(0)
    xt, yt, xv, yv = map(torch.from_numpy, (xt, yt, xv, yv))
    model = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden),
                          nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 10))
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    comm = []  # (handed over, completed) per bucket of the current step

    def hook(state, bucket):
        t0 = time.perf_counter()
        tensor = bucket.buffer()
        tensor.div_(world)
        fut = dist.all_reduce(tensor, async_op=True).get_future()

        def done(f):
            comm.append((t0, time.perf_counter()))
            return f.value()[0]
        return fut.then(done)

    ddp.register_comm_hook(None, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    step_times, overlaps = [], []
    train_time, time_to_target, accuracy = 0.0, None, 0.0
    per_epoch = len(xt) // (args.batch * world)
    gen = torch.Generator().manual_seed(1)
    order = None
    for step in range(args.steps):
        if step % per_epoch == 0:
            order = torch.randperm(len(xt), generator=gen)
        k = step % per_epoch
        idx = order[(k * world + rank) * args.batch:(k * world + rank + 1) * args.batch]
        comm.clear()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(ddp(xt[idx]), yt[idx])
        tb = time.perf_counter()
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        train_time += t1 - t0
        if step >= args.warmup:
            step_times.append(t1 - t0)
            if comm:
                overlaps.append(hidden_share(comm, tb))
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            with torch.no_grad():
                accuracy = (model(xv).argmax(1) == yv).float().mean().item()
            if time_to_target is None and accuracy >= args.target:
                time_to_target = train_time
    # Which calls ran compressed (Braid's counters), so a compressed setting shows it compressed.
    compressed = (braid_torch.compression_stats()["compressed_calls"]
                  if args.backend == "braid" else 0)
    dist.barrier()
    if rank == 0:
        step = statistics.mean(step_times)
        print("RESULT " + json.dumps({
            "world": world, "step_ms": step * 1e3,
            "overlap": statistics.mean(overlaps) if overlaps else 0.0,
            "samples_s": world * args.batch / step,
            "time_to_target_s": time_to_target, "accuracy": accuracy,
            "buckets": len(comm), "params": sum(p.numel() for p in model.parameters()),
            "compressed_calls": compressed}), flush=True)
    dist.destroy_process_group()
    return 0


def hidden_share(intervals, backward_start):
    """The share of the union of `intervals` that lies before the last one began (backward had
    computed every gradient by then) and after `backward_start`."""
    compute_end = max(a for a, _ in intervals)
    merged = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    total = sum(b - a for a, b in merged)
    hidden = sum(max(0.0, min(b, compute_end) - max(a, backward_start)) for a, b in merged)
    return hidden / total if total > 0 else 0.0


# ---- the driver ----

def run_one(args, setting, backend):
    conf = SETTINGS[setting]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(args.build).resolve() / "python") + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("BRAID_COMPRESS", None)
    if backend == "braid" and conf["compress"]:
        env["BRAID_COMPRESS"] = conf["compress"]
        # DDP's buckets are --bucket-mb at most: below Braid's default minimum (1 MiB) they
        # would all stay exact.
        env["BRAID_COMPRESS_MIN_BYTES"] = str(args.compress_min_bytes)
    cmd = ["/usr/bin/python3", str(Path(__file__).resolve()), "--worker", "--backend", backend,
           "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch", str(args.batch),
           "--hidden", str(args.hidden), "--bucket-mb", str(args.bucket_mb), "--lr", str(args.lr),
           "--eval-every", str(args.eval_every), "--target", str(args.target)]
    if conf["cluster"]:
        full = [str(NETCLUSTER), "--quiet", "--timeout", str(args.timeout)] + CLUSTER_ARGS + ["--"] + cmd
        out = subprocess.run(full, env=env, capture_output=True, text=True, timeout=args.timeout + 60)
        outputs = [(out.returncode, out.stdout, out.stderr)]
    else:
        from socket import socket
        with socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = []
        for r in range(args.np):
            e = dict(env, RANK=str(r), WORLD_SIZE=str(args.np), LOCAL_RANK=str(r),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            procs.append(subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outputs = []
        for p in procs:
            o, e = p.communicate(timeout=args.timeout)
            outputs.append((p.returncode, o, e))
    for code, o, e in outputs:
        for line in o.splitlines():
            if "RESULT " in line:
                return json.loads(line.split("RESULT ", 1)[1])
    code, o, e = next(((c, o, e) for c, o, e in outputs if c != 0), outputs[0])
    raise RuntimeError(f"{setting}/{backend}: exit {code}\n{e[-3000:]}")


def table(results, args):
    lines = ["| setting | backend | ranks | step ms | overlap | samples/s | time to "
             f"{args.target:.0%} s | final accuracy | calls compressed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for setting in args.settings:
        for backend in args.backends:
            runs = results.get((setting, backend), [])
            if not runs:
                continue
            med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
            tts = [r["time_to_target_s"] for r in runs if r["time_to_target_s"] is not None]
            label = backend + (f" ({SETTINGS[setting]['compress']})"
                               if backend == "braid" and SETTINGS[setting]["compress"] else "")
            reached = f"{statistics.median(tts):.1f}" if tts else "not reached"
            if tts and len(tts) < len(runs):
                reached += f" ({len(tts)}/{len(runs)} runs reached it)"
            lines.append(f"| {setting} | {label} | {runs[0]['world']} | {med('step_ms'):.1f} | "
                         f"{med('overlap'):.0%} | {med('samples_s'):.0f} | {reached} | "
                         f"{med('accuracy'):.1%} | {runs[0].get('compressed_calls', 0)} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="braid")
    ap.add_argument("--settings", default="host", help="comma list of " + ",".join(SETTINGS))
    ap.add_argument("--backends", default="braid,gloo")
    ap.add_argument("--np", type=int, default=4, help="ranks of the host setting")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--batch", type=int, default=32, help="samples per rank per step")
    ap.add_argument("--hidden", type=int, default=1024, help="width of the three hidden layers")
    ap.add_argument("--bucket-mb", type=float, default=1.0, help="DDP's bucket_cap_mb")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--compress-min-bytes", type=int, default=65536,
                    help="BRAID_COMPRESS_MIN_BYTES of the compressed settings")
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--target", type=float, default=0.95)
    ap.add_argument("--build", default=str(ROOT / "build" / "release"))
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--out", help="also write the table (with the command) to this file")
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    args.settings = args.settings.split(",")
    args.backends = args.backends.split(",")
    for s in args.settings:
        if s not in SETTINGS:
            ap.error(f"unknown setting {s}")
    results = {}
    for setting in args.settings:
        for rnd in range(args.rounds):
            for backend in args.backends:
                if SETTINGS[setting]["compress"] and backend != "braid":
                    continue  # nothing to compress: the exact run of the same cluster stands
                r = run_one(args, setting, backend)
                results.setdefault((setting, backend), []).append(r)
                print(f"# {setting} {backend} round {rnd + 1}: step {r['step_ms']:.1f} ms, overlap "
                      f"{r['overlap']:.0%}, accuracy {r['accuracy']:.1%}", file=sys.stderr, flush=True)
    any_run = next(iter(results.values()))[0]
    head = (f"# DDP on CPU: MLP 64-{args.hidden}x3-10 ({any_run['params']} parameters, {any_run['buckets']} "
            f"buckets of <= {args.bucket_mb:g} MB), digits, {args.batch} samples per rank per step, "
            f"{args.steps} steps, medians of {args.rounds} rounds\n\n"
            f"`/usr/bin/python3 bench/train/train_ddp.py {' '.join(sys.argv[1:])}`\n")
    text = head + "\n" + table(results, args) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
