"""braid_torch.Options per process group (2 ranks): a group made with compression="int8" runs
its float AllReduce compressed (Braid's counters say so) within INT8's error, "topk:0.25"
likewise by its counters; the default group stays exact; a bad policy is refused naming it; a
group of priority -1 computes like any other; options that are not braid_torch.Options are
refused.
"""

import sys

import torch
import torch.distributed as dist

import braid_torch
import harness

N = 1 << 16


def check_rank(rank, world):
    failures = []
    g = torch.Generator().manual_seed(5)
    inputs = [torch.randn(N, generator=g) for _ in range(world)]
    exact = torch.stack(inputs).sum(0)

    x = inputs[rank].clone()
    dist.all_reduce(x)
    if not torch.equal(x, exact) and not torch.allclose(x, exact, rtol=1e-6, atol=1e-6):
        failures.append("the default group's all_reduce is not exact")
    stats = braid_torch.compression_stats()
    if stats["compressed_calls"] != 0:
        failures.append(f"the default group compressed: {stats}")

    int8 = dist.new_group(backend="braid", pg_options=braid_torch.Options(compression="int8", compress_min_bytes=0))
    x = inputs[rank].clone()
    dist.all_reduce(x, group=int8)
    error = ((x - exact).norm() / exact.norm()).item()
    stats = braid_torch.compression_stats(int8)
    if stats["compressed_calls"] != 1:
        failures.append(f"int8 group: compressed_calls {stats['compressed_calls']}, expected 1 ({stats})")
    if not 0 < error < 0.05:
        failures.append(f"int8 group: relative L2 error {error:.3g}, expected in (0, 0.05)")

    topk = dist.new_group(backend="braid", pg_options=braid_torch.Options(compression="topk:0.25", compress_min_bytes=0))
    x = inputs[rank].clone()
    dist.all_reduce(x, group=topk)
    stats = braid_torch.compression_stats(topk)
    if stats["compressed_calls"] != 1:
        failures.append(f"topk group: compressed_calls {stats['compressed_calls']}, expected 1 ({stats})")

    try:
        dist.new_group(backend="braid", pg_options=braid_torch.Options(compression="zip"))
        failures.append("compression=\"zip\" was accepted")
    except Exception as e:  # noqa: BLE001
        if "zip" not in str(e):
            failures.append(f"compression=\"zip\": the error does not name it: {e}")
    urgent = dist.new_group(backend="braid", pg_options=braid_torch.Options(priority=-1))
    x = inputs[rank].clone()
    dist.all_reduce(x, group=urgent)
    if not torch.allclose(x, exact, rtol=1e-6, atol=1e-6):
        failures.append("priority -1 group: all_reduce differs from the exact sum")

    try:
        dist.new_group(backend="braid", pg_options={"compression": "int8"})
        failures.append("a dict as pg_options was accepted")
    except TypeError as e:
        if "braid_torch.Options" not in str(e):
            failures.append(f"a dict as pg_options: the error does not say what to pass: {e}")
    print(f"rank {rank}: int8 relative L2 error {error:.4f}")
    return failures


def main():
    results = harness.run(check_rank, 2, deadline_s=60)
    return harness.report(harness.rank_failures(results), "options")


if __name__ == "__main__":
    sys.exit(main())
