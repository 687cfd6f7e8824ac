"""braid-sim against measurement (issue 20's validation): the same cluster map priced by braid-sim
and run for real on tools/netcluster, every size of every asked algorithm side by side.

    /usr/bin/python3 bench/sim_validate.py --netcluster '--hosts 8 --racks 2' [--coll LIST]
        [--algos LIST] [-b 64K -e 16M -f 4 -n 5 -w 2] [--rounds R] [--build build/release]
        [--name NAME] [--cpu-ns-per-byte NS [--local-cpu-ns-per-byte NS]] [--map-latency-us US]

runs each collective's perf binary once per algorithm (`-A NAME -P 1`: forced, and with the
runtime's own prediction, ncclGroupSimulateEnd) across the emulated cluster with the cluster map
netcluster writes (BRAID_CLUSTER_FILE), then braid-sim on that map for the algorithm each size
ran, and writes bench/results/NAME.md: measured time (the slowest rank's, `-a 3`, as braid-sim
prices when the last rank finishes; the median of R rounds, each running the collective's
algorithms in turn) against braid-sim's and the runtime's predictions, and per
collective and algorithm the worst ratio from the goal's size up (issue 20: within 15% for
AllReduce, 25% for the others, from 64 KiB).

    /usr/bin/python3 bench/sim_validate.py --loopback 4 [--ranks-per-host K] [--coll ...] ...

is the check the tests run (no root, no netcluster): N ranks on this host, given host names
h0, h1, ... (NCCL_HOSTID, K ranks each) and a cluster map of two racks, so the runtime prices
the map as it would across hosts; every runtime prediction must equal braid-sim's (0.1%), which
shows braid-sim prices exactly what a communicator on that map prices. Measured times there mean
nothing (the links are loopback) and are not compared. Exit status 1 on a mismatch.

braid-sim is given what a communicator on this machine also uses: host memory (--memory), the
ranks per core of the one machine the emulated hosts share (--ranks-per-core N / cores), and the
CPU a byte between two emulated hosts costs (the map's cpu_ns_per_byte, which the runtime reads
too) and, with more than one rank a host, one between two ranks of a host (the map's
local_cpu_ns_per_byte), measured first on the same cluster as Braid moves bytes (cpu_per_byte
below; or given: --cpu-ns-per-byte, 0 to leave it out, and --local-cpu-ns-per-byte), and the
latency of a step, at which braid-sim prices a ring AllReduce of 1 KiB at what that ring measured
on the cluster (step_latency_us; or given: --map-latency-us, 0 for none); and it
simulates every rank (--no-symmetry), as the runtime does up to 16 ranks: the symmetric-block
shortcut is for thousands of ranks, and its own error (up to 3% here, pairwise AlltoAll at 8
ranks) is not what this compares. It prices one call alone, as the runtime's prediction does;
with --netcluster also a call as one of -n back to back (braid-sim --calls), since the perf
binaries time a loop of calls with no barrier between them, where one call's pipeline drain
may overlap the next call's fill: the table has both."""
import argparse
import csv
import datetime
import glob
import importlib.machinery
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from cluster import Topology  # noqa: E402
from compare import COLLS, parse_perf_table, parse_predict_table, parse_size, size_steps  # noqa: E402
from report import human  # noqa: E402

ALLREDUCE = "ring,tree,rhd,direct,hier,hierpipe,rackring"
GOAL = {"allreduce": 0.15}  # the others: 0.25
GOAL_FROM = 64 << 10
# netcluster's shapers' queues unless --netcluster gives --queue-ms: deep enough that no packet
# is dropped, since braid-sim, like the runtime's cost model, prices a lossless fabric; where
# many flows share an uplink, netcluster's default 20 ms drops packets and TCP's recovery is in
# the times (docs/scale.md). Drops are counted either way (DROPS) and the results say so.
LOSSLESS_QUEUE_MS = 1000
DROPS = []  # netcluster's reports of dropped packets, one per run that had any

LOOPBACK_MAP = """<?xml version="1.0"?>
<cluster version="1" local_cpu_ns_per_byte="0.3">
  <level name="host" bw_gbps="2" latency_us="20" burst_kib="244.1" cpu_ns_per_byte="1.5"/>
  <level name="rack" bw_gbps="0.6667" latency_us="40" burst_kib="128" cpu_ns_per_byte="1.5"/>
{racks}</cluster>
"""


