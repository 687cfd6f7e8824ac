#!/usr/bin/env python3
"""Side-by-side collective benchmark: Braid against OpenMPI and Gloo, with memcpy as the yardstick.

Runs, one after another and with the same ranks and sizes (AllReduce, the default --coll):
  Braid    tools/braidrun -np N bench/perf/all_reduce_perf   (float, sum)
  OpenMPI  mpirun -np N bench/mpi/mpi_coll_perf -C allreduce  (MPI_Allreduce, float, sum)
  Gloo     bench/gloo/gloo_coll_perf.py --coll allreduce --np N (torch.distributed "gloo")
  memcpy   bench/memcpy-rate                                   (one thread, and all cores at once)
parses their tables, prints one combined table and writes it as markdown to
bench/results/<name>.md with the command line, date, machine, versions and how each baseline
was run (bench/report.py writes it).

--coll NAME compares another collective (allgather, reducescatter, broadcast, reduce, alltoall,
gather, scatter, sendrecv): Braid's <name>_perf, mpi/mpi_coll_perf -C NAME and
gloo/gloo_coll_perf.py --coll NAME, each with its own busbw formula. --coll all runs every
collective in turn into one results file, one table per collective; --coll a,b,c those named.

--algos auto,ring,direct runs Braid once per algorithm (all_reduce_perf -A NAME -P 1: a
communicator with BRAID_ALGO=NAME; auto leaves the choice to Braid), each as its own column group
(Braid/auto, Braid/ring, ...), and adds a table of the cost model's predicted time
(ncclGroupSimulateEnd) against the measured one. A forced name that does not apply at a size
(direct above BRAID_DIRECT_MAX_BYTES, a name Braid does not know) runs Braid's own choice there:
such cells name the algorithm that ran, e.g. "2.31 [ring]".

For the collectives that only move data (AllGather, Broadcast, AlltoAll, Gather, Scatter,
SendRecv) the table adds a copy bound: the busbw at which the bytes every rank's output needs
(out-of-place: all of it; in-place: all but what is already there) would be copied at the rate
of memcpy on all cores at once (memcpy-rate -p <cores>). No implementation that copies with the
CPU passes it by more than memcpy's own margin (streaming stores: ~10%); where the buffers fit
in the caches (a few MiB) it is rough.

--rounds K runs the baselines in turn K times (Braid, OpenMPI, Gloo, memcpy, then again) and
reports, per baseline and size, the round with the median time: this machine's memory
bandwidth drifts by 2x over minutes, and a single pass can catch one baseline in a slow minute.
With --np 2,4 each rank count runs its rounds in turn.

--register gives Braid's perf binaries -R 1: buffers from ncclMemAlloc, which peers on the host
read in place (zero-copy) instead of through a shared-memory ring.

--np 2,4 runs everything for each rank count in turn, one results file with a section per rank
count. --plot [FILE.png] draws busbw against
size, a panel per rank count and a line per baseline (bench/plot_busbw.py, from FILE.json, the
table data written beside it; run with --python where this interpreter lacks matplotlib).

OpenMPI: where ranks outnumber the cores, mpirun gets --mca mpi_yield_when_idle 1 (a waiting rank
yields its core to the rank it waits for, as a user with fewer cores than ranks would set it);
mpi_coll_perf prints the value its ranks run with, and the results say it.

--netcluster "ARGS" runs Braid, OpenMPI (--mpi) and Gloo across `tools/netcluster ARGS` (an
emulated multi-rack cluster; root) instead of on one host, with --np the cluster's ranks, and
leaves memcpy out. --uplink-gbit G then adds, for AllReduce, the bound the racks' uplinks set
(two racks: size x 8 / (G x 1e9) s) as a share of Braid's time. --compress none,int8,topk:0.01
(AllReduce) runs Braid once per mode (all_reduce_perf -Z MODE), each a column group with the
relative L2 error of its accuracy table and its speed against Braid/none of the same round.

It builds nothing: build first (cmake --build build --target braidrun perf mpi_coll_perf
memcpy-rate). A baseline that is not built or not installed, or a collective a
baseline lacks (Gloo's reduce_scatter on older torch), is reported as "not available"; one that
fails is reported as failed, and the comparison goes on.
"""
import argparse
import datetime
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
from cluster import Topology  # noqa: E402  (bench/cluster.py: --netcluster)
from report import (braid_keys, doc_header, draw, headline, human, label, markdown, plot_document,  # noqa: E402
                    plot_panel, rank_counts, section, text_table)

OTHERS = ("mpi", "gloo")


