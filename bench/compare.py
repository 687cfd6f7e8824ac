#!/usr/bin/env python3
"""Side-by-side collective benchmark: Braid against OpenMPI and Gloo, with memcpy as the yardstick.

Runs, one after another and with the same ranks and sizes (AllReduce, the default --coll):
  Braid    tools/braidrun -np N bench/perf/all_reduce_perf   (float, sum)
  OpenMPI  mpirun -np N bench/mpi/mpi_coll_perf -C allreduce  (MPI_Allreduce, float, sum)
  Gloo     bench/gloo/gloo_coll_perf.py --coll allreduce --np N (torch.distributed "gloo")
  memcpy   bench/memcpy-rate                                   (one thread, and all cores at once)
parses their tables, prints one combined table and writes it as markdown to
bench/results/<name>.md with the command line, date, machine and versions.

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

--register gives Braid's perf binaries -R 1: buffers from ncclMemAlloc, which peers on the host
read in place (zero-copy) instead of through a shared-memory ring.

It builds nothing: build first (cmake --build build --target braidrun perf mpi_coll_perf
memcpy-rate). A baseline that is not built or not installed, or a collective a
baseline lacks (Gloo's reduce_scatter on older torch), is reported as "not available"; one that
fails is reported as failed, and the comparison goes on.
"""
import argparse
import datetime
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OTHERS = ("mpi", "gloo")
LABEL = {"braid": "Braid", "mpi": "OpenMPI", "gloo": "Gloo", "memcpy": "memcpy", "memcpy-all": "memcpy, all cores"}


def label(key):
    """"braid/ring" (one of --algos) reads "Braid/ring"."""
    base, _, algo = key.partition("/")
    return LABEL[base] + (f"/{algo}" if algo else "")


class Coll:
    """One collective: its title, Braid's perf binary, the busbw formula the tables use, and for
    one that only moves data, `copies(n, in_place)`: (bytes all ranks' outputs need copied, per
    byte of size; busbw per byte of size per second), so that the copy bound is rate x the
    second / the first."""

    def __init__(self, title, perf, busbw, reduces=False, rooted=False, copies=None):
        self.title, self.perf, self.busbw = title, perf, busbw
        self.reduces, self.rooted, self.copies = reduces, rooted, copies


_SHARE = "size / time x (n-1)/n, size being the whole gathered or scattered buffer"


# Bytes to copy, per byte of size, into every rank's output (size bytes each; in place, a rank's
# own block is already there), and busbw per byte of size per second.
def _every_output(n, in_place):
    return (n - 1 if in_place else n), (n - 1) / n


def _root_output(n, in_place):  # Gather's root, or Scatter's n blocks of size / n
    return ((n - 1) / n if in_place else 1), (n - 1) / n


COLLS = {
    "allreduce": Coll("AllReduce", "all_reduce_perf", "size / time x 2(n-1)/n", reduces=True),
    "allgather": Coll("AllGather", "all_gather_perf", _SHARE, copies=_every_output),
    "reducescatter": Coll("ReduceScatter", "reduce_scatter_perf", _SHARE, reduces=True),
    "broadcast": Coll("Broadcast", "broadcast_perf", "size / time", rooted=True,
                      copies=lambda n, in_place: ((n - 1 if in_place else n), 1)),
    "reduce": Coll("Reduce", "reduce_perf", "size / time", reduces=True, rooted=True),
    "alltoall": Coll("AlltoAll", "alltoall_perf", _SHARE, copies=_every_output),
    "gather": Coll("Gather", "gather_perf", _SHARE, rooted=True, copies=_root_output),
    "scatter": Coll("Scatter", "scatter_perf", _SHARE, rooted=True, copies=_root_output),
    "sendrecv": Coll("SendRecv", "sendrecv_perf", "size / time (each rank sends to the next)",
                     copies=lambda n, in_place: (n, 1)),
}


def parse_size(text):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    if t and t[-1] in mult:
        return int(round(float(t[:-1]) * mult[t[-1]]))
    return int(t)


