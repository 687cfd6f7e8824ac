"""`import braid_torch` registers the "braid" backend with torch.distributed, and a process group
of one rank on a HashStore works without any rendezvous."""

import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import braid_torch  # noqa: F401  (registers the backend)


def main():
    assert "BRAID" in dist.Backend._plugins, dist.Backend._plugins
    assert dist.Backend("braid") == "braid"
    store = dist.HashStore()
    dist.init_process_group("braid", store=store, rank=0, world_size=1, timeout=timedelta(seconds=30))
    assert dist.get_backend() == "braid", dist.get_backend()
    t = torch.arange(5, dtype=torch.float32)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert torch.equal(t, torch.arange(5, dtype=torch.float32)), t
    dist.destroy_process_group()
    print(f"braid backend registered (torch {torch.__version__}); a one-rank group on a HashStore works")
    return 0


if __name__ == "__main__":
    sys.exit(main())