class Coll:
    """One collective: its title, Braid's perf binary, the busbw formula the tables use, and for
    one that only moves data, `copies(n, in_place)`: (bytes all ranks' outputs need copied, per
    byte of size; busbw per byte of size per second), so that the copy bound is rate x the
    second / the first."""

    def __init__(self, title, perf, busbw, factor, reduces=False, rooted=False, copies=None):
        self.title, self.perf, self.busbw, self.factor = title, perf, busbw, factor
        self.reduces, self.rooted, self.copies = reduces, rooted, copies


_SHARE = "size / time x (n-1)/n, size being the whole gathered or scattered buffer"
_TWICE, _PART, _ONE = (lambda n: 2 * (n - 1) / n), (lambda n: (n - 1) / n), (lambda n: 1.0)  # busbw / algbw


# Bytes to copy, per byte of size, into every rank's output (size bytes each; in place, a rank's
# own block is already there), and busbw per byte of size per second.
def _every_output(n, in_place):
    return (n - 1 if in_place else n), (n - 1) / n


def _root_output(n, in_place):  # Gather's root, or Scatter's n blocks of size / n
    return ((n - 1) / n if in_place else 1), (n - 1) / n


COLLS = {
    "allreduce": Coll("AllReduce", "all_reduce_perf", "size / time x 2(n-1)/n", _TWICE, reduces=True),
    "allgather": Coll("AllGather", "all_gather_perf", _SHARE, _PART, copies=_every_output),
    "reducescatter": Coll("ReduceScatter", "reduce_scatter_perf", _SHARE, _PART, reduces=True),
    "broadcast": Coll("Broadcast", "broadcast_perf", "size / time", _ONE, rooted=True,
                      copies=lambda n, in_place: ((n - 1 if in_place else n), 1)),
    "reduce": Coll("Reduce", "reduce_perf", "size / time", _ONE, reduces=True, rooted=True),
    "alltoall": Coll("AlltoAll", "alltoall_perf", _SHARE, _PART, copies=_every_output),
    "gather": Coll("Gather", "gather_perf", _SHARE, _PART, rooted=True, copies=_root_output),
    "scatter": Coll("Scatter", "scatter_perf", _SHARE, _PART, rooted=True, copies=_root_output),
    "sendrecv": Coll("SendRecv", "sendrecv_perf", "size / time (each rank sends to the next)", _ONE,
                     copies=lambda n, in_place: (n, 1)),
}
for _name, _coll in COLLS.items():
    _coll.name = _name


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in mult:
        return int(round(float(t[:-1]) * mult[t[-1]]))
    return int(t)


class Run:
    """One baseline's outcome: status is "ok", "not available" or "failed". A Braid run may force
    an algorithm (-A) or a compression mode (-Z); env holds variables set for cmd."""

    def __init__(self, key, cmd=None, env=None, algo=None, compress=None):
        self.key, self.cmd, self.env, self.algo, self.compress = key, cmd, env or {}, algo, compress
        self.status, self.why, self.version = "not available", "", ""
        self.rows = {}  # size -> dict(time_us, busbw, wrong) or dict(rate) for memcpy
        self.wrong = 0
        self.used = ""  # Braid's: what ran, per run of sizes (its "# Algorithm NAME used:" line)

    def shown(self):
        """The command as a shell would take it, its variables first."""
        return shlex.join([f"{k}={v}" for k, v in self.env.items()] + self.cmd) if self.cmd else ""


def strip_prefix(line):
    """Without the launcher's prefix: braidrun's and netcluster's "[r] ", mpirun --tag-output's
    "[job,r]<stdout>:"."""
    return re.sub(r"^(\[\d+\] |\[\d+,\d+\]<std(out|err)>:)", "", line)


def parse_perf_table(text, place, sizes):
    """Rows of an all_reduce_perf-style table: nominal size -> time, busbw, #wrong of one column
    group. Rows are matched to the requested sizes in order: a gathered or scattered size is
    rounded down to whole blocks per rank, so the printed size may be a little smaller."""
    rows, first = [], 5 if place == "out" else 9
    for raw in text.splitlines():
        line = strip_prefix(raw).strip()
        if line.startswith("# Predicted time"):
            break  # the perf binary's -P table follows its measurements
        if not line or line.startswith("#"):
            continue
        f = line.split()
        if len(f) < 13 or not f[0].isdigit():
            continue
        wrong = f[first + 3]
        rows.append({
            "size": int(f[0]),
            "time_us": float(f[first]),
            "busbw": float(f[first + 2]),
            "wrong": int(wrong) if wrong.isdigit() else 0,
            "wrong_all": sum(int(x) for x in (f[8], f[12]) if x.isdigit()),
        })
    return dict(zip(sizes, rows))