def human(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


class Run:
    """One baseline's outcome: status is "ok", "not available" or "failed"."""

    def __init__(self, key, cmd=None):
        self.key, self.cmd = key, cmd
        self.status, self.why, self.version = "not available", "", ""
        self.rows = {}  # size -> dict(time_us, busbw, wrong) or dict(rate) for memcpy
        self.wrong = 0


def strip_prefix(line):
    # braidrun's "[r] " prefix
    return re.sub(r"^\[\d+\] ", "", line)


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
    print(f"== {label(run.key)}: {shlex.join(run.cmd)}", file=sys.stderr, flush=True)
    try:
        p = subprocess.Popen(run.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                             start_new_session=True)
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


def run_braid(args, coll, algo=None):
    """Braid's perf binary; with `algo` (one of --algos) forced to that algorithm, -P 1 adding the
    prediction and the algorithm that ran."""
    build = Path(args.build)
    launcher, perf = build / "tools" / "braidrun", build / "bench" / "perf" / COLLS[coll].perf
    pick = ["-A", algo, "-P", "1"] if algo else []
    pick += ["-R", "1"] if args.register else []
    run = Run(f"braid/{algo}" if algo else "braid",
              [str(launcher), "-np", str(args.np), "--timeout", str(args.timeout), "--", str(perf)]
              + perf_args(args, coll) + pick)
    missing = [str(p) for p in (launcher, perf) if not p.exists()]
    if missing:
        run.why = "not built: " + ", ".join(missing)
        return run
    out = execute(run, args, limit=args.timeout + 30)  # braidrun's own --timeout goes first
    if out is not None:
        run.rows = parse_perf_table(out, args.place, args.sizes)
        run.version = header_version(out, r"# nccl version (.*)")
        if algo:
            parse_predict_table(out, args.sizes, run.rows)
    return run


def run_mpi(args, coll):
    build = Path(args.build)
    name, pick = "mpi_coll_perf", ["-C", coll]
    binary = build / "bench" / "mpi" / name
    mpirun = shutil.which("mpirun")
    run = Run("mpi", [mpirun or "mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(args.np),
                      str(binary)] + pick + perf_args(args, coll))
    if not mpirun:
        run.why = "mpirun not found"
        return run
    if not binary.exists():
        run.why = f"not built: {binary} (needs MPI at configure time)"
        return run
    out = execute(run, args)
    if out is not None:
        run.rows = parse_perf_table(out, args.place, args.sizes)
        run.version = header_version(out, r"# (Open MPI v[^,]*|MPICH.*)")
    return run


def run_gloo(args, coll):
    name, pick = "gloo_coll_perf.py", ["--coll", coll]
    script = BENCH / "gloo" / name
    run = Run("gloo", [args.python, str(script), "--np", str(args.np)] + pick + perf_args(args, coll))
    if not shutil.which(args.python) and not Path(args.python).exists():
        run.why = f"{args.python} not found"
        return run
    out = execute(run, args)
    if run.status == "failed" and run.why.startswith("exit code 3"):
        run.status = "not available"  # the script's code for "no torch or no gloo" (or no such collective)
    if out is not None:
        run.rows = parse_perf_table(out, args.place, args.sizes)
        run.version = "torch " + header_version(out, r"# torch ([^,]*),")
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


def machine():
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))
        mem = f", {kb / (1 << 20):.0f} GiB memory"
    except (OSError, AttributeError):
        pass
    return f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), {model}{mem}, " \
           f"{platform.system()} {platform.release()}"


def git_revision():
    try:
        rev = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        return rev or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def cell(run, size, field, fmt):
    if run.status == "not available":
        return "n/a"
    row = run.rows.get(size)
    return fmt.format(row[field]) if row else "-"


def braid_keys(runs):
    """Braid's runs in column order: "braid", or one per --algos name."""
    return [k for k in runs if k.split("/")[0] == "braid"]


def headline(runs):
    """The Braid run the ratio columns use: Braid's own choice (auto) where it ran, else the first."""
    keys = braid_keys(runs)
    return "braid/auto" if "braid/auto" in keys else keys[0]


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
        ratios = sorted(min(r["rounds_us"][i] for r in other_rows) / rounds[i] for i in range(len(rounds)))
        return f"{ratios[(len(ratios) - 1) // 2]:.2f}x"
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
        shares = sorted(x / y for x, y in zip(b, m))
        return f"{100 * shares[(len(shares) - 1) // 2]:.0f}%"
    return f"{100 * braid_row['busbw'] / memcpy_row['rate']:.0f}%"


