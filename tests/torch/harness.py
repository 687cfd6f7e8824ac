"""Runs a function on N ranks, each a process (fork) with torch.distributed initialised on
127.0.0.1 through one of torch's rendezvous (env://, tcp:// or a TCPStore), and returns what
each rank returned. A rank that raises fails the run with its traceback; a run that outlives its
deadline is killed and fails naming the ranks that did not finish."""

import faulthandler
import multiprocessing
import os
import queue as queue_module
import socket
import sys
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

import braid_torch  # noqa: F401  (registers the "braid" backend)

INIT_METHODS = ("env", "tcp", "store")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn, rank, world, port, init, backend, pg_timeout, pg_options, args, queue, deadline_s):
    faulthandler.dump_traceback_later(max(deadline_s - 5, 1))  # a hung rank shows where it is
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                          WORLD_SIZE=str(world), NCCL_SOCKET_IFNAME="lo", GLOO_SOCKET_IFNAME="lo")
        torch.set_num_threads(1)
        kwargs = dict(backend=backend, timeout=pg_timeout)
        if pg_options is not None:
            kwargs["pg_options"] = pg_options
        if init == "env":
            dist.init_process_group(init_method="env://", **kwargs)
        elif init == "tcp":
            dist.init_process_group(init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world, **kwargs)
        else:
            store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timeout=pg_timeout)
            dist.init_process_group(store=store, rank=rank, world_size=world, **kwargs)
        result = fn(rank, world, *args)
        dist.destroy_process_group()
        queue.put((rank, True, result))
    except BaseException:  # noqa: B902  (report everything, KeyboardInterrupt included)
        queue.put((rank, False, traceback.format_exc()))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def run(fn, world, init="env", backend="braid", deadline_s=60.0, pg_timeout=timedelta(seconds=60),
        pg_options=None, args=()):
    """fn(rank, world, *args) on `world` ranks; returns [result of rank 0, ...]. Results travel
    pickled through a queue: return plain values (lists, not tensors, which torch would send as
    shared memory that dies with the rank)."""
    assert init in INIT_METHODS, init
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_child, args=(fn, r, world, port, init, backend, pg_timeout, pg_options, args, queue,
                                                    deadline_s))
             for r in range(world)]
    for p in procs:
        p.start()
    results, errors = {}, {}
    end = time.monotonic() + deadline_s
    try:
        while len(results) + len(errors) < world:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                rank, ok, value = queue.get(timeout=min(left, 1.0))
            except queue_module.Empty:  # check for ranks that died without reporting
                dead = [r for r, p in enumerate(procs) if not p.is_alive() and r not in results and r not in errors]
                if dead and queue.empty():
                    time.sleep(0.5)
                    if queue.empty():
                        for r in dead:
                            errors[r] = f"rank {r} exited with code {procs[r].exitcode} without reporting"
                continue
            (results if ok else errors)[rank] = value
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
    missing = [r for r in range(world) if r not in results and r not in errors]
    if errors or missing:
        text = "".join(f"--- rank {r} failed:\n{errors[r]}\n" for r in sorted(errors))
        if missing:
            text += f"--- ranks {missing} did not finish within {deadline_s} s\n"
        raise AssertionError(text)
    return [results[r] for r in range(world)]


def report(failures, summary):
    """Prints each failure and a summary line ending in how many failed; the exit code."""
    for f in failures:
        print("FAIL", f)
    print(f"{summary}, {len(failures)} failed")
    return 1 if failures else 0


def rank_failures(results):
    """[["text", ...] per rank] as one list of "rank r: text"."""
    return [f"rank {r}: {f}" for r, fs in enumerate(results) for f in fs]


def parse_world(argv, default=2):
    """`--world N` from argv."""
    if "--world" in argv:
        return int(argv[argv.index("--world") + 1])
    return default