def parse_predict_table(text, sizes, rows):
    """Adds "used" and "pred_us" to `rows` from a perf binary's -P table (one -A name: key
    columns, then used, predicted, measured, ratio)."""
    found, seen = [], False
    for raw in text.splitlines():
        line = strip_prefix(raw).strip()
        if line.startswith("# Predicted time"):
            seen = True
        if not seen or not line or line.startswith("#"):
            continue
        f = line.split()
        if len(f) >= 9 and f[0].isdigit():
            pred = None if f[6] == "N/A" else float(f[6])
            found.append({"used": f[5], "pred_us": pred, "meas_us": float(f[7])})
    for size, extra in zip(sizes, found):
        if size in rows:
            rows[size].update(extra)


def parse_memcpy_table(text):
    rows = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[0].isdigit():
            rows[int(f[0])] = {"rate": float(f[2])}
    return rows


def parse_accuracy_table(text, sizes, rows):
    """Adds "rel_l2" (None where N/A) and "effbusbw" to `rows` from all_reduce_perf -Z's accuracy
    table ("# Accuracy, compression MODE: ..." and rows of size, count, type, redop, effbusbw, rel
    L2, max abs, cosine, bias, each behind "#")."""
    found, seen = {}, False
    for raw in text.splitlines():
        line = strip_prefix(raw).strip()
        if line.startswith("# Accuracy, compression"):
            seen = True
            continue
        f = line.lstrip("#").split()
        if seen and len(f) == 9 and f[0].isdigit():
            found[int(f[0])] = {"effbusbw": float(f[4]), "rel_l2": None if f[5] == "N/A" else float(f[5])}
    for size in sizes:
        if size in rows and rows[size]["size"] in found:
            rows[size].update(found[rows[size]["size"]])


def header_version(text, pattern):
    for raw in text.splitlines():
        m = re.match(pattern, strip_prefix(raw))
        if m:
            return m.group(1).strip()
    return ""


def execute(run, args, limit=None):
    """Runs run.cmd in its own session (so a hung run's ranks can all be killed); returns its
    stdout, or None after marking the run failed."""
    limit = limit or args.timeout
    print(f"== {label(run.key)}: {run.shown()}", file=sys.stderr, flush=True)
    try:
        p = subprocess.Popen(run.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                             start_new_session=True, env=dict(os.environ, **run.env))
    except OSError as e:
        run.status, run.why = "not available", str(e)
        return None
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(p.pid, sig)
                p.communicate(timeout=wait)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        run.status, run.why = "failed", f"no result within {limit} s"
        return None
    if p.returncode != 0:
        tail = [l for l in (err or "").splitlines() if l.strip()][-3:]
        run.status = "failed"
        run.why = f"exit code {p.returncode}" + (": " + " | ".join(tail) if tail else "")
        # A table with wrong values still counts: its rows are the evidence.
        if "Out of bounds values" not in out:
            return None
    else:
        run.status = "ok"
    return out


def perf_args(args, coll="allreduce"):
    extra = ["-r", str(args.root)] if COLLS[coll].rooted else []
    return ["-b", str(args.min), "-e", str(args.max), "-f", str(args.factor), "-n", str(args.iters),
            "-w", str(args.warmup), "-c", str(args.check)] + extra


def unlaunchable(args, run, needs):
    """Why `run` cannot start (a file not built, netcluster without root), set as run.why; or ""."""
    missing = [str(p) for p in needs if not Path(p).exists()]
    if missing:
        run.why = "not built: " + ", ".join(missing)
    elif args.cluster and os.geteuid() != 0:
        run.why = "tools/netcluster needs root"
    return run.why


def run_braid(args, coll, algo=None, compress=None, extra=()):
    """Braid's perf binary; with `algo` (one of --algos) forced to that algorithm, -P 1 adding the
    prediction and the algorithm that ran; with `compress` (one of --compress) under -Z MODE;
    `extra` arguments last (bench/ab.py's variants)."""
    build = Path(args.build)
    launcher, perf = build / "tools" / "braidrun", build / "bench" / "perf" / COLLS[coll].perf
    pick = (["-A", algo] if algo else []) + (["-P", "1"] if algo and not compress else [])
    pick += (["-Z", compress] if compress else []) + (["-R", "1"] if args.register else []) + list(extra)
    cmd = [str(perf)] + perf_args(args, coll) + pick
    if args.cluster:
        cmd, needs = args.cluster.command(cmd, timeout=args.timeout), [perf]
    else:
        cmd, needs = [str(launcher), "-np", str(args.np), "--timeout", str(args.timeout), "--"] + cmd, [launcher, perf]
    name = compress or algo
    run = Run(f"braid/{name}" if name else "braid", cmd, algo=algo, compress=compress)
    if unlaunchable(args, run, needs):
        return run
    out = execute(run, args, limit=args.timeout + 30)  # braidrun's (netcluster's) own --timeout goes first
    if out is not None:
        run.rows = parse_perf_table(out, args.place, args.sizes)
        run.version = header_version(out, r"# nccl version (.*)")
        run.used = "; ".join(m.group(1) for m in re.finditer(r"# Algorithm \S+ used: (.*)", out))
        if algo and not compress:
            parse_predict_table(out, args.sizes, run.rows)
        if compress:
            parse_accuracy_table(out, args.sizes, run.rows)
    return run