def busbw_cell(run, size):
    """busbw; a forced algorithm that did not run at this size names the one that did."""
    text = cell(run, size, "busbw", "{:.2f}")
    row = run.rows.get(size)
    algo = run.key.partition("/")[2]
    if row and algo not in ("", "auto") and row.get("used", algo) not in (algo, "?"):
        text += f" [{row['used']}]"
    return text


def combine(args, coll, runs, sizes):
    braid, memcpy, every = runs[headline(runs)], runs["memcpy"], runs["memcpy-all"]
    copies = COLLS[coll].copies
    header = ["size"]
    for k in braid_keys(runs):
        header += [f"{label(k)} busbw", f"{label(k)} us"]
    header += ["OpenMPI busbw", "OpenMPI us", "Gloo busbw", "Gloo us", "memcpy GB/s", "Braid/best other",
               "Braid/memcpy"]
    if copies:
        header += [f"memcpy x{args.cores} GB/s", "copy bound busbw", "Braid/bound", "OpenMPI/bound"]
    table = []
    for s in sizes:
        b = braid.rows.get(s)
        ratio = speedup(b, [runs[k].rows[s] for k in OTHERS if s in runs[k].rows])
        mc = memcpy.rows.get(s)
        pct = memcpy_share(b, mc)
        row = [human(s)]
        for k in braid_keys(runs):
            row += [busbw_cell(runs[k], s), time_cell(runs[k], s)]
        row += [cell(runs["mpi"], s, "busbw", "{:.2f}"), time_cell(runs["mpi"], s),
                cell(runs["gloo"], s, "busbw", "{:.2f}"), time_cell(runs["gloo"], s),
                cell(memcpy, s, "rate", "{:.2f}"), ratio, pct]
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
    keys = [k for k in braid_keys(runs) if "/" in k]
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


def text_table(header, table):
    widths = [max(len(str(r[i])) for r in [header] + table) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(header, widths))]
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in table]
    return "\n".join(lines)


def doc_header(args, when, command):
    # Settings that change what Braid does travel with the results, so the command reproduces them.
    settings = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(("BRAID_", "NCCL_")))
    lines = [f"- command: `{' '.join(settings + [command])}`",
             f"- date: {when}",
             f"- machine: {machine()}",
             f"- source: {git_revision()}"]
    return lines


