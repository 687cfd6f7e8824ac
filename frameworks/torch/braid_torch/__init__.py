"""The torch.distributed backend "braid": collectives on CPU tensors through Braid.

    import braid_torch                                  # registers the backend
    torch.distributed.init_process_group("braid", init_method="env://", ...)

Options per process group (init_process_group or new_group):

    pg_options=braid_torch.Options(compression="int8", compress_min_bytes=0, priority=0)

compression takes BRAID_COMPRESS's syntax ("none", "int8", "topk", "topk:0.05", "auto"); without
it a group follows BRAID_COMPRESS. docs/frameworks.md has what is supported.
"""

from datetime import timedelta

import torch
import torch.distributed as dist

from . import _C

__all__ = ["Options", "compression_stats"]


class Options:
    """Options of one braid process group.

    compression: None (BRAID_COMPRESS decides), "none", "int8", "topk", "topk:<ratio>" or
        "auto": the policy of the group's AllReduce calls on float, half and bfloat16 (lossy,
        with error feedback; other calls stay exact).
    compress_min_bytes: calls smaller than this stay exact (None: BRAID_COMPRESS_MIN_BYTES).
    priority: the group's host-stream priority class, 0 (normal) to -3 (most urgent); every
        rank must give a group the same one.
    """

    def __init__(self, compression=None, compress_min_bytes=None, priority=0):
        if compression is not None and not isinstance(compression, str):
            raise TypeError(f"braid_torch.Options: compression must be a string, not {compression!r}")
        if compress_min_bytes is not None and (not isinstance(compress_min_bytes, int) or compress_min_bytes < 0):
            raise ValueError(f"braid_torch.Options: compress_min_bytes must be an int >= 0, not {compress_min_bytes!r}")
        if not isinstance(priority, int):
            raise TypeError(f"braid_torch.Options: priority must be an int, not {priority!r}")
        self.compression = compression
        self.compress_min_bytes = compress_min_bytes
        self.priority = priority

    def __repr__(self):
        return (f"braid_torch.Options(compression={self.compression!r}, "
                f"compress_min_bytes={self.compress_min_bytes!r}, priority={self.priority})")


def _create_backend(backend_options, pg_options):
    """torch.distributed's creator (extended API): store, rank, size and timeout from torch."""
    options = Options() if pg_options is None else pg_options
    if not isinstance(options, Options):
        raise TypeError(f"the braid backend takes pg_options=braid_torch.Options(...), not {type(options).__name__}")
    timeout = backend_options.timeout
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    return _C._create(backend_options.store, backend_options.group_rank, backend_options.group_size,
                      int(seconds * 1000), options.compression or "",
                      -1 if options.compress_min_bytes is None else options.compress_min_bytes,
                      options.priority)


def _backend_of(group):
    if group is None:
        group = dist.distributed_c10d._get_default_group()
    if hasattr(group, "_get_backend"):  # torch 2.x: a ProcessGroup holds a Backend per device
        return group._get_backend(torch.device("cpu"))
    return group


def compression_stats(group=None):
    """The compression counters of a braid group's communicator (braidCompressStats)."""
    return _C._compression_stats(_backend_of(group))


def _register():
    try:
        dist.Backend.register_backend("braid", _create_backend, extended_api=True, devices=["cpu"])
    except TypeError:  # torch 1.x: no devices argument
        dist.Backend.register_backend("braid", _create_backend, extended_api=True)


_register()