def mpi_yields(args):
    """Whether OpenMPI gets mpi_yield_when_idle=1: where the ranks outnumber the cores, a rank that
    busy-polls while it waits keeps the core from the rank it waits for."""
    return args.np > args.cores


def run_mpi(args, coll):
    binary = Path(args.build) / "bench" / "mpi" / "mpi_coll_perf"
    cmd, env = [str(binary), "-C", coll] + perf_args(args, coll), {}
    mpirun = shutil.which("mpirun")
    if args.cluster:
        # netcluster builds mpirun's command line; OpenMPI reads OMPI_MCA_* from the environment.
        cmd = args.cluster.command(cmd, mpi=True, timeout=args.timeout)
        env = {"OMPI_MCA_mpi_yield_when_idle": "1"} if mpi_yields(args) else {}
    else:
        cmd = [mpirun or "mpirun", "--allow-run-as-root", "--oversubscribe"] + \
            (["--mca", "mpi_yield_when_idle", "1"] if mpi_yields(args) else []) + ["-np", str(args.np)] + cmd
    run = Run("mpi", cmd, env)
    if not mpirun:
        run.why = "mpirun not found"
        return run
    if unlaunchable(args, run, [binary]):
        run.why += "" if binary.exists() else " (needs MPI at configure time)"
        return run
    out = execute(run, args, limit=args.timeout + 30)
    if out is not None:
        run.rows = parse_perf_table(out, args.place, args.sizes)
        run.version = header_version(out, r"# (Open MPI v[^,]*|MPICH.*)")
        ranks_yield = header_version(out, r"# (mpi_yield_when_idle .*)")
        run.version += f"; {ranks_yield}" if ranks_yield else ""
    return run


def run_gloo(args, coll):
    script = BENCH / "gloo" / "gloo_coll_perf.py"
    cmd = [args.python, str(script), "--coll", coll] + perf_args(args, coll)
    if args.cluster:
        cmd = args.cluster.command(cmd, timeout=args.timeout)  # netcluster starts the ranks
    else:
        cmd[2:2] = ["--np", str(args.np)]
    run = Run("gloo", cmd)
    if not shutil.which(args.python) and not Path(args.python).exists():
        run.why = f"{args.python} not found"
        return run
    if unlaunchable(args, run, []):
        return run
    out = execute(run, args, limit=args.timeout + 30)
    if run.status == "failed" and run.why.startswith("exit code 3"):
        run.status = "not available"  # the script's code for "no torch or no gloo" (or no such collective)
    if out is not None:
        run.rows = parse_perf_table(out, args.place, args.sizes)
        run.version = "torch " + header_version(out, r"# torch ([^,]*)")
    return run


def run_memcpy(args, threads=1):
    binary = Path(args.build) / "bench" / "memcpy-rate"
    run = Run("memcpy" if threads == 1 else "memcpy-all", [str(binary), "-b", str(args.min), "-e", str(args.max), "-f", str(args.factor)]
              + (["-p", str(threads)] if threads > 1 else []))
    if not binary.exists():
        run.why = f"not built: {binary}"
        return run
    out = execute(run, args)
    if out is not None:
        run.rows = parse_memcpy_table(out)
    return run


def median(values):
    """The middle value; of an even count, the lower of the two middle ones (a figure that was
    measured, not a mean of two)."""
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def cell(run, size, field, fmt):
    if run.status == "not available":
        return "n/a"
    row = run.rows.get(size)
    return fmt.format(row[field]) if row else "-"


def time_cell(run, size):
    """Microseconds, with two decimals where a tenth would blur the comparison (small sizes)."""
    row = run.rows.get(size) if run.status == "ok" else None
    if not row:
        return cell(run, size, "time_us", "{:.1f}")
    return f"{row['time_us']:.2f}" if row["time_us"] < 10 else f"{row['time_us']:.1f}"


