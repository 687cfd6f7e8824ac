"""DistributedDataParallel on CPU with the "braid" backend.

    ddp_test.py --world N    every rank trains the same model three ways: DDP on the braid group,
                             DDP on a gloo group, and (rank 0) one process on the concatenated
                             batch; every step's loss and the final weights agree (fp32
                             tolerance).
    ddp_test.py --overlap    2 ranks, one gradient bucket per layer: the first bucket's Work
                             completes after its call returned and before backward computed the
                             first layer's gradient (timestamps; rank 1 joins that bucket only
                             once rank 0's call has returned, told through the store).
"""

import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import harness

STEPS = 8
BATCH = 8  # per rank
FEATURES = 16


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32),
                               torch.nn.Tanh(), torch.nn.Linear(32, 4))


def batches(world):
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(world * BATCH, FEATURES, generator=g), torch.randn(world * BATCH, 4, generator=g))
            for _ in range(STEPS)]


def train(model, data, rank, world, group):
    """Per-step loss of the whole batch (the mean over ranks of each rank's mean loss)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in data:
        if group is not None:
            x, y = x[rank * BATCH:(rank + 1) * BATCH], y[rank * BATCH:(rank + 1) * BATCH]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        loss = loss.detach().clone()
        if group is not None:
            dist.all_reduce(loss, group=group)
            loss /= world
        losses.append(loss.item())
    return losses


def loss_match(rank, world):
    data = batches(world)
    braid_model = DDP(make_model())  # the default group: braid
    braid_losses = train(braid_model, data, rank, world, dist.group.WORLD)
    gloo = dist.new_group(backend="gloo")
    gloo_model = DDP(make_model(), process_group=gloo)
    gloo_losses = train(gloo_model, data, rank, world, gloo)
    single = make_model() if rank == 0 else None
    single_losses = train(single, data, rank, world, None) if rank == 0 else None
    weights = [p.detach().tolist() for p in braid_model.module.parameters()]
    single_weights = [p.detach().tolist() for p in single.parameters()] if rank == 0 else None
    return braid_losses, gloo_losses, single_losses, weights, single_weights


def heavy_model():
    # Four wide layers whose backward takes tens of milliseconds each on one thread, then a
    # small head: backward reaches the head's bucket first and the first layer last.
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(512, 8))


def overlap(rank, world):
    model = heavy_model()
    # About one layer per bucket (a 512x512 layer is 1 MiB of fp32); the first bucket holds the head.
    ddp = DDP(model, bucket_cap_mb=1, gradient_as_bucket_view=True)
    events = []  # (what, bucket or layer, time)

    store = dist.distributed_c10d._get_default_store()

    def hook(_, bucket):
        index = bucket.index()
        measured = index == 0 and steps["n"] == 1
        if rank == 1 and measured:
            store.wait(["bucket0_returned"])  # rank 0's call cannot complete before it returned
        work = dist.all_reduce(bucket.buffer(), async_op=True)
        returned = time.perf_counter()
        if not work.is_completed():
            events.append(("in_flight_at_return", index, returned))
        if rank == 0 and measured:
            store.set("bucket0_returned", "1")

        def done(fut):
            events.append(("done", index, time.perf_counter()))
            return fut.value()[0] / world

        fut = work.get_future().then(done)
        events.append(("returned", index, returned))
        return fut

    ddp.register_comm_hook(None, hook)
    first = model[0].weight
    first.register_hook(lambda g: events.append(("first_layer_grad", 0, time.perf_counter())))
    x, y = torch.randn(256, 512), torch.randn(256, 8)
    steps = {"n": 0}
    for step in range(2):  # the first step builds the buckets; the second one is measured
        steps["n"] = step
        events.clear()
        ddp.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        end = time.perf_counter()
    return events, end


def main():
    if "--overlap" in sys.argv:
        results = harness.run(overlap, 2, deadline_s=90)
        events, end = results[0]
        t0 = min(t for _, _, t in events)
        for what, index, t in sorted(events, key=lambda e: e[2]):
            print(f"rank 0 {1e3 * (t - t0):8.2f} ms  {what} {index}")
        print(f"rank 0 {1e3 * (end - t0):8.2f} ms  backward returned")
        times = {(w, i): t for w, i, t in events}
        returned, done, first = times.get(("returned", 0)), times.get(("done", 0)), times.get(("first_layer_grad", 0))
        in_flight = ("in_flight_at_return", 0) in times
        if None in (returned, done, first):
            print("FAIL: missing events", sorted(times))
            return 1
        buckets = len({i for w, i, _ in events if w == "returned"})
        ok = in_flight and returned < done < first and buckets >= 3
        print(f"{'PASS' if ok else 'FAIL'}: {buckets} buckets; bucket 0 returned at {1e3 * (returned - t0):.2f} ms "
              f"{'in flight' if in_flight else 'already complete'}, "
              f"completed at {1e3 * (done - t0):.2f} ms, before the first layer's gradient at {1e3 * (first - t0):.2f} ms")
        return 0 if ok else 1

    world = harness.parse_world(sys.argv)
    results = harness.run(loss_match, world, deadline_s=90)
    single = results[0][2]
    single_weights = results[0][4]
    failures = []

    def close(a, b):
        return torch.allclose(torch.tensor(a), torch.tensor(b), rtol=1e-5, atol=1e-6)

    for rank, (braid_losses, gloo_losses, _, weights, _) in enumerate(results):
        if not close(braid_losses, single):
            failures.append(f"rank {rank}: braid losses {braid_losses} != one process {single}")
        if not close(gloo_losses, single):
            failures.append(f"rank {rank}: gloo losses {gloo_losses} != one process {single}")
        if not all(close(w, s) for w, s in zip(weights, single_weights)):
            failures.append(f"rank {rank}: braid DDP's final weights differ from one process's")
    print(f"{world} ranks, {STEPS} steps: one process {['%.6f' % v for v in single]}")
    print(f"{world} ranks, {STEPS} steps: braid DDP   {['%.6f' % v for v in results[0][0]]}")
    print(f"{world} ranks, {STEPS} steps: gloo DDP    {['%.6f' % v for v in results[0][1]]}")
    return harness.report(failures, f"DDP loss match, {world} ranks")


if __name__ == "__main__":
    sys.exit(main())
