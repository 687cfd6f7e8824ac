"""compare.py's writing: the labels, the text and markdown tables, the results file (its header
says how every baseline ran; a section per rank count and collective) and the data and drawing of
--plot (bench/plot_busbw.py). Shared by bench/ab.py."""
import importlib.util
import json
import os
import platform
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

LABEL = {"braid": "Braid", "mpi": "OpenMPI", "gloo": "Gloo", "memcpy": "memcpy", "memcpy-all": "memcpy, all cores"}


def label(key):
    """"braid/ring" (one of --algos) reads "Braid/ring"."""
    base, _, algo = key.partition("/")
    return LABEL[base] + (f"/{algo}" if algo else "")


def human(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


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


def build_source(build):
    """The source tree a build folder was configured from: CMakeCache.txt's CMAKE_HOME_DIRECTORY,
    else the folder above the build (build/release: two above)."""
    build = Path(build).resolve()
    try:
        m = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", (build / "CMakeCache.txt").read_text(), re.M)
        if m:
            return Path(m.group(1).strip())
    except OSError:
        pass
    return build.parent.parent if build.parent.name == "build" else build.parent


def git_revision(source=REPO):
    try:
        rev = subprocess.run(["git", "-C", str(source), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        return rev or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def braid_keys(runs):
    """Braid's runs in column order: "braid", or one per --algos name."""
    return [k for k in runs if k.split("/")[0] == "braid"]


def headline(runs):
    """The Braid run the ratio columns use: uncompressed (--compress none), else Braid's own choice
    of algorithm (auto) where it ran, else the first."""
    keys = braid_keys(runs)
    for want in ((lambda r: r.compress == "none"), (lambda r: r.algo == "auto" and not r.compress)):
        found = [k for k in keys if want(runs[k])]
        if found:
            return found[0]
    return keys[0]


def text_table(header, table):
    widths = [max(len(str(r[i])) for r in [header] + table) for i in range(len(header))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(header, widths))]
    lines += ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in table]
    return "\n".join(lines)


def rank_counts(nps):
    """[2, 4] reads "2 and 4 ranks"."""
    words = [str(n) for n in nps]
    return (", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]) + " ranks"


def how_run(args, gloo_version):
    """Header lines: how each baseline was started and tuned, and the cluster."""
    if args.cluster:
        lines = ["- Braid: one process per rank, started by tools/netcluster in its host's namespace"]
    else:
        lines = ["- Braid: one process per rank, started by `tools/braidrun -np N` on this host"]
    over, rest = [n for n in args.nps if n > args.cores], [n for n in args.nps if n <= args.cores]
    how = ("`OMPI_MCA_mpi_yield_when_idle=1` in mpirun's environment" if args.cluster else
           "`--mca mpi_yield_when_idle 1`")
    mpi = ("- OpenMPI: mpirun under `tools/netcluster --mpi` (daemons in each host's namespace, one slot per rank)"
           if args.cluster else "- OpenMPI: `mpirun --oversubscribe -np N` on this host")
    if over:
        mpi += (f", with {how} at {rank_counts(over)}: more ranks than this machine's {args.cores} cores, where a "
                "rank that busy-polls while it waits holds a core the rank it waits for needs (as a user with fewer "
                "cores than ranks would run it; OpenMPI turns it on by itself only where it counts more ranks than "
                "slots on a node)")
        mpi += f"; at {rank_counts(rest)} mpirun's defaults (a core per rank)" if rest else ""
    else:
        mpi += f" with mpirun's defaults: a core per rank ({args.cores} cores), so no mpi_yield_when_idle"
    lines.append(mpi + "; the baselines table gives the value every rank ran with (mpi_coll_perf reads it with MPI_T)")
    gloo = (f"- Gloo: torch.distributed's gloo backend ({gloo_version or 'torch'}, `{args.python}`), one process "
            "per rank ")
    if args.cluster:
        gloo += ("started by tools/netcluster in its host's namespace, TCP over the emulated links "
                 "(GLOO_SOCKET_IFNAME: the host's interface, from NCCL_SOCKET_IFNAME)")
    else:
        gloo += ("started by `bench/gloo/gloo_coll_perf.py --np N`, rendezvous (env://) at 127.0.0.1 and TCP on this "
                 f"host ({gloo_device()})")
    lines.append(gloo + "; the process group's default options (each rank sets torch.set_num_threads(1), as the "
                 "ranks share the cores)")
    if args.cluster:
        lines += [args.cluster.describe(),
                  "- memcpy: not run here, as the emulated links, not memory, bound these runs"]
    return lines


def gloo_device():
    """Where gloo's TCP goes on one host: GLOO_SOCKET_IFNAME, else NCCL_SOCKET_IFNAME's interfaces
    (gloo_coll_perf.py passes them on), else the address the hostname resolves to (gloo's default
    device)."""
    if os.environ.get("GLOO_SOCKET_IFNAME"):
        return f"GLOO_SOCKET_IFNAME {os.environ['GLOO_SOCKET_IFNAME']}"
    if os.environ.get("NCCL_SOCKET_IFNAME"):
        return f"the interfaces NCCL_SOCKET_IFNAME {os.environ['NCCL_SOCKET_IFNAME']} names"
    try:
        addr = socket.gethostbyname(socket.gethostname())
    except OSError:
        return "gloo's default device"
    return f"gloo's default device, the hostname's address: {addr}" + (", loopback" if addr.startswith("127.") else "")


def doc_header(args, when, command, gloo_version=""):
    # Settings that change what Braid does travel with the results, so the command reproduces them.
    settings = sorted(f"{k}={v}" for k, v in os.environ.items() if k.startswith(("BRAID_", "NCCL_")))
    source = build_source(args.build)
    lines = [f"- command: `{' '.join(settings + [command])}`",
             f"- date: {when}",
             f"- machine: {machine()}",
             f"- source: {git_revision(source)}" + ("" if source.resolve() == REPO else f" ({source})")]
    return lines + how_run(args, gloo_version)


def section(args, c, runs, header, table, pred=None):
    """The settings line, the baselines and the combined table of one collective (c, a compare.Coll)
    at args.np ranks."""
    place = "out-of-place" if args.place == "out" else "in-place"
    kind = "float sum" if c.reduces else "float"
    if c.rooted:
        kind += f", root {args.root}"
    buffers = "; Braid's buffers from ncclMemAlloc (-R 1)" if args.register else ""
    where = f"across the emulated cluster, placement {args.cluster.placement}" if args.cluster else "on one host"
    memcpy = "memcpy" in runs
    check = "on" if args.check else "off"
    check += " (Braid's compressed runs: not exact, see below)" if args.compress and args.check else ""
    out = [f"- ranks: {args.np} {where}; {kind}{buffers}; sizes {human(args.min)} to {human(args.max)}, factor "
           f"{args.factor}; {args.iters} timed iterations after {args.warmup} warm-up; data check {check}; the "
           f"{place} columns",
           f"- busbw = {c.busbw} (GB/s = 1e9 B/s); " + ("memcpy is one thread copying `size` bytes; " if memcpy else "")
           + f"Braid/best other compares {label(headline(runs))}'s busbw with the faster of OpenMPI and Gloo (computed "
           "from the times, which have more digits; with rounds, the median of the rounds' own ratios)"
           + ("; Braid/memcpy is Braid's busbw as a share of memcpy's rate (with rounds, likewise the median of each "
              "round's share)" if memcpy else "")]
    if args.rounds > 1:
        order = "Braid, OpenMPI, Gloo" + (", memcpy" if memcpy else "")
        out += [f"- {args.rounds} rounds: the baselines ran in turn ({order}, then again), so "
                "that the machine's drift reaches them alike; each cell is the round with the median time (memcpy: "
                "the median rate), and the last table has every round's figure"]
    if c.copies and memcpy:
        volume, per = c.copies(args.np, args.place == "in")
        out += [f"- copy bound = memcpy x{args.cores} (that many threads copying at once, total rate) x {per:.3g} / "
                f"{volume:.3g}: the outputs need {volume:.3g} x size bytes copied, and busbw is {per:.3g} x size / "
                "time; Braid/bound and OpenMPI/bound are their busbw as a share of it"]
    if pred:
        out += [f"- Braid runs once per algorithm (`-A NAME`: BRAID_ALGO=NAME; auto: Braid chooses); the ratio "
                f"columns use {label(headline(runs))}; a cell marked [x] ran algorithm x because the forced one "
                "does not apply at that size"]
    if args.compress:
        forced = f", `-A {args.algos[0]}`" if args.algos else ""
        out += [f"- Braid runs once per compression mode (`all_reduce_perf -Z MODE`{forced}: BRAID_COMPRESS=MODE, and "
                "BRAID_COMPRESS_MIN_BYTES 0 unless set, so every size is compressed); its busbw is effective: the "
                "logical fp32 bytes over the time; inputs are gradient-like (normal, per rank and element), not "
                "checked for exactness; rel L2 is the relative L2 error of one out-of-place call on a fresh buffer "
                "against an exact fp64 AllReduce (all_reduce_perf's accuracy table); `vs Braid/none` is Braid/none's "
                "time over the mode's (with rounds, the median of each round's ratio)"]
    if args.uplink and args.cluster and c.name == "allreduce":
        r = args.cluster.racks
        share = "" if r == 2 else f"{2 * (r - 1)}/{r} of "
        out += [f"- uplink bound: the least time the {r} racks' uplinks at {args.uplink:g} Gbit/s allow: {share}each "
                "rack's partial sum of the whole buffer must cross its uplink each way, "
                + ("" if r == 2 else f"{2 * (r - 1)}/{r} x ") + f"size x 8 / ({args.uplink:g} x 1e9) s; bound/measured "
                "is that time as a share of Braid's (100%: the uplinks never idle); up to about the uplinks' token "
                f"bucket ({args.cluster.uplink_burst / 1024:.0f} KiB) a message passes faster than the rate, and the "
                "share can pass 100%" + ("; so can a compressed mode's, which sends fewer bytes than the bound counts"
                                         if args.compress else "")]
    used = [f"{label(k)}: {r.used}" for k, r in runs.items() if r.used]
    if used:
        out += ["- what Braid ran (its TUNING log, per run of sizes): " + "; ".join(used)]
    out += ["", "| baseline | status | version | command |", "|---|---|---|---|"]
    for key, run in runs.items():
        status = run.status + (f" ({run.why})" if run.why else "")
        if run.wrong:
            status += f"; {run.wrong} WRONG values"
        cmd = f"`{run.shown()}`" if run.cmd else ""
        out.append(f"| {label(key)} | {status.replace('|', '/')} | {run.version} | {cmd} |")
    out += md_table(header, table)
    if pred:
        out += ["", "Braid's cost model: the time `ncclGroupSimulateEnd` predicts for one out-of-place call "
                "against the measured out-of-place time; `used` is the algorithm that ran (from Braid's TUNING "
                "log)."] + md_table(*pred)
    rounds = spread(runs, args.sizes)
    if rounds:
        out += ["", "Every round (busbw GB/s, and the times where busbw is below 0.1; memcpy: rate), "
                "in the order they ran:"] + md_table(*rounds)
    return out


def md_table(header, table):
    return ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in table]


def what_where(args, sections):
    """The title's parts: the collectives (and compression modes) and where the ranks ran."""
    titles = list(dict.fromkeys(c.title for _, c, _ in sections))
    what = "Every collective" if len(titles) > 1 and args.coll == "all" else ", ".join(titles)
    if args.compress:
        what += f", compressed ({', '.join(args.compress)})"
    if args.cluster:
        c = args.cluster
        return what, f"{c.ranks} ranks on an emulated {c.hosts}-host, {c.racks}-rack cluster, {c.placement} placement"
    return what, f"{rank_counts(args.nps)} on one host"


def markdown(args, sections, head, plot=None):
    """The title, the run's details, the plot's link; then per rank count (a heading where there
    are several) and collective (likewise) its section."""
    what, where = what_where(args, sections)
    out = [f"# {what}: Braid vs OpenMPI vs Gloo ({where})", ""] + head
    several = len({c.name for _, c, _ in sections}) > 1
    if plot:
        out += ["", f"![busbw against message size]({plot})"] + ([] if several or len(args.nps) > 1 else [""])
    for i, (np_, c, lines) in enumerate(sections):
        if len(args.nps) > 1 and (i == 0 or sections[i - 1][0] != np_):
            out += ["", f"## {np_} ranks"]
        if several:
            out += ["", f"{'###' if len(args.nps) > 1 else '##'} {c.title}"]
        out += ([""] if several or len(args.nps) > 1 else []) + lines
    return "\n".join(out) + "\n"


def plot_panel(args, c, runs, sizes, title):
    """One panel of the --plot picture: per baseline (memcpy: one thread's rate, dashed) the busbw
    of each size, from the time the table shows (a small size's printed busbw has too few digits
    for a log axis); with --uplink-gbit, the busbw of the uplink bound (dotted)."""
    series = []
    for key, run in runs.items():
        points = []
        for s in sizes:
            row = run.rows.get(s)
            if row and "rate" in row:
                points.append({"size": s, "busbw": row["rate"]})
            elif row and row.get("time_us", 0) > 0:
                bus = row["size"] * c.factor(args.np) / (row["time_us"] * 1e3)  # B/us = 1e6 B/s
                points.append({"size": s, "busbw": bus, "time_us": row["time_us"]})
        if points and key != "memcpy-all":
            series.append({"key": key, "label": label(key) + (" (one thread's copy rate)" if key == "memcpy" else ""),
                           "style": "dashed" if key == "memcpy" else "solid", "points": points})
    if args.uplink and args.cluster and c.name == "allreduce":
        points = [{"size": s, "busbw": s * c.factor(args.np) / (args.cluster.uplink_bound_us(s, args.uplink) * 1e3)}
                  for s in sizes]
        series.append({"key": "uplink bound", "label": f"uplink bound ({args.uplink:g} Gbit/s)", "style": "dotted",
                       "points": points})
    return {"title": title, "series": series}


def plot_document(args, sections, panels):
    what, where = what_where(args, sections)
    c = sections[0][1]
    rounds = f"; {args.rounds} rounds: medians" if args.rounds > 1 else ""
    return {"title": f"{what}: Braid vs OpenMPI vs Gloo, {where}\n{'float sum' if c.reduces else 'float'}, "
                     f"{'out-of-place' if args.place == 'out' else 'in-place'}, {args.iters} iterations after "
                     f"{args.warmup} warm-up{rounds}",
            "xlabel": "message size", "ylabel": "busbw (GB/s)", "panels": panels}


def write_plot_data(document, png):
    """The plot's data as PNG.json beside it; returns its path."""
    data = png.with_suffix(".json")
    data.write_text(json.dumps(document, indent=1) + "\n")
    return data


def draw(args, document, png):
    """Writes the plot's data beside the picture, then draws it: in this interpreter where it has
    matplotlib, else with --python. Returns whether the picture was made."""
    data = write_plot_data(document, png)
    if importlib.util.find_spec("matplotlib") is None:
        cmd = [args.python, str(BENCH / "plot_busbw.py"), str(data), str(png)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"plot: {shlex.join(cmd)} failed: " + " | ".join(p.stderr.strip().splitlines()[-2:]), file=sys.stderr)
        return p.returncode == 0
    import plot_busbw
    plot_busbw.draw(document, png)
    return True


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


