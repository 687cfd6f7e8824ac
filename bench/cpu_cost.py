"""What a call costs the machine on tools/netcluster, where every emulated host shares its cores:
busy CPU, bytes and messages per call, between hosts and inside them, for each algorithm and
size asked, side by side.

    /usr/bin/python3 bench/cpu_cost.py --netcluster '--hosts 8 --racks 2 --ranks-per-host 2'
        [--coll allreduce] -A ring,hier -b 256K -e 16M [-f 4] [-n 2,8]

runs each algorithm and size twice on the cluster with the cluster map netcluster writes, with
the two iteration counts of -n, and gives the differences over the difference of the calls (each
perf iteration times an out-of-place and an in-place call), so building the cluster and starting
the ranks count for nothing: the machine's busy CPU (/proc/stat, every core) and the ranks' own
counts of what they sent (BRAID_STATS_FILE).
Where ranks outnumber cores the cost model prices the CPU of a call's bytes (the cluster map's
cpu_ns_per_byte and local_cpu_ns_per_byte, which bench/sim_validate.py measures the same way);
this shows what else differs between schedules, such as how many messages they send. Where the
ranks outnumber the cores several times over, the busy CPU of a call varies from run to run by
tens of percent: compare schedules over several runs."""
import argparse
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from compare import COLLS, parse_size, size_steps  # noqa: E402
from report import human  # noqa: E402
from sim_validate import cpu_and_traffic  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--netcluster", required=True, metavar="ARGS", help="tools/netcluster topology flags")
    ap.add_argument("--coll", default="allreduce", choices=[c for c in COLLS if c != "sendrecv"])
    ap.add_argument("-A", "--algos", default="ring", help="comma list of algorithms (default ring)")
    ap.add_argument("-b", "--min", type=parse_size, default=4 << 20)
    ap.add_argument("-e", "--max", type=parse_size, default=None)
    ap.add_argument("-f", "--factor", type=int, default=4)
    ap.add_argument("-n", "--iters", default="2,8", help="the two iteration counts (default 2,8)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per run (default 600)")
    ap.add_argument("--build", default=str(BENCH.parent / "build" / "release"))
    args = ap.parse_args()
    try:
        short, long = (int(x) for x in args.iters.split(","))
    except ValueError:
        ap.error(f"-n {args.iters}: expected two iteration counts, as 2,8")
    if not 1 <= short < long:
        ap.error(f"-n {args.iters}: expected 1 <= the first < the second")
    args.build = str(Path(args.build).resolve())
    if "--write-cluster-map" in args.netcluster:
        ap.error("--netcluster: leave --write-cluster-map out (this script writes the map)")
    calls = 2 * (long - short)
    print(f"# {args.coll} on netcluster {args.netcluster}; per call, runs of {short} and {long} iterations")
    print(f"{'algo':<10} {'size':>8} {'CPU ms':>8} {'between hosts':>22} {'inside hosts':>22} "
          f"{'CPU us a message':>17}")
    failed = 0
    for algo in args.algos.split(","):
        for size in size_steps(args.min, args.max or args.min, args.factor):
            with tempfile.TemporaryDirectory() as tmp:
                # The ranks see the racks, as sim_validate's measured runs do (netcluster gives
                # them the map it writes): the schedule is the one that runs there.
                flags = f"{args.netcluster} --write-cluster-map {tmp}/map.xml"
                runs = [cpu_and_traffic(args, flags, args.coll, algo, size, n) for n in (short, long)]
            if None in runs:
                print(f"{algo:<10} {human(size):>8} run failed")
                failed += 1
                continue
            cpu, net, shm, net_msgs, shm_msgs = ((b - a) / calls for a, b in zip(*runs))
            msgs = net_msgs + shm_msgs
            print(f"{algo:<10} {human(size):>8} {cpu * 1e3:8.1f} {net / 2**20:8.1f} MiB {net_msgs:>6.0f} msgs "
                  f"{shm / 2**20:8.1f} MiB {shm_msgs:>6.0f} msgs {cpu * 1e6 / msgs if msgs else 0:17.1f}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