def section(args, coll, runs, header, table, pred=None):
    """The settings line, the baselines and the combined table of one collective."""
    c = COLLS[coll]
    place = "out-of-place" if args.place == "out" else "in-place"
    kind = "float sum" if c.reduces else "float"
    if c.rooted:
        kind += f", root {args.root}"
    buffers = "; Braid's buffers from ncclMemAlloc (-R 1)" if args.register else ""
    out = [f"- ranks: {args.np} on one host; {kind}{buffers}; sizes {human(args.min)} to {human(args.max)}, factor "
           f"{args.factor}; {args.iters} timed iterations after {args.warmup} warm-up; data check "
           f"{'on' if args.check else 'off'}; the {place} columns",
           f"- busbw = {c.busbw} (GB/s = 1e9 B/s); memcpy is one thread copying `size` bytes; "
           "Braid/best other compares busbw with the faster of OpenMPI and Gloo (computed from the times, "
           "which have more digits; with rounds, the median of the rounds' own ratios); Braid/memcpy is Braid's "
           "busbw as a share of memcpy's rate (with rounds, likewise the median of each round's share)"]
    if args.rounds > 1:
        out += [f"- {args.rounds} rounds: the baselines ran in turn (Braid, OpenMPI, Gloo, memcpy, then again), so "
                "that the machine's drift reaches them alike; each cell is the round with the median time (memcpy: "
                "the median rate), and the last table has every round's figure"]
    if c.copies:
        volume, per = c.copies(args.np, args.place == "in")
        out += [f"- copy bound = memcpy x{args.cores} (that many threads copying at once, total rate) x {per:.3g} / "
                f"{volume:.3g}: the outputs need {volume:.3g} x size bytes copied, and busbw is {per:.3g} x size / "
                "time; Braid/bound and OpenMPI/bound are their busbw as a share of it"]
    if pred:
        out += [f"- Braid runs once per algorithm (`-A NAME`: BRAID_ALGO=NAME; auto: Braid chooses); the ratio "
                f"columns use {label(headline(runs))}; a cell marked [x] ran algorithm x because the forced one "
                "does not apply at that size"]
    out += ["", "| baseline | status | version | command |", "|---|---|---|---|"]
    for key, run in runs.items():
        status = run.status + (f" ({run.why})" if run.why else "")
        if run.wrong:
            status += f"; {run.wrong} WRONG values"
        cmd = f"`{shlex.join(run.cmd)}`" if run.cmd else ""
        out.append(f"| {label(key)} | {status.replace('|', '/')} | {run.version} | {cmd} |")
    out += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in table]
    if pred:
        ph, pt = pred
        out += ["", "Braid's cost model: the time `ncclGroupSimulateEnd` predicts for one out-of-place call "
                "against the measured out-of-place time; `used` is the algorithm that ran (from Braid's TUNING "
                "log).", "", "| " + " | ".join(ph) + " |", "|" + "---|" * len(ph)]
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in pt]
    rounds = spread(runs, args.sizes)
    if rounds:
        rh, rt = rounds
        out += ["", "Every round (busbw GB/s, and the times where busbw is below 0.1; memcpy: rate), "
                "in the order they ran:", "",
                "| " + " | ".join(rh) + " |", "|" + "---|" * len(rh)]
        out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rt]
    return out


def markdown(args, sections, when, command):
    """One collective: its title, then the run's details; several: a heading per collective."""
    if len(sections) == 1:
        (coll, lines), = sections.items()
        title = f"# {COLLS[coll].title}: Braid vs OpenMPI vs Gloo ({args.np} ranks)"
        return "\n".join([title, ""] + doc_header(args, when, command) + lines) + "\n"
    out = [f"# Every collective: Braid vs OpenMPI vs Gloo ({args.np} ranks)", ""] + doc_header(args, when, command)
    for coll, lines in sections.items():
        out += ["", f"## {COLLS[coll].title}", ""] + lines
    return "\n".join(out) + "\n"


