"""A Work completes after its call returned, while the caller computed (2 ranks, env://).

Rank 1 calls all_reduce 0.3 s late, so rank 0's call cannot complete before it returns. Rank 0
then multiplies matrices, polling Work.is_completed() between products, and never calls wait()
before it sees completion. Timestamps, in order, must be: the call returned (not completed),
matrix products ran, rank 0 saw it complete while computing; and the Work's Future completed
(its callback's time) after the call returned. Then the result is checked.
"""

import sys
import time

import torch
import torch.distributed as dist

import harness


def overlap(rank, world):
    x = torch.full((1 << 18,), float(rank + 1))
    events = {}
    if rank == 1:
        time.sleep(0.3)
    work = dist.all_reduce(x, async_op=True)
    events["returned"] = time.perf_counter()
    completed_at_return = work.is_completed()
    work.get_future().then(lambda fut: events.setdefault("future_done", time.perf_counter()))
    products = 0
    a = torch.randn(128, 128)
    deadline = time.perf_counter() + 10.0
    while not work.is_completed() and time.perf_counter() < deadline:
        a = torch.tanh(a @ a)  # the caller's computation
        products += 1
        if products == 1:
            events["first_product"] = time.perf_counter()
    events["seen_complete"] = time.perf_counter()
    products_before_seen = products
    work.wait()
    correct = torch.equal(x, torch.full_like(x, float(sum(range(1, world + 1)))))
    return dict(events=events, completed_at_return=completed_at_return, products=products_before_seen,
                correct=correct, success=work.is_success())


def main():
    r = harness.run(overlap, 2, init="env", deadline_s=60)[0]
    e = r["events"]
    t0 = e["returned"]
    for name, t in sorted(e.items(), key=lambda kv: kv[1]):
        print(f"rank 0 {1e3 * (t - t0):9.3f} ms  {name}")
    print(f"rank 0: {r['products']} matrix products before it saw the Work complete; "
          f"completed at return: {r['completed_at_return']}")
    # The Future's callback runs on the group's completion thread once the Work is complete, so
    # it is ordered after the return, not against rank 0's polling.
    order = ["returned", "first_product", "seen_complete"]
    ok = (not r["completed_at_return"] and r["products"] > 0 and all(k in e for k in order + ["future_done"])
          and all(e[a] <= e[b] for a, b in zip(order, order[1:])) and e["returned"] < e["future_done"]
          and r["correct"] and r["success"])
    print("PASS" if ok else "FAIL", "the Work completed after the call returned, while rank 0 computed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