def speedup(braid_row, other_rows):
    """Braid's busbw over the best other's, as "1.23x": from the times (the same size and busbw
    formula for all, and a time has more digits than a small size's busbw), else the busbw.
    With rounds, the median over rounds of that round's ratio: the runs of one round are seconds
    apart, so a round pairs them under the same machine weather, where the median rounds of two
    baselines may come from different weather (the machine's speed flips between modes)."""
    if not braid_row or not other_rows:
        return "-"
    rounds = braid_row.get("rounds_us")
    if rounds and all(len(r.get("rounds_us", [])) == len(rounds) for r in other_rows) and min(rounds) > 0:
        return f"{median(min(r['rounds_us'][i] for r in other_rows) / rounds[i] for i in range(len(rounds))):.2f}x"
    if braid_row.get("time_us", 0) > 0 and all(r.get("time_us", 0) > 0 for r in other_rows):
        return f"{min(r['time_us'] for r in other_rows) / braid_row['time_us']:.2f}x"
    best = max(r["busbw"] for r in other_rows)
    return f"{braid_row['busbw'] / best:.2f}x" if best else "-"


def memcpy_share(braid_row, memcpy_row):
    """Braid's busbw as a share of memcpy's rate, "41%"; with rounds, the median of each round's
    share (paired as in speedup())."""
    if not braid_row or not memcpy_row or memcpy_row["rate"] <= 0:
        return "-"
    b, m = braid_row.get("rounds"), memcpy_row.get("rounds")
    if b and m and len(b) == len(m) and min(m) > 0:
        return f"{100 * median(x / y for x, y in zip(b, m)):.0f}%"
    return f"{100 * braid_row['busbw'] / memcpy_row['rate']:.0f}%"


def busbw_cell(run, size):
    """busbw; a forced algorithm that did not run at this size names the one that did."""
    text = cell(run, size, "busbw", "{:.2f}")
    row, algo = run.rows.get(size), run.algo
    if row and algo not in (None, "auto") and row.get("used", algo) not in (algo, "?"):
        text += f" [{row['used']}]"
    return text


def bound_share(row, bound_us):
    """A lower bound on the time as a share of the measured time, "83%"."""
    return f"{100 * bound_us / row['time_us']:.0f}%" if row and row.get("time_us", 0) > 0 else "-"


def rel_l2_cell(run, size):
    row = run.rows.get(size)
    if not row or "rel_l2" not in row:
        return cell(run, size, "rel_l2", "{}")
    return "N/A" if row["rel_l2"] is None else f"{row['rel_l2']:.2e}"


def combine(args, coll, runs, sizes):
    """The one table of a collective: Braid's column groups (per --algos name or --compress
    mode), the uplink bound (--uplink-gbit), OpenMPI, Gloo, memcpy (where it ran) and the ratios."""
    keys, base = braid_keys(runs), headline(runs)
    braid, memcpy, every = runs[base], runs.get("memcpy"), runs.get("memcpy-all")
    copies = COLLS[coll].copies if every else None
    compressed = any(runs[k].compress for k in keys)
    bounded = args.uplink and coll == "allreduce" and args.cluster
    header = ["size"]
    for k in keys:
        header += [f"{label(k)} busbw", f"{label(k)} us"]
        if compressed:
            header += [f"{label(k)} rel L2"] + ([f"{label(k)} vs {label(base)}"] if k != base else [])
    if bounded:
        header += ["uplink bound us"] + [f"{label(k)} bound/measured" for k in keys]
    header += ["OpenMPI busbw", "OpenMPI us", "Gloo busbw", "Gloo us"] + (["memcpy GB/s"] if memcpy else [])
    header += ["Braid/best other"] + (["Braid/memcpy"] if memcpy else [])
    if copies:
        header += [f"memcpy x{args.cores} GB/s", "copy bound busbw", "Braid/bound", "OpenMPI/bound"]
    table = []
    for s in sizes:
        b = braid.rows.get(s)
        row = [human(s)]
        for k in keys:
            row += [busbw_cell(runs[k], s), time_cell(runs[k], s)]
            if compressed:
                row += [rel_l2_cell(runs[k], s)]
                row += [speedup(runs[k].rows.get(s), [b] if b else [])] if k != base else []
        if bounded:
            bound = args.cluster.uplink_bound_us(s, args.uplink)
            row += [f"{bound:.2f}" if bound < 10 else f"{bound:.1f}"] + [bound_share(runs[k].rows.get(s), bound)
                                                                         for k in keys]
        row += [cell(runs["mpi"], s, "busbw", "{:.2f}"), time_cell(runs["mpi"], s),
                cell(runs["gloo"], s, "busbw", "{:.2f}"), time_cell(runs["gloo"], s)]
        row += [cell(memcpy, s, "rate", "{:.2f}")] if memcpy else []
        row += [speedup(b, [runs[k].rows[s] for k in OTHERS if s in runs[k].rows])]
        row += [memcpy_share(b, memcpy.rows.get(s))] if memcpy else []
        if copies:
            volume, per = copies(args.np, args.place == "in")
            rate = every.rows.get(s, {}).get("rate")
            bound = rate * per / volume if rate else None
            mpi = runs["mpi"].rows.get(s)
            row += [cell(every, s, "rate", "{:.2f}"), f"{bound:.2f}" if bound else "-",
                    f"{100 * b['busbw'] / bound:.0f}%" if b and bound else "-",
                    f"{100 * mpi['busbw'] / bound:.0f}%" if mpi and bound else "-"]
        table.append(row)
    return header, table


