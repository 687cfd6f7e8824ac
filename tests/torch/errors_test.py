"""What the "braid" backend refuses and how it fails, on 2 ranks rendezvousing through a
TCPStore: unsupported dtypes and ReduceOps, mismatched shapes, tags, overlapping outputs, each
refused on the calling rank with a message naming the problem; non-contiguous tensors handled;
a call that ranks make differently failing on both with Braid's message; the group's timeout
and Work.wait(timeout) enforced.
"""

import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import harness


def expect_error(failures, what, fn, *fragments):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (what matters is the message)
        text = str(e)
        missing = [f for f in fragments if f not in text]
        if missing:
            failures.append(f"{what}: the error lacks {missing}: {text!r}")
        return text
    failures.append(f"{what}: no error")
    return None


def check_rank(rank, world):
    failures = []
    t = torch.ones(4)

    # Refused before anything is sent: each rank checks its own arguments.
    expect_error(failures, "int16", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int16)),
                 "braid: allreduce", "dtype Short is not supported")
    expect_error(failures, "complex64", lambda: dist.broadcast(torch.ones(4, dtype=torch.complex64), 0),
                 "braid: broadcast", "dtype ComplexFloat is not supported")
    expect_error(failures, "BXOR", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BXOR),
                 "braid: allreduce", "bitwise ReduceOps")
    expect_error(failures, "AVG on int", lambda: dist.all_reduce(torch.ones(4, dtype=torch.int64), op=dist.ReduceOp.AVG),
                 "ReduceOp.AVG needs a floating-point tensor")
    expect_error(failures, "all_gather shapes",
                 lambda: dist.all_gather([torch.empty(4), torch.empty(3)], t),
                 "braid: allgather", "a tensor of the output list has 3 elements, expected 4")
    expect_error(failures, "_reduce_scatter_base dtypes",
                 lambda: dist._reduce_scatter_base(torch.empty(4), torch.ones(4 * world, dtype=torch.float64)),
                 "the input tensor has dtype Double, expected Float")
    expect_error(failures, "_allgather_base size",
                 lambda: dist._all_gather_base(torch.empty(4 * world + 1), t),
                 "braid: _allgather_base", f"the output tensor has {4 * world + 1} elements, expected {4 * world}")
    expect_error(failures, "reduce_scatter list",
                 lambda: dist.reduce_scatter(torch.empty(4), [torch.ones(4)] * (world + 1)),
                 "braid: reduce_scatter", f"expected the group size {world}")
    expect_error(failures, "alltoall splits",
                 lambda: dist.all_to_all_single(torch.empty(4), t, [1] * world, [3] * world),
                 "braid: alltoall_base", "splits add up to")
    expect_error(failures, "send tag", lambda: dist.send(t, (rank + 1) % world, tag=3),
                 "braid: send", "tag 3 is not supported")
    expect_error(failures, "expanded output",
                 lambda: dist.all_reduce(torch.ones(1).expand(4)),
                 "braid: allreduce", "overlap in memory")

    # Non-contiguous tensors are staged and copied back: a transposed matrix and a strided
    # all_gather output list.
    m = torch.arange(6, dtype=torch.float32).reshape(2, 3).t() * (rank + 1)
    dist.all_reduce(m)
    want = torch.arange(6, dtype=torch.float32).reshape(2, 3).t() * sum(range(1, world + 1))
    if not torch.equal(m, want):
        failures.append(f"transposed all_reduce: {m.tolist()} != {want.tolist()}")
    big = torch.zeros(world, 8)
    outs = [big[r, ::2] for r in range(world)]  # every other column: not contiguous
    dist.all_gather(outs, torch.full((4,), float(rank)))
    want = torch.zeros(world, 8)
    for r in range(world):
        want[r, ::2] = float(r)
    if not torch.equal(big, want):
        failures.append(f"strided all_gather outputs: {big.tolist()}")

    # The group still works after the refusals.
    t = torch.ones(4)
    dist.all_reduce(t)
    if not torch.equal(t, torch.full((4,), float(world))):
        failures.append(f"all_reduce after refusals: {t.tolist()}")

    # Work.wait(timeout): rank 1 joins 1.5 s late; rank 0's wait of 0.2 s gives up first and
    # the call still completes afterwards.
    x = torch.full((4,), float(rank))
    if rank == 1:
        time.sleep(1.5)
    work = dist.all_reduce(x, async_op=True)
    if rank == 0:
        expect_error(failures, "Work.wait(timeout)", lambda: work.wait(timeout=timedelta(milliseconds=200)),
                     "did not complete within 200 ms")
    work.wait()
    if not torch.equal(x, torch.full((4,), float(sum(range(world))))):
        failures.append(f"all_reduce after a wait timeout: {x.tolist()}")

    # The group's timeout: in a group made with a 1 s timeout, rank 1 never calls; rank 0's
    # call fails within the timeout's order with Braid's message.
    g = dist.new_group(backend="braid", timeout=timedelta(seconds=1))
    if rank == 0:
        start = time.monotonic()
        work = dist.all_reduce(torch.ones(4), group=g, async_op=True)
        text = expect_error(failures, "group timeout", work.wait, "braid: allreduce failed")
        print(f"rank 0: the call on the 1 s group failed after {time.monotonic() - start:.2f} s: {text}")
    dist.barrier()  # rank 1 stays until rank 0's call has failed

    # Ranks calling differently (different counts) fail on both, with Braid's message naming the
    # calls. In its own group: a failed communicator stays failed.
    g = dist.new_group(backend="braid")
    calls = {}

    def mismatched():
        calls["work"] = dist.all_reduce(torch.ones(4 + rank), group=g, async_op=True)
        calls["work"].wait()

    text = expect_error(failures, "mismatched counts", mismatched, "braid: allreduce failed",
                        f"ncclAllReduce(count={4 + rank}, float, sum)", f"ncclAllReduce(count={5 - rank}, float, sum)")
    work = calls.get("work")
    if work is None:
        failures.append("mismatched counts: the call raised before it returned a Work (it must fail asynchronously)")
    if work is not None and (not work.is_completed() or work.is_success()):
        failures.append(f"mismatched counts: the failed Work says completed={work.is_completed()} success={work.is_success()}")
    print(f"rank {rank}: mismatched counts: {text}")
    return failures


def main():
    results = harness.run(check_rank, 2, init="store", deadline_s=60)
    return harness.report(harness.rank_failures(results), "errors")


if __name__ == "__main__":
    sys.exit(main())