def loopback_map(hosts):
    """Two racks of hosts h0 .. h<hosts-1>, in blocks."""
    racks = ""
    for r in range(2):
        names = [f"h{h}" for h in range(hosts) if h * 2 // hosts == r]
        racks += f'  <rack name="rack{r}">' + "".join(f'<host name="{n}"/>' for n in names) + "</rack>\n"
    return LOOPBACK_MAP.format(racks=racks)


def run(cmd, env, timeout):
    """stdout of cmd, or None (with why on stderr) where it failed."""
    print("==", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                           env=dict(os.environ, **env))
    except subprocess.TimeoutExpired:
        print(f"   no result within {timeout} s", file=sys.stderr)
        return None
    if p.returncode != 0:
        tail = [l for l in (p.stderr + p.stdout).splitlines() if l.strip()][-5:]
        print(f"   exit code {p.returncode}: " + " | ".join(tail), file=sys.stderr)
        return None
    for line in p.stderr.splitlines():
        if line.startswith("netcluster: the shapers dropped"):
            print("   " + line, file=sys.stderr)
            DROPS.append(line)
    return p.stdout


def measure(args, coll, algo, launch, env):
    """{nominal size: row} of one perf run (time_us measured, used, pred_us the runtime's)."""
    perf = Path(args.build) / "bench" / "perf" / COLLS[coll].perf
    cmd = [str(perf), "-b", str(args.min), "-e", str(args.max), "-f", str(args.factor), "-n", str(args.iters),
           "-w", str(args.warmup), "-c", "1", "-a", "3", "-A", algo, "-P", "1"] + \
        (["-r", "0"] if COLLS[coll].rooted else [])
    out = run(launch(cmd), env, args.timeout + 30)
    if out is None:
        return {}
    rows = parse_perf_table(out, "out", args.sizes)
    parse_predict_table(out, args.sizes, rows)
    return rows


def simulate(args, coll, algos, cluster_map, ranks_per_host, ranks_per_core, calls):
    """{(nominal size, algo): braid-sim's time in us}, a call priced as one of `calls` back to back.
    An algorithm that serves only some sizes (direct: the small ones) makes braid-sim exit 1 for
    the others, and its rows are still good."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        cmd = [str(Path(args.build) / "tools" / "braid-sim"), "--cluster", str(cluster_map),
               "--ranks-per-host", str(ranks_per_host), "--ranks-per-core", f"{ranks_per_core:g}", "--memory",
               "--no-symmetry", "--coll", coll, "-b", str(args.min), "-e", str(args.max), "-f", str(args.factor),
               "--algos", ",".join(sorted(algos)), "--calls", str(calls), "--csv", f.name]
        print("==", " ".join(cmd), file=sys.stderr, flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        if p.returncode not in (0, 1):
            print(f"   exit code {p.returncode}: {p.stderr.strip()}", file=sys.stderr)
            return {}
        with open(f.name) as table_file:
            rows = list(csv.DictReader(table_file))
    # braid-sim prints the nominal sizes of -b/-e/-f, as the perf binaries ask them.
    return {(int(r["size"]), r["algo"]): float(r["time_us"]) for r in rows}


def median_rows(rounds):
    """One {size: row} from several rounds of measure(): each size's row from the first round,
    its time the median over the rounds that ran it, and the fastest and slowest (lo_us, hi_us)."""
    rows = {}
    for size, row in rounds[0].items():
        times = [r[size]["time_us"] for r in rounds if size in r]
        rows[size] = dict(row, time_us=statistics.median(times), lo_us=min(times), hi_us=max(times))
    return rows


def collect(args, launch, env, cluster_map, ranks_per_host, nranks, calls):
    """Per collective: [(asked algo, size, row with sim_us)]: braid-sim's price of one call, and
    where calls > 1 also of a call as one of `calls` back to back (stream_us)."""
    ranks_per_core = max(1.0, nranks / len(os.sched_getaffinity(0)))
    results = {}
    for coll in args.colls:
        asked = args.algos if coll == "allreduce" else args.other_algos
        rounds = {algo: [] for algo in asked}
        for _ in range(args.rounds):  # the algorithms in turn, then again: drift hits them alike
            for algo in asked:
                rounds[algo].append(measure(args, coll, algo, launch, env))
        runs = [(algo, median_rows(rounds[algo])) for algo in asked]
        used = {row["used"] for _, rows in runs for row in rows.values() if "used" in row}
        sim = simulate(args, coll, used, cluster_map, ranks_per_host, ranks_per_core, 1) if used else {}
        stream = simulate(args, coll, used, cluster_map, ranks_per_host, ranks_per_core, calls) if used and calls > 1 else {}
        results[coll] = []
        for algo, rows in runs:
            for size in args.sizes:
                row = rows.get(size)
                if row and "used" in row:
                    row["sim_us"] = sim.get((size, row["used"]))
                    if stream:
                        row["stream_us"] = stream.get((size, row["used"]))
                    results[coll].append((algo, size, row))
    return results


def streamed(results):
    """Whether braid-sim also priced the calls back to back (stream_us)."""
    return any("stream_us" in r for rows in results.values() for _, _, r in rows)


def table(results):
    extra = streamed(results)
    lines = ["| collective | asked | size | ran | braid-sim (us) | runtime's prediction (us) | measured (us) "
             "| measured / braid-sim | rounds' range / braid-sim |" +
             (" braid-sim, back to back (us) | measured / that |" if extra else ""),
             "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if extra else "")]
    for coll, rows in results.items():
        for algo, size, r in rows:
            sim, pred, stream = r.get("sim_us"), r.get("pred_us"), r.get("stream_us")
            ratio = f"{r['time_us'] / sim:.2f}" if sim else "-"
            spread = f"{r['lo_us'] / sim:.2f}-{r['hi_us'] / sim:.2f}" if sim and "lo_us" in r else "-"
            more = (f" {stream} | {r['time_us'] / stream:.2f} |" if stream else " - | - |") if extra else ""
            lines.append(f"| {coll} | {algo} | {human(size)} | {r['used']} | {sim if sim else '-'} | "
                         f"{pred if pred is not None else '-'} | {r['time_us']:.1f} | {ratio} | {spread} |" + more)
    return lines


def worst_ratio(rows, algo, key):
    """The measured / rows' `key` furthest from 1 from GOAL_FROM up, None where none was priced."""
    ratios = [r["time_us"] / r[key] for a, s, r in rows if a == algo and s >= GOAL_FROM and r.get(key)]
    return (len(ratios), max(ratios, key=lambda x: abs(x - 1))) if ratios else (0, None)


def summary(results):
    """Per collective and asked algorithm: the worst measured / braid-sim from GOAL_FROM up (and
    against the back-to-back price where there is one)."""
    extra = streamed(results)
    lines = ["| collective | asked | sizes | worst measured / braid-sim | goal | met |" +
             (" worst measured / back to back | met |" if extra else ""),
             "|---|---|---|---|---|---|" + ("---|---|" if extra else "")]
    for coll, rows in results.items():
        goal = GOAL.get(coll, 0.25)
        for algo in dict.fromkeys(a for a, _, _ in rows):
            n, worst = worst_ratio(rows, algo, "sim_us")
            if worst is None:
                continue
            line = (f"| {coll} | {algo} | {n} | {worst:.2f} | within {goal:.0%} | "
                    f"{'yes' if abs(worst - 1) <= goal else 'no'} |")
            if extra:
                _, back = worst_ratio(rows, algo, "stream_us")
                line += (f" {back:.2f} | {'yes' if abs(back - 1) <= goal else 'no'} |" if back else " - | - |")
            lines.append(line)
    return lines


def row_counts(args, results):
    """(rows asked: every size of every asked algorithm, rows that came back)."""
    want = sum(len(args.sizes) * len(args.algos if c == "allreduce" else args.other_algos) for c in args.colls)
    return want, sum(len(rows) for rows in results.values())


def loopback(args):
    n, k = args.loopback, args.ranks_per_host
    if n % k or n // k < 2:
        sys.exit(f"--loopback {n} --ranks-per-host {k}: at least two hosts of {k} ranks")
    with tempfile.TemporaryDirectory() as tmp:
        cluster_map = Path(tmp) / "map.xml"
        cluster_map.write_text(loopback_map(n // k))
        braidrun = Path(args.build) / "tools" / "braidrun"
        hostid = f'NCCL_HOSTID=h$((RANK / {k})) exec "$0" "$@"'

        def launch(cmd):
            return [str(braidrun), "-np", str(n), "--timeout", str(args.timeout), "--", "bash", "-c", hostid] + cmd

        results = collect(args, launch, {"BRAID_CLUSTER_FILE": str(cluster_map)}, cluster_map, k, n, 1)
    print("\n".join(table(results)))
    bad = [(c, a, s, r) for c, rows in results.items() for a, s, r in rows
           if r.get("pred_us") is None or not r.get("sim_us") or abs(r["pred_us"] / r["sim_us"] - 1) > 1e-3]
    want, got = row_counts(args, results)
    for c, a, s, r in bad:
        print(f"MISMATCH {c} {a} {human(s)} ran {r['used']}: runtime {r.get('pred_us')} us, braid-sim "
              f"{r.get('sim_us')} us", file=sys.stderr)
    if got != want:
        print(f"only {got} of {want} rows came back", file=sys.stderr)
    return 1 if bad or got != want else 0


def busy_cpu_seconds():
    """CPU time this machine has spent busy, every core together (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, f.readline().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


# Ring AllReduce of 4 MiB, 4 and then 44 timed iterations, three times: the median of the three.
# One pair is not enough: two of 4 and 24 on the same idle machine gave 0.47 and, minutes later,
# 1.14 ns a byte (this script's first step with --netcluster '--hosts 8 --racks 2').
CALIBRATION = (4 << 20, 4, 44)
CALIBRATION_ROUNDS = 3


def braid_stats():
    """tools/braid-stats as a module: its reader of BRAID_STATS_FILE's lines."""
    loader = importlib.machinery.SourceFileLoader("braid_stats_tool", str(REPO / "tools" / "braid-stats"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def cpu_per_byte(args, topo):
    """Nanoseconds of this machine's CPU (every core: the ranks, the kernel's path through the
    veths, bridges and shapers) per byte the ranks send to other hosts, and per byte between two
    ranks of one host, when the cores, not the links, are the limit, as the cost model's pool of
    cores prices them. Each figure is a difference: a run of CALIBRATION's size twice, the
    difference of the two runs' CPU over the difference of their bytes (each rank's
    BRAID_STATS_FILE counts per peer), so building the cluster and starting the ranks count for
    nothing; the median of CALIBRATION_ROUNDS such pairs. With more than one rank a host, first
    the bytes inside a host: ring AllReduce of all `topo`'s ranks on one host (shared memory
    only). Then the bytes between hosts: ring AllReduce on `topo`'s hosts in one rack (every host
    sending to the next at once: on 2 Gbit/s links more than two cores move), the CPU its bytes
    inside a host took (at the first figure) taken off. ((between hosts, [each round's]),
    (inside a host, [each round's]) or None with one rank a host), or None where a run failed."""
    local = None
    if topo.per_host > 1:
        one_host = f"--hosts 1 --racks 1 --ranks-per-host {topo.ranks} --queue-ms {topo.queue_ms:g}"
        local = calibrate(args, one_host, lambda cpu, net, shm: cpu / shm if shm > 0 else None)
        if local is None:
            return None
    in_rack = (f"--hosts {topo.hosts} --racks 1 --ranks-per-host {topo.per_host} --rack-gbit {topo.rack_gbit:g} "
               f"--queue-ms {topo.queue_ms:g}")
    shm_ns = local[0] if local else 0.0
    net = calibrate(args, in_rack, lambda cpu, net, shm: max(cpu - shm * shm_ns, 0.0) / net if net > 0 else None)
    return None if net is None else (net, local)


def calibrate(args, netcluster, per_byte):
    """(median, [each round's]) of CALIBRATION_ROUNDS rounds of calibrate_once, or None."""
    rounds = []
    for _ in range(CALIBRATION_ROUNDS):
        figure = calibrate_once(args, netcluster, per_byte)
        if figure is None:
            return None
        rounds.append(figure)
    return statistics.median(rounds), rounds


def calibrate_once(args, netcluster, per_byte):
    """One pair of ring AllReduce runs (CALIBRATION) on netcluster with flags `netcluster`:
    per_byte(ns of busy CPU, bytes between hosts, bytes inside hosts), the differences of the
    two runs; None where a run failed."""
    size, short, long = CALIBRATION
    runs = [cpu_and_traffic(args, netcluster, "allreduce", "ring", size, iters) for iters in (short, long)]
    if None in runs:
        return None
    cpu, net, shm = (b - a for a, b in zip(runs[0][:3], runs[1][:3]))
    return per_byte(max(cpu, 0.0) * 1e9, net, shm)


def cpu_and_traffic(args, netcluster, coll, algo, size, iters):
    """One run of `coll`'s perf binary (`-A algo`, one size, `iters` timed iterations after one
    warm-up) on netcluster with flags `netcluster`: (seconds of the machine's busy CPU, bytes
    between hosts, bytes inside hosts, messages between hosts, messages inside hosts), the ranks'
    own counts (BRAID_STATS_FILE), or None where the run failed."""
    perf = Path(args.build) / "bench" / "perf" / COLLS[coll].perf
    topo, stats = Topology(netcluster), braid_stats()
    with tempfile.TemporaryDirectory() as tmp:
        # No probe of the racks: without a map a communicator of three hosts or more probes at
        # init and, where large calls run slower than priced, again between calls (adaptation,
        # docs/adaptation.md), and those probes' CPU would count as the calls'.
        env = {"BRAID_STATS_FILE": f"{tmp}/%h.%p", "BRAID_STATS_INTERVAL_MS": "0", "BRAID_TOPO_PROBE": "0"}
        cmd = [str(perf), "-b", str(size), "-e", str(size), "-n", str(iters), "-w", "1", "-A", algo]
        before = busy_cpu_seconds()
        if run(topo.command(cmd, timeout=args.timeout), env, args.timeout + 30) is None:
            return None
        cpu = busy_cpu_seconds() - before
        comms, _ = stats.read(glob.glob(f"{tmp}/*"))
    peers = [p for ranks in comms.values() for lines in ranks.values() for line in lines
             if line["event"] == "destroy" for p in stats.peers(line).values()]
    return (cpu,) + tuple(sum(p[field] for p in peers if (p["level"] > 0) == between)
                          for field in ("bytesSent", "messagesSent") for between in (True, False))


STEP_PROBE = (1 << 10, 50, 5)  # ring AllReduce of 1 KiB, 50 timed iterations after 5 warm-up


def ring_step_us(args, topo, cluster_map):
    """Microseconds a step of a ring AllReduce of 1 KiB takes on `topo` with its map (the slowest
    rank's time over the ring's 2 (n - 1) steps), or None where the run failed. netcluster
    emulates no latency, so what a step of a tiny message takes is this machine's: its scheduler
    waking the ranks and the kernel's path through the namespaces, which differ from one machine
    to the next (docs/scale.md). The map then declares the latency at which braid-sim prices this
    ring at what it measured (step_latency_us), as it declares the CPU a byte costs."""
    size, iters, warmup = STEP_PROBE
    perf = Path(args.build) / "bench" / "perf" / COLLS["allreduce"].perf
    cmd = [str(perf), "-b", str(size), "-e", str(size), "-n", str(iters), "-w", str(warmup), "-c", "1", "-a", "3",
           "-A", "ring"]
    out = run(topo.command(cmd, timeout=args.timeout), {"BRAID_CLUSTER_FILE": str(cluster_map)}, args.timeout + 30)
    row = parse_perf_table(out, "out", [size]).get(size) if out else None
    return row["time_us"] / (2 * (topo.ranks - 1)) if row else None


PROBE_LATENCY_US = 10.0  # the second point of the price's line in the map's latency


def with_latency(cluster_map, latency_us):
    """The map's text with its latency_us set to `latency_us` on every level."""
    return re.sub(r'latency_us="[^"]*"', f'latency_us="{latency_us:g}"', Path(cluster_map).read_text())


def price_us(args, map_text, per_host, per_core, coll, algo, nbytes):
    """braid-sim's price of one call of `algo` (`coll`, `nbytes`) on the map `map_text`, as the
    results price it, or None where braid-sim could not price it."""
    with tempfile.NamedTemporaryFile("w", suffix=".xml") as m, tempfile.NamedTemporaryFile(suffix=".csv") as f:
        m.write(map_text)
        m.flush()
        cmd = [str(Path(args.build) / "tools" / "braid-sim"), "--cluster", m.name, "--ranks-per-host",
               str(per_host), "--ranks-per-core", f"{float(per_core):g}", "--memory", "--no-symmetry",
               "--coll", coll, "--algos", algo, "-b", str(nbytes), "-e", str(nbytes), "--csv", f.name]
        if subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout).returncode != 0:
            return None
        with open(f.name) as table_file:
            rows = list(csv.DictReader(table_file))
    return float(rows[0]["time_us"]) if rows else None


def probe_price_us(args, cluster_map, topo, latency_us):
    """braid-sim's price of the step probe (ring AllReduce of STEP_PROBE's size, one call) on the
    map with its latency_us set to `latency_us`, or None where braid-sim failed."""
    per_core = max(1.0, topo.ranks / len(os.sched_getaffinity(0)))
    return price_us(args, with_latency(cluster_map, latency_us), topo.per_host, per_core, "allreduce", "ring",
                    STEP_PROBE[0])


def step_latency_us(args, cluster_map, topo, step_us):
    """(latency_us, braid-sim's price of the probe with it) for the map: the latency at which
    braid-sim prices the step probe at what it measured. Where ranks outnumber cores a link's
    latency is priced on each hop times the ranks a core, and on the cores' work at both ends of
    a message between hosts, so the price of a ring of tiny messages is nearly a line in it: two
    points give it, and a third, the line through the first and that latency's price, corrects it
    (the signatures' part is not quite a line). 0 where the probe measured no more than braid-sim
    prices without latency."""
    measured = step_us * 2 * (topo.ranks - 1)
    p0 = probe_price_us(args, cluster_map, topo, 0.0)
    latency, price = PROBE_LATENCY_US, probe_price_us(args, cluster_map, topo, PROBE_LATENCY_US)
    if p0 is None or measured <= p0:
        return 0.0, p0
    for _ in range(2):
        if price is None or price <= p0:
            return 0.0, p0
        latency = latency * (measured - p0) / (price - p0)
        price = probe_price_us(args, cluster_map, topo, latency)
    return latency, price


def netcluster(args):
    if any(flag in args.netcluster for flag in ("--write-cluster-map", "cpu-ns-per-byte", "--map-latency-us")):
        sys.exit("--netcluster: leave --write-cluster-map, the CPU figures and --map-latency-us out (this script "
                 "writes the map)")
    if "--queue-ms" not in args.netcluster:
        args.netcluster += f" --queue-ms {LOSSLESS_QUEUE_MS}"
    name = args.name or f"sim_validate_{datetime.datetime.now():%Y%m%d-%H%M}"
    results_dir = Path(args.results)
    cluster_map = (results_dir / f"{name}_map.xml").resolve()
    cpu, local = args.cpu_ns_per_byte, args.local_cpu_ns_per_byte or 0.0
    how_local = "not priced"
    if cpu is None:
        measured = cpu_per_byte(args, Topology(args.netcluster))
        if measured is None:
            sys.exit("the CPU per byte could not be measured (a calibration run failed); give --cpu-ns-per-byte")
        (cpu, rounds), local_rounds = measured
        pairs = f"{CALIBRATION[1]} and {CALIBRATION[2]} iterations"

        def ns(figures):
            return ", ".join(f"{r:.3g}" for r in figures) + " ns"

        how = (f"measured first: ring AllReduce of {human(CALIBRATION[0])} on the same hosts in one rack (every host "
               f"sending to the next at once), {pairs}, the difference of the machine's busy CPU "
               "(/proc/stat) over the difference of the bytes the ranks sent to other hosts" +
               (", less the CPU of the bytes between ranks of a host (below)" if local_rounds else "") +
               f"; the median of {len(rounds)} such pairs ({ns(rounds)})")
        if local_rounds:
            local = local_rounds[0]
            how_local = (f"measured first: ring AllReduce of {human(CALIBRATION[0])} of all the ranks on one host "
                         f"(shared memory only), {pairs}, the difference of the busy CPU over the difference of "
                         f"the bytes; the median of {len(local_rounds[1])} such pairs ({ns(local_rounds[1])})")
    else:
        how = "given (--cpu-ns-per-byte)"
        if local:
            how_local = "given (--local-cpu-ns-per-byte)"
    local_flag = f" --local-cpu-ns-per-byte {local:.3g}" if local else ""
    topo = Topology(f"{args.netcluster} --cpu-ns-per-byte {cpu:.3g}{local_flag} --write-cluster-map {cluster_map}")
    if topo.placement != "block":
        sys.exit("--netcluster: block placement only (braid-sim places ranks host by host in the map's order)")
    step = ring_step_us(args, topo, cluster_map)
    latency, probe_us = (args.map_latency_us, None) if args.map_latency_us is not None else \
        step_latency_us(args, cluster_map, topo, step) if step else (0.0, None)
    if latency:
        topo = Topology(f"{topo.text} --map-latency-us {latency:.3g}")
    results = collect(args, lambda cmd: topo.command(cmd, timeout=args.timeout), {}, cluster_map,
                      topo.per_host, topo.ranks, args.iters)
    cores = len(os.sched_getaffinity(0))
    source = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    text = [f"# braid-sim against measurement on tools/netcluster ({topo.ranks} ranks)", "",
            f"- command: `/usr/bin/python3 bench/sim_validate.py {' '.join(sys.argv[1:])}`",
            f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}; source {source}; "
            f"{cores} cores",
            topo.describe(),
            f"- CPU a byte between two emulated hosts costs (the map's cpu_ns_per_byte): {cpu:.3g} ns, {how}",
            (f"- CPU a byte between two ranks of one host costs (the map's local_cpu_ns_per_byte): {local:.3g} ns, "
             f"{how_local}" if topo.per_host > 1 else "- one rank a host: no bytes between ranks of a host"),
            f"- braid-sim: `--cluster {cluster_map.name} --ranks-per-host {topo.per_host} --ranks-per-core "
            f"{max(1.0, topo.ranks / cores):g} --memory --no-symmetry`, for the algorithm each size ran: one call "
            f"alone, as the runtime's prediction prices it; and with `--calls {args.iters}`, a call as one of the "
            "timing loop's calls back to back (each rank starts a call when it has finished its last), as the perf "
            "binaries time them",
            f"- measured: the perf binaries' out-of-place time of the slowest rank (`-a 3`: braid-sim prices when "
            f"the last rank finishes), {args.iters} timed iterations after {args.warmup} warm-up, data checked, the "
            f"median of {args.rounds} run{'s' if args.rounds > 1 else ''} (a collective's algorithms in turn, then "
            "again); runtime's prediction: their -P column "
            "(ncclGroupSimulateEnd)",
            f"- a small message's step on this machine: ring AllReduce of {human(STEP_PROBE[0])} with the map, "
            f"{STEP_PROBE[1]} iterations, the slowest rank's time over its {2 * (topo.ranks - 1)} steps, "
            "measured with the map before it declared a latency: " +
            (f"{step:.0f} us a step" if step else "not measured (the run failed)"),
            "- the map's latency_us (both levels; netcluster's --map-latency-us, declared, not emulated): " +
            (f"{latency:.3g} us, given (--map-latency-us)" if args.map_latency_us is not None else
             f"{latency:.3g} us, at which braid-sim prices that ring at {probe_us:.0f} us, what it measured (ranks a "
             "core scale a link's latency on each hop, and the cores' work counts it at both ends of a message "
             "between hosts)" if latency and probe_us else
             "none: the step was not measured, or braid-sim prices it at what it measured without one"),
            "- packets the shapers dropped (netcluster's count after each run): " + (
                f"in {len(DROPS)} runs: " + "; ".join(re.search(r"dropped ([0-9]+ packets \([^)]*\))", d).group(1) for d in DROPS)
                if DROPS else "none, in any run"),
            "", "## Summary", ""] + summary(results) + ["", "## Every size", ""] + table(results)
    path = results_dir / f"{name}.md"
    path.write_text("\n".join(text) + "\n")
    print(f"wrote {path}")
    return check(args, results) if args.check is not None else 0


def reprice(args):
    """Prices every row of a results file again with braid-sim on its map, the map's latency_us set
    to --map-latency-us (default 0), and prints measured / that beside measured / the file's price:
    the same measurements against the model with and without what the map declares."""
    path = Path(args.reprice)
    text = path.read_text()
    sim_line = re.search(r"- braid-sim: `--cluster (\S+) --ranks-per-host (\d+) --ranks-per-core ([0-9.]+)", text)
    if not sim_line or "## Every size" not in text:
        sys.exit(f"--reprice {path}: not a results file of --netcluster (no braid-sim line or table)")
    cluster_map, per_host, per_core = path.parent / sim_line[1], sim_line[2], sim_line[3]
    latency = args.map_latency_us or 0.0
    mapped = with_latency(cluster_map, latency)
    print(f"# {path.name}: measured against braid-sim on {cluster_map.name} as the file priced it, and with "
          f"latency_us=\"{latency:g}\"\n")
    print("| collective | asked | size | ran | measured (us) | measured / braid-sim | braid-sim again (us) "
          "| measured / that |\n|---|---|---|---|---|---|---|---|")
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for line in text.split("## Every size", 1)[1].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or not re.fullmatch(r"[0-9.]+", cells[6]) or cells[4] == "-":
            continue
        coll, asked, size, ran, measured = cells[0], cells[1], cells[2], cells[3], float(cells[6])
        number, unit = size.split()
        again = price_us(args, mapped, per_host, per_core, coll, ran, int(number) * units[unit])
        shown = f"{again:.1f} | {measured / again:.2f}" if again else "- | -"
        print(f"| {coll} | {asked} | {size} | {ran} | {measured:.1f} | {measured / float(cells[4]):.2f} | {shown} |")
    return 0


def check(args, results):
    """--check TOL: status 1 where a size of an asked algorithm did not run, braid-sim priced none,
    or measured / braid-sim is further than TOL from 1 (at every size); the rows on stdout."""
    print("\n".join(table(results)))
    bad = [f"{c} {a} {human(s)}: " + (f"measured / braid-sim {r['time_us'] / r['sim_us']:.2f}" if r.get("sim_us")
                                      else "no price from braid-sim")
           for c, rows in results.items() for a, s, r in rows
           if not r.get("sim_us") or abs(r["time_us"] / r["sim_us"] - 1) > args.check]
    want, got = row_counts(args, results)
    if got != want:
        bad.append(f"{want - got} of {want} runs gave no result")
    for line in bad:
        print(f"FAIL: {line} (--check {args.check:g})")
    if not bad:
        print(f"PASS: {got} runs, measured within {args.check:.0%} of braid-sim")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--netcluster", metavar="ARGS", help="tools/netcluster topology flags (block placement)")
    where.add_argument("--loopback", type=int, metavar="N", help="N ranks on this host (the tests' check)")
    where.add_argument("--reprice", metavar="FILE", help="a results file of --netcluster: its rows priced again, "
                       "the map's latency --map-latency-us (default 0); printed, nothing run")
    ap.add_argument("--ranks-per-host", type=int, default=2, help="with --loopback (default 2)")
    ap.add_argument("--cpu-ns-per-byte", type=float, default=None,
                    help="with --netcluster: the CPU a byte between hosts costs (default: measured first; 0: not priced)")
    ap.add_argument("--local-cpu-ns-per-byte", type=float, default=None,
                    help="with --cpu-ns-per-byte: the CPU a byte between two ranks of a host costs (default: not "
                         "priced; measured first with the other)")
    ap.add_argument("--map-latency-us", type=float, default=None,
                    help="with --netcluster: the latency the map declares (default: what makes braid-sim price "
                         "the step probe, a ring of 1 KiB, at what it measured; 0: none)")
    ap.add_argument("--coll", default="allreduce", help="comma list of collectives, or all (default allreduce)")
    ap.add_argument("--algos", default=ALLREDUCE, help=f"AllReduce's algorithms (default {ALLREDUCE})")
    ap.add_argument("--other-algos", default="auto", help="the other collectives' (default auto)")
    ap.add_argument("-b", "--min", type=parse_size, default=64 << 10)
    ap.add_argument("-e", "--max", type=parse_size, default=16 << 20)
    ap.add_argument("-f", "--factor", type=int, default=4)
    ap.add_argument("-n", "--iters", type=int, default=5)
    ap.add_argument("-w", "--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1, help="runs of each perf binary; the table has the median (default 1)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    ap.add_argument("--build", default=str(REPO / "build" / "release"))
    ap.add_argument("--name", help="results file name (default sim_validate_<date>)")
    ap.add_argument("--results", default=str(BENCH / "results"))
    ap.add_argument("--check", type=float, metavar="TOL",
                    help="with --netcluster: exit 1 unless every size ran and measured within TOL of braid-sim "
                         "(0.3: 30%%)")
    args = ap.parse_args()
    args.colls = [c for c in COLLS if c != "sendrecv"] if args.coll == "all" else args.coll.split(",")
    unknown = [c for c in args.colls if c not in COLLS or c == "sendrecv"]
    if unknown:
        ap.error(f"--coll: unknown collective {unknown[0]}")
    if args.local_cpu_ns_per_byte is not None and (args.cpu_ns_per_byte is None or args.local_cpu_ns_per_byte < 0):
        ap.error("--local-cpu-ns-per-byte: a non-negative number, with --cpu-ns-per-byte (else both are measured)")
    if args.map_latency_us is not None and (args.loopback or args.map_latency_us < 0):
        ap.error("--map-latency-us: a non-negative number, with --netcluster or --reprice")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: expected at least 1")
    if args.check is not None and (args.loopback or not args.check > 0):
        ap.error(f"--check {args.check:g}: expected a tolerance above 0, with --netcluster")
    args.algos, args.other_algos = args.algos.split(","), args.other_algos.split(",")
    args.sizes = size_steps(args.min, args.max, args.factor)
    args.build = str(Path(args.build).resolve())
    if args.reprice:
        return reprice(args)
    return loopback(args) if args.loopback else netcluster(args)


if __name__ == "__main__":
    sys.exit(main())