def predictions(runs, sizes):
    """Per --algos run: the algorithm that ran, the cost model's time, the measured time and their
    ratio; None without --algos."""
    keys = [k for k in braid_keys(runs) if runs[k].algo and not runs[k].compress]
    if not keys:
        return None
    header = ["size"]
    for k in keys:
        header += [f"{label(k)} used", "predicted us", "measured us", "measured/predicted"]
    table = []
    for s in sizes:
        row = [human(s)]
        for k in keys:
            r = runs[k].rows.get(s)
            if not r:
                row += ["-"] * 4
                continue
            pred = r.get("pred_us")
            # The -P table's own measured column: out-of-place, like the prediction, whatever --place says.
            meas = r.get("meas_us", r["time_us"])
            ratio = f"{meas / pred:.2f}" if pred else "-"
            row += [r.get("used", "?"), f"{pred:.1f}" if pred is not None else "-", f"{meas:.1f}", ratio]
        table.append(row)
    return header, table


def settle(run):
    """A finished run with its count of wrong values; one that printed no table has failed."""
    run.wrong = sum(r.get("wrong_all", 0) for r in run.rows.values())
    if run.status == "ok" and not run.rows:
        run.status, run.why = "failed", "exit code 0, but no table of the sizes asked for in its output"
    return run