def merge(rounds):
    """One baseline's runs from several rounds as one: per size the round with the median time
    (memcpy: the median rate), each row keeping every round's figure in "rounds"; the first
    failure's status, or "ok"."""
    if len(rounds) == 1:
        return rounds[0]
    first = rounds[0]
    merged = Run(first.key, first.cmd)
    bad = [r for r in rounds if r.status != "ok"]
    merged.status, merged.why = (bad[0].status, bad[0].why) if bad else ("ok", "")
    merged.version = next((r.version for r in rounds if r.version), "")
    merged.wrong = sum(r.wrong for r in rounds)
    for size in sorted({s for r in rounds for s in r.rows}):
        rows = [r.rows[size] for r in rounds if size in r.rows]
        field = "rate" if "rate" in rows[0] else "time_us"
        ordered = sorted(rows, key=lambda row: row[field])
        merged.rows[size] = dict(ordered[(len(ordered) - 1) // 2])
        merged.rows[size]["rounds"] = [row["rate" if field == "rate" else "busbw"] for row in rows]
        if field == "time_us":
            merged.rows[size]["rounds_us"] = [row["time_us"] for row in rows]
    return merged


def compare(args, coll):
    """Runs the chosen baselines for one collective (Braid once per --algos name), --rounds
    times in turn; returns (runs, header, table, predictions)."""
    chosen = {k.strip() for k in args.only.split(",") if k.strip()}
    jobs = [(f"braid/{a}", lambda a=a: run_braid(args, coll, a)) for a in args.algos] or \
        [("braid", lambda: run_braid(args, coll))]
    jobs += [("mpi", lambda: run_mpi(args, coll)), ("gloo", lambda: run_gloo(args, coll)),
             ("memcpy", lambda: run_memcpy(args)), ("memcpy-all", lambda: run_memcpy(args, args.cores))]
    rounds = {key: [] for key, _ in jobs}
    for i in range(args.rounds):
        for key, fn in jobs:
            if re.split(r"[/-]", key)[0] in chosen:  # braid/ring: braid; memcpy-all: memcpy
                run = fn()
            else:
                run = Run(key)
                run.why = "not selected (--only)"
            run.wrong = sum(r.get("wrong_all", 0) for r in run.rows.values())
            rounds[key].append(run)
            where = f" (round {i + 1} of {args.rounds})" if args.rounds > 1 else ""
            print(f"== {label(key)}{where}: {run.status}" + (f" ({run.why})" if run.why else ""), file=sys.stderr,
                  flush=True)
    runs = {key: merge(rs) for key, rs in rounds.items()}
    header, table = combine(args, coll, runs, args.sizes)
    return runs, header, table, predictions(runs, args.sizes)


def spread(runs, sizes):
    """With --rounds: every round's busbw (memcpy: rate) per baseline and size."""
    keys = [k for k, r in runs.items() if any("rounds" in row for row in r.rows.values())]
    if not keys:
        return None
    header = ["size"] + [label(k) for k in keys]
    def rounds(row):
        text = " / ".join(f"{x:.2f}" for x in row["rounds"])
        if max(row["rounds"]) < 0.1 and "rounds_us" in row:  # busbw this small has one digit or none
            text += " (" + " / ".join(f"{t:.2f}" for t in row["rounds_us"]) + " us)"
        return text
    table = [[human(s)] + [rounds(runs[k].rows[s]) if s in runs[k].rows else "-" for k in keys] for s in sizes]
    return header, table


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-np", "--np", type=int, default=4, help="ranks (default 4)")
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
    ap.add_argument("--rounds", type=int, default=1,
                    help="run the baselines in turn this many times and report each one's median (default 1)")
    ap.add_argument("--register", action="store_true",
                    help="Braid's buffers from ncclMemAlloc (perf -R 1): read in place by peers on the host")
    ap.add_argument("--build", default=str(REPO / "build"), help="build folder (default <repo>/build)")
    ap.add_argument("--python", default="/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable,
                    help="python with torch, for Gloo")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per baseline run (default 900)")
    ap.add_argument("--name", help="results file name (default <coll>_np<N>_<date>)")
    ap.add_argument("--results", default=str(BENCH / "results"), help="folder for <name>.md")
    args = ap.parse_args()
    unknown = [c for c in args.coll.split(",") if c.strip() and c.strip() not in COLLS and args.coll != "all"]
    if unknown or not args.coll.strip(","):
        ap.error(f"--coll {args.coll}: expected all or a comma list of " + ", ".join(COLLS))
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: expected 1 or more")

    now = datetime.datetime.now(datetime.timezone.utc)
    when = now.strftime("%Y-%m-%d %H:%M:%S UTC")
    command = shlex.join([sys.executable] + sys.argv)
    args.algos = list(dict.fromkeys(a.strip() for a in args.algos.split(",") if a.strip()))
    args.sizes = []
    s = args.min
    while s <= args.max:
        args.sizes.append(s)
        s *= args.factor

    args.cores = len(os.sched_getaffinity(0))
    colls = list(COLLS) if args.coll == "all" else [c.strip() for c in args.coll.split(",") if c.strip()]
    sections, bad = {}, []
    for coll in colls:
        runs, header, table, pred = compare(args, coll)
        if len(colls) > 1:
            print(f"\n{COLLS[coll].title}")
        print(text_table(header, table))
        if pred:
            print("\nBraid: predicted (ncclGroupSimulateEnd) vs measured, out-of-place")
            print(text_table(*pred))
        sections[coll] = section(args, coll, runs, header, table, pred)
        bad += [f"{label(k)} ({COLLS[coll].title})" for k, r in runs.items() if r.wrong]

    name = args.name or f"{args.coll.replace(',', '-')}_np{args.np}_{now.strftime('%Y%m%d-%H%M')}"
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.md"
    path.write_text(markdown(args, sections, when, command))
    print(f"wrote {path}")
    if bad:
        print("wrong values from: " + ", ".join(bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
