"""Every operation of the "braid" backend on every dtype it takes, against results computed here
with torch from every rank's input (each rank can build every rank's input: they are functions
of the rank). Exact comparison except AVG and PREMUL_SUM on float types (rounding).

    ops_test.py --world 2 --init tcp
"""

import sys
import warnings

import torch
import torch.distributed as dist

import harness

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.int32,
          torch.int64, torch.uint8, torch.bool]
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
warnings.filterwarnings("ignore", message=".*all_reduce_coalesced will be deprecated")
N = 13  # elements per rank: odd, so no algorithm splits it evenly


def data(rank, dtype, n=N, salt=0, low=0, high=4):
    """A rank's input: small integers, exact in every dtype, and whose product over 4 ranks stays
    within int8."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    x = torch.randint(low, high, (n,), generator=g)
    if dtype == torch.bool:
        return (x % 2).bool()
    return x.to(dtype)


def reference(op, inputs, dtype):
    s = torch.stack([x.double() if dtype != torch.bool else x for x in inputs])
    if dtype == torch.bool:
        any_, all_ = s.any(0), s.all(0)
        return {"SUM": any_, "MAX": any_, "BOR": any_, "PRODUCT": all_, "MIN": all_, "BAND": all_}[op]
    if op == "SUM":
        r = s.sum(0)
    elif op == "PRODUCT":
        r = s.prod(0)
    elif op == "MIN":
        r = s.amin(0)
    elif op == "MAX":
        r = s.amax(0)
    elif op == "AVG":
        r = s.mean(0)
    elif op == "PREMUL_SUM":
        r = (s * 2.0).sum(0)
    return r.to(dtype)


def ops_for(dtype):
    if dtype == torch.bool:
        return ["SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR"]
    ops = ["SUM", "PRODUCT", "MIN", "MAX"]
    if dtype in FLOATS:
        ops += ["AVG", "PREMUL_SUM"]
    return ops


def reduce_op(name):
    if name == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(2.0)
    return getattr(dist.ReduceOp, name)


class Checker:
    def __init__(self, rank):
        self.rank, self.failures, self.checks = rank, [], 0

    def same(self, what, got, want, exact=True):
        self.checks += 1
        got, want = got.cpu(), want.cpu()
        if got.dtype != want.dtype or got.shape != want.shape:
            self.failures.append(f"rank {self.rank} {what}: got {got.dtype}{tuple(got.shape)}, want {want.dtype}{tuple(want.shape)}")
            return
        ok = torch.equal(got, want) if exact else torch.allclose(got.double(), want.double(), rtol=1e-2, atol=1e-2)
        if not ok:
            self.failures.append(f"rank {self.rank} {what}: got {got.tolist()}, want {want.tolist()}")


def all_gather_into(out, inp):
    f = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    return f(out, inp)


def reduce_scatter_from(out, inp, op):
    f = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    return f(out, inp, op=op)


def check_rank(rank, world):
    c = Checker(rank)
    for dtype in DTYPES:
        name = str(dtype).replace("torch.", "")
        high = 3 if world > 2 else 4  # int8 products of 4 ranks stay below 128
        inputs = [data(r, dtype, high=high) for r in range(world)]
        mine = inputs[rank]
        exact = dtype not in FLOATS

        for op in ops_for(dtype):
            t = mine.clone()
            work = dist.all_reduce(t, op=reduce_op(op), async_op=True)
            work.wait()
            c.same(f"all_reduce {op} {name}", t, reference(op, inputs, dtype),
                   exact=exact or op not in ("AVG", "PREMUL_SUM"))
            if not work.is_completed():
                c.failures.append(f"rank {rank} all_reduce {op} {name}: not completed after wait()")

        # A non-contiguous tensor (every other element of a longer one) is reduced in place.
        wide = torch.stack([mine, mine]).t().contiguous().t()  # shape (2, N) with strides (1, 2)
        dist.all_reduce(wide[0], op=dist.ReduceOp.MAX)
        c.same(f"all_reduce MAX {name} non-contiguous", wide[0], reference("MAX", inputs, dtype))
        c.same(f"all_reduce MAX {name} non-contiguous (untouched row)", wide[1], mine)

        # allreduce_coalesced: two tensors of one dtype, one call.
        other = [data(r, dtype, n=5, salt=7, high=high) for r in range(world)]
        pair = [mine.clone(), other[rank].clone()]
        dist.all_reduce_coalesced(pair, op=dist.ReduceOp.MAX)
        c.same(f"all_reduce_coalesced MAX {name} [0]", pair[0], reference("MAX", inputs, dtype))
        c.same(f"all_reduce_coalesced MAX {name} [1]", pair[1], reference("MAX", other, dtype))

        root = world - 1
        t = mine.clone()
        dist.broadcast(t, src=root)
        c.same(f"broadcast {name} root {root}", t, inputs[root])

        t = mine.clone()
        dist.reduce(t, dst=0, op=dist.ReduceOp.MIN)
        if rank == 0:
            c.same(f"reduce MIN {name} root 0", t, reference("MIN", inputs, dtype))

        outs = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(outs, mine)
        for r in range(world):
            c.same(f"all_gather {name} [{r}]", outs[r], inputs[r])

        flat = torch.empty(world * N, dtype=dtype)
        all_gather_into(flat, mine)
        c.same(f"_allgather_base {name}", flat, torch.cat(inputs))

        # reduce_scatter: rank r's list holds a chunk per rank; rank k receives the sum of chunk k.
        chunks = [[data(r, dtype, salt=100 + k, high=high) for k in range(world)] for r in range(world)]
        sum_op = dist.ReduceOp.SUM if dtype != torch.bool else dist.ReduceOp.MAX
        sum_name = "SUM" if dtype != torch.bool else "MAX"
        out = torch.empty_like(mine)
        dist.reduce_scatter(out, chunks[rank], op=sum_op)
        c.same(f"reduce_scatter {sum_name} {name}", out, reference(sum_name, [chunks[r][rank] for r in range(world)], dtype))

        out = torch.empty_like(mine)
        reduce_scatter_from(out, torch.cat(chunks[rank]), sum_op)
        c.same(f"_reduce_scatter_base {sum_name} {name}", out,
               reference(sum_name, [chunks[r][rank] for r in range(world)], dtype))

        # all_to_all_single, equal splits: rank r's k-th block goes to rank k.
        blocks = [data(r, dtype, n=world * 3, salt=200, high=high) for r in range(world)]
        out = torch.empty(world * 3, dtype=dtype)
        dist.all_to_all_single(out, blocks[rank])
        c.same(f"alltoall_base equal {name}", out, torch.cat([blocks[r][3 * rank:3 * rank + 3] for r in range(world)]))

        # Uneven splits: rank r sends r + k + 1 rows of 2 elements to rank k.
        def split(r, k):
            return r + k + 1
        rows = [torch.arange(sum(split(r, k) for k in range(world)) * 2).reshape(-1, 2) + 1000 * r for r in range(world)]
        rows = [x.to(dtype) if dtype not in (torch.int8, torch.uint8, torch.bool) else (x % 100).to(dtype) for x in rows]
        in_splits = [split(rank, k) for k in range(world)]
        out_splits = [split(r, rank) for r in range(world)]
        out = torch.empty(sum(out_splits), 2, dtype=dtype)
        dist.all_to_all_single(out, rows[rank], out_splits, in_splits)
        want = []
        for r in range(world):
            start = sum(split(r, k) for k in range(rank))
            want.append(rows[r][start:start + split(r, rank)])
        c.same(f"alltoall_base uneven {name}", out, torch.cat(want))

        # all_to_all (lists): tensor k of rank r goes to rank k, sizes differ per pair.
        ins = [data(rank, dtype, n=rank + k + 1, salt=300 + k, high=high) for k in range(world)]
        outs = [torch.empty(r + rank + 1, dtype=dtype) for r in range(world)]
        dist.all_to_all(outs, ins)
        for r in range(world):
            c.same(f"alltoall {name} from {r}", outs[r], data(r, dtype, n=r + rank + 1, salt=300 + rank, high=high))

        root = 1 % world
        glist = [torch.empty_like(mine) for _ in range(world)] if rank == root else None
        dist.gather(mine, gather_list=glist, dst=root)
        if rank == root:
            for r in range(world):
                c.same(f"gather {name} root {root} [{r}]", glist[r], inputs[r])

        out = torch.empty_like(mine)
        slist = [data(0, dtype, salt=400 + k, high=high) for k in range(world)] if rank == 0 else None
        dist.scatter(out, scatter_list=slist, src=0)
        c.same(f"scatter {name} root 0", out, data(0, dtype, salt=400 + rank, high=high))

        # send/recv around the ring; even ranks send first so blocking calls cannot deadlock.
        nxt, prv = (rank + 1) % world, (rank - 1) % world
        got = torch.empty_like(mine)
        if rank % 2 == 0:
            dist.send(mine, nxt)
            dist.recv(got, prv)
        else:
            dist.recv(got, prv)
            dist.send(mine, nxt)
        c.same(f"send/recv {name} from {prv}", got, inputs[prv])

    # A subgroup of the odd ranks (every rank creates it, as torch requires).
    if world >= 4:
        odd = [r for r in range(world) if r % 2 == 1]
        sub = dist.new_group(odd, backend="braid")
        if rank in odd:
            t = torch.full((N,), float(rank))
            dist.all_reduce(t, group=sub)
            c.same("all_reduce SUM float32 in the subgroup of odd ranks", t, torch.full((N,), float(sum(odd))))

    dist.barrier()
    work = dist.barrier(async_op=True)
    work.wait()
    c.checks += 1
    if not work.is_completed():
        c.failures.append(f"rank {rank} barrier: not completed after wait()")
    return c.checks, c.failures


def main():
    world = harness.parse_world(sys.argv)
    init = sys.argv[sys.argv.index("--init") + 1] if "--init" in sys.argv else "env"
    results = harness.run(check_rank, world, init=init, deadline_s=120)
    failures = [f for _, fs in results for f in fs]
    return harness.report(failures, f"{world} ranks (rendezvous: {init}): {sum(n for n, _ in results)} checks")


if __name__ == "__main__":
    sys.exit(main())