def median_row(rows, field):
    """The row with the median `field` (of an even count, the lower one)."""
    return sorted(rows, key=lambda row: row[field])[(len(rows) - 1) // 2]


def merge(rounds):
    """One baseline's runs from several rounds as one: per size the round with the median time
    (memcpy: the median rate), each row keeping every round's figure in "rounds"; the first
    failure's status, or "ok"."""
    if len(rounds) == 1:
        return rounds[0]
    first = rounds[0]
    merged = Run(first.key, first.cmd, first.env, first.algo, first.compress)
    bad = [r for r in rounds if r.status != "ok"]
    merged.status, merged.why = (bad[0].status, bad[0].why) if bad else ("ok", "")
    merged.version = next((r.version for r in rounds if r.version), "")
    merged.used = next((r.used for r in rounds if r.used), "")
    merged.wrong = sum(r.wrong for r in rounds)
    for size in sorted({s for r in rounds for s in r.rows}):
        rows = [r.rows[size] for r in rounds if size in r.rows]
        field = "rate" if "rate" in rows[0] else "time_us"
        merged.rows[size] = dict(median_row(rows, field))
        merged.rows[size]["rounds"] = [row["rate" if field == "rate" else "busbw"] for row in rows]
        if field == "time_us":
            merged.rows[size]["rounds_us"] = [row["time_us"] for row in rows]
    return merged


def compare(args, coll):
    """Runs the chosen baselines for one collective at args.np ranks (Braid once per --algos name
    or --compress mode), --rounds times in turn; returns (runs, header, table, predictions)."""
    chosen = {k.strip() for k in args.only.split(",") if k.strip()}
    if args.compress:
        algo = args.algos[0] if args.algos else None
        jobs = [(f"braid/{m}", lambda m=m: run_braid(args, coll, algo, m)) for m in args.compress]
    else:
        jobs = [(f"braid/{a}", lambda a=a: run_braid(args, coll, a)) for a in args.algos] or \
            [("braid", lambda: run_braid(args, coll))]
    jobs += [("mpi", lambda: run_mpi(args, coll)), ("gloo", lambda: run_gloo(args, coll))]
    if not args.cluster:
        jobs += [("memcpy", lambda: run_memcpy(args)), ("memcpy-all", lambda: run_memcpy(args, args.cores))]
    rounds = {key: [] for key, _ in jobs}
    for i in range(args.rounds):
        for key, fn in jobs:
            if re.split(r"[/-]", key)[0] in chosen:  # braid/ring: braid; memcpy-all: memcpy
                run = fn()
            else:
                run = Run(key)
                run.why = "not selected (--only)"
            rounds[key].append(settle(run))
            where = f" ({args.np} ranks" + (f", round {i + 1} of {args.rounds})" if args.rounds > 1 else ")")
            print(f"== {label(key)}{where}: {run.status}" + (f" ({run.why})" if run.why else ""), file=sys.stderr,
                  flush=True)
    runs = {key: merge(rs) for key, rs in rounds.items()}
    header, table = combine(args, coll, runs, args.sizes)
    return runs, header, table, predictions(runs, args.sizes)


def rank_list(text):
    nps = list(dict.fromkeys(int(n) for n in text.split(",") if n.strip()))
    if not nps or min(nps) < 1:
        raise ValueError
    return nps


COMPRESS_MODE = re.compile(r"none|int8|auto|topk(:(0?\.\d+|1(\.0*)?))?")  # all_reduce_perf -Z's


def size_steps(lo, hi, factor):
    sizes = []
    while lo <= hi:
        sizes.append(lo)
        lo *= factor
    return sizes


def parse_args(argv=None):
    """The command line, checked, with what follows from it: nps (the rank counts), cluster (a
    Topology or None), compress and algos (lists), sizes, cores, and build made absolute."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-np", "--np", help="ranks, or a comma list of rank counts run in turn, one section each "
                                         "(default 4; with --netcluster, the cluster's)")
    ap.add_argument("--coll", default="allreduce",
                    help="collective to compare (default allreduce), a comma list of them, or all: each in turn, "
                         "one file (" + ", ".join(COLLS) + ")")
    ap.add_argument("-b", "--min", type=parse_size, default=8, help="smallest size (default 8)")
    ap.add_argument("-e", "--max", type=parse_size, default=256 << 20, help="largest size (default 256M)")
    ap.add_argument("-f", "--factor", type=int, default=2, choices=(2, 4),
                    help="size step factor (default 2; from 8 B only 2 reaches 256 MiB)")
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-w", "--warmup", type=int, default=5)
    ap.add_argument("-c", "--check", type=int, default=1, choices=(0, 1))
    ap.add_argument("-r", "--root", type=int, default=0, help="root rank of broadcast, reduce, gather, scatter")
    ap.add_argument("--place", choices=("out", "in"), default="out", help="which columns to compare")
    ap.add_argument("--only", default="braid,mpi,gloo,memcpy", help="comma list of braid,mpi,gloo,memcpy")
    ap.add_argument("--algos", default="",
                    help="comma list of Braid algorithms (auto, ring, direct, ...): one Braid column group each, "
                         "plus the cost model's predictions; default: one Braid run, Braid's choice")
    ap.add_argument("--compress", default="",
                    help="AllReduce: comma list of Braid compression modes (none, int8, topk, topk:RATIO, auto): "
                         "one Braid run each (all_reduce_perf -Z MODE), with its relative L2 error")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the baselines in turn this many times and report each one's median (default 1)")
    ap.add_argument("--register", action="store_true",
                    help="Braid's buffers from ncclMemAlloc (perf -R 1): read in place by peers on the host")
    ap.add_argument("--netcluster", metavar="ARGS",
                    help="run every baseline across `tools/netcluster ARGS` (topology flags, e.g. \"--hosts 8 "
                         "--racks 2 --placement alternate\"; needs root) instead of on one host; memcpy is left out")
    ap.add_argument("--uplink-gbit", dest="uplink", type=float, metavar="G",
                    help="with --netcluster, AllReduce: a column of the time the racks' uplinks at G Gbit/s allow, "
                         "as a share of Braid's (G must be the cluster's uplink rate)")
    ap.add_argument("--plot", nargs="?", const="", metavar="FILE.png",
                    help="draw busbw against size, a panel per rank count (default FILE: <results>/<name>.png), "
                         "from FILE.json written beside it")
    ap.add_argument("--build", default=str(REPO / "build"), help="build folder (default <repo>/build)")
    ap.add_argument("--python", default="/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable,
                    help="python with torch, for Gloo (and matplotlib, for --plot, where this one lacks it)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per baseline run (default 900)")
    ap.add_argument("--name", help="results file name (default <coll>_np<N>_<date>)")
    ap.add_argument("--results", default=str(BENCH / "results"), help="folder for <name>.md")
    args = ap.parse_args(argv)
    unknown = [c for c in args.coll.split(",") if c.strip() and c.strip() not in COLLS and args.coll != "all"]
    if unknown or not args.coll.strip(","):
        ap.error(f"--coll {args.coll}: expected all or a comma list of " + ", ".join(COLLS))
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: expected 1 or more")
    try:
        args.nps = rank_list(args.np) if args.np else None
    except ValueError:
        ap.error(f"--np {args.np}: expected a rank count or a comma list of them")
    try:
        args.cluster = Topology(args.netcluster) if args.netcluster is not None else None
    except ValueError as e:
        ap.error(str(e))
    if args.cluster:
        if args.nps and args.nps != [args.cluster.ranks]:
            ap.error(f"--np {args.np}: the cluster has {args.cluster.ranks} ranks (hosts x --ranks-per-host)")
        args.nps = [args.cluster.ranks]
    args.nps = args.nps or [4]
    if args.uplink is not None:
        if not args.cluster:
            ap.error("--uplink-gbit needs --netcluster (the racks whose uplinks bound the time)")
        if args.cluster.racks < 2 or abs(args.uplink / args.cluster.uplink_gbit - 1) > 0.01:
            ap.error(f"--uplink-gbit {args.uplink:g}: the cluster's {args.cluster.racks} racks have uplinks of "
                     f"{args.cluster.uplink_gbit:.4g} Gbit/s")
    args.compress = list(dict.fromkeys(m.strip() for m in args.compress.split(",") if m.strip()))
    args.algos = list(dict.fromkeys(a.strip() for a in args.algos.split(",") if a.strip()))
    if args.compress:
        bad = [m for m in args.compress if not COMPRESS_MODE.fullmatch(m)]
        if bad or args.coll != "allreduce" or len(args.algos) > 1:
            ap.error(f"--compress {','.join(args.compress)}: AllReduce only, modes none, int8, topk, topk:RATIO or "
                     "auto, with at most one --algos name")
    args.sizes = size_steps(args.min, args.max, args.factor)
    args.np = args.nps[0]  # main() sets each in turn
    args.cores = len(os.sched_getaffinity(0))
    args.build = str(Path(args.build).resolve())  # netcluster's ranks (mpirun's, on other hosts) start elsewhere
    if "braid" in args.only and not (Path(args.build) / "bench" / "perf").is_dir():
        ap.error(f"--build {args.build}: no bench/perf there (tools/setup.sh builds build/release)")
    return args


def finish(path, text, bad):
    """Writes the results file; the exit code: 1 where a baseline had wrong values (`bad` names them)."""
    path.write_text(text)
    print(f"wrote {path}")
    if bad:
        print("wrong values from: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


def main():
    args = parse_args()
    now = datetime.datetime.now(datetime.timezone.utc)
    when = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    command = shlex.join([sys.executable] + sys.argv)
    colls = list(COLLS) if args.coll == "all" else [c.strip() for c in args.coll.split(",") if c.strip()]
    sections, panels, bad, gloo = [], [], [], ""
    for args.np in args.nps:
        for coll in colls:
            runs, header, table, pred = compare(args, coll)
            heading = ([f"{args.np} ranks"] if len(args.nps) > 1 else []) + \
                ([COLLS[coll].title] if len(colls) > 1 else [])
            if heading:
                print("\n" + ", ".join(heading))
            print(text_table(header, table))
            if pred:
                print("\nBraid: predicted (ncclGroupSimulateEnd) vs measured, out-of-place")
                print(text_table(*pred))
            c = COLLS[coll]
            sections.append((args.np, c, section(args, c, runs, header, table, pred)))
            panels.append(plot_panel(args, c, runs, args.sizes, ", ".join(heading) or rank_counts([args.np])))
            bad += [f"{label(k)} ({COLLS[coll].title}, {args.np} ranks)" for k, r in runs.items() if r.wrong]
            gloo = gloo or (runs["gloo"].version if runs["gloo"].status == "ok" else "")

    where = (["compress"] if args.compress else []) + (["netcluster"] if args.cluster else [])
    name = args.name or "_".join([args.coll.replace(",", "-")] + where +
                                 ["np" + "-".join(map(str, args.nps)), now.strftime("%Y%m%d-%H%M")])
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.md"
    plot = None
    if args.plot is not None:
        png = Path(args.plot or results / f"{name}.png").resolve()
        if draw(args, plot_document(args, sections, panels), png):
            plot = os.path.relpath(png, path.parent.resolve())
            print(f"wrote {png} (data: {png.with_suffix('.json')})")
    return finish(path, markdown(args, sections, doc_header(args, when, command, gloo), plot), bad)


if __name__ == "__main__":
    sys.exit(main())
