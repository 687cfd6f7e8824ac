#!/usr/bin/env python3
"""tls.py: AllReduce with TLS (BRAID_TLS_PSK) against plaintext over TCP between two emulated
hosts (tools/netcluster: two network namespaces joined by veth through a bridge, every link
shaped by tc tbf to --rates Gbit/s; needs root), side by side in one run.

    python3 bench/tls.py --rates 10,40 --rounds 5 -b 64K -e 256M -f 4 -n 10 --volume 64M --lat-iters 2000

The configurations (--configs): plain; tls, whose records Braid's record layer seals and opens
(BRAID_TLS_RECORDS=braid, the default where the kernel has no TLS) with the default AES-GCM
(BRAID_TLS_GCM=auto: Intel's ipsec-mb where it loads); tls-evp, the same record layer with
OpenSSL's AES-GCM (BRAID_TLS_GCM=openssl); tls-openssl, OpenSSL's record layer
(BRAID_TLS_RECORDS=openssl). Each round runs, at every rate in turn, every
configuration: the busbw sizes (-b..-e), then the 8-byte latency (all_reduce_perf -b 8 -e 8
with --lat-iters iterations). Each size is its own all_reduce_perf run of max(-n, --volume /
size) iterations after an eighth of that volume of warm-up: a tbf shaper passes its whole
bucket (1 ms of traffic at the rate, 1.25 MB at 10 Gbit/s) at memory speed after idling, so ten
calls of a small size would measure the bucket rather than the link, and even ten of 1 MiB read
above the link's rate in plaintext. One rank per host, so every byte
between the ranks crosses the shaped link over the TCP transport; the bootstrap is encrypted
too under TLS, outside the timed calls. Per size the table gives each configuration's median
busbw over the rounds and the median over rounds of its busbw over plaintext's in the same
round. The results file bench/results/<name>.md starts with the command
that reproduces it.

Parsing and running are compare.py's (imported, not copied).
"""
import argparse
import datetime
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402
from report import git_revision, human, machine, md_table  # noqa: E402

KEY = "bench-tls-key-not-secret-0123456789abcdef"
# Each configuration's environment beyond NCCL_SHM_DISABLE=1.
CONFIGS = {
    "plain": {},
    "tls": {"BRAID_TLS_PSK": KEY, "BRAID_TLS_RECORDS": "braid", "BRAID_TLS_GCM": "auto"},
    "tls-evp": {"BRAID_TLS_PSK": KEY, "BRAID_TLS_RECORDS": "braid", "BRAID_TLS_GCM": "openssl"},
    "tls-openssl": {"BRAID_TLS_PSK": KEY, "BRAID_TLS_RECORDS": "openssl"},
}


def iterations(args, size):
    """(timed, warm-up) iterations for one size: at least --volume bytes timed, an eighth of
    that warming up (enough to drain the shaper's bucket at 40 Gbit/s, 5 MB)."""
    timed = max(args.iters, -(-args.volume // size))
    return timed, max(args.warmup, -(-args.volume // (8 * size)))


def run_one(args, rate, config, size, iters, warmup):
    """One all_reduce_perf run of one size across the two hosts; its row, or None."""
    build = Path(args.build).resolve()
    perf = build / "bench" / "perf" / "all_reduce_perf"
    flags = ["-b", str(size), "-e", str(size), "-n", str(iters), "-w", str(warmup)]
    cmd = [str(compare.REPO / "tools" / "netcluster"), "--hosts", "2", "--racks", "1",
           "--rack-gbit", str(rate), "--prefix", "bnctls-", "--quiet", "--timeout", str(args.timeout),
           "--", str(perf)] + flags + ["-c", "1"]
    env = {"NCCL_SHM_DISABLE": "1", **CONFIGS[config]}
    run = compare.Run(f"braid/{rate}G-{config}-{human(size)}", cmd, env=env)
    out = compare.execute(run, args, limit=args.timeout + 30)
    if out is None:
        print(f"   failed: {run.why}", file=sys.stderr)
        return None
    return compare.parse_perf_table(out, "out", [size]).get(size)


def ratio(mine, base):
    pairs = [(a, b) for a, b in zip(mine, base) if b > 0]
    return f"{compare.median(a / b for a, b in pairs):.2f}" if pairs else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(compare.REPO / "build" / "release"))
    ap.add_argument("--rates", default="10,40", help="link rates in Gbit/s (default 10,40)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"which of {', '.join(CONFIGS)} to run (plain always runs)")
    ap.add_argument("-b", "--min", type=compare.parse_size, default=64 << 10)
    ap.add_argument("-e", "--max", type=compare.parse_size, default=256 << 20)
    ap.add_argument("-f", "--factor", type=int, default=4, choices=(2, 4))
    ap.add_argument("-n", "--iters", type=int, default=10)
    ap.add_argument("-w", "--warmup", type=int, default=3)
    ap.add_argument("--volume", type=compare.parse_size, default=64 << 20,
                    help="bytes each size moves at least in its timed calls (default 64M)")
    ap.add_argument("--lat-iters", type=int, default=2000, help="iterations of the 8-byte run")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--name", default="tls_netcluster_2hosts")
    ap.add_argument("--results", default=str(compare.BENCH / "results"))
    args = ap.parse_args()
    rates = [float(r) if "." in r else int(r) for r in args.rates.split(",")]
    sizes = compare.size_steps(args.min, args.max, args.factor)
    configs = ["plain"] + [c for c in args.configs.split(",") if c != "plain"]
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"--configs: unknown '{c}' (known: {', '.join(CONFIGS)})")
    command = "python3 bench/tls.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    # busbw[rate][config] = {size: [per round]}; lat[rate][config] = [per round]
    busbw = {r: {c: {s: [] for s in sizes} for c in configs} for r in rates}
    lat = {r: {c: [] for c in configs} for r in rates}
    for rnd in range(args.rounds):
        print(f"== round {rnd + 1} of {args.rounds}", file=sys.stderr, flush=True)
        for rate in rates:
            for config in configs:
                for s in sizes:
                    row = run_one(args, rate, config, s, *iterations(args, s))
                    if row and row["wrong_all"] == 0:
                        busbw[rate][config][s].append(row["busbw"])
                row = run_one(args, rate, config, 8, args.lat_iters, args.lat_iters // 10)
                if row:
                    lat[rate][config].append(row["time_us"])

    lines = [f"# AllReduce with TLS against plaintext, two emulated hosts", "",
             "    " + command, "",
             f"{datetime.datetime.now():%Y-%m-%d %H:%M}, {machine()}, Braid {git_revision()}.", "",
             "Two hosts of `tools/netcluster --hosts 2 --racks 1 --rack-gbit RATE` (network namespaces, "
             "veth pairs through a bridge, every link shaped by tc tbf), one rank each, "
             "`NCCL_SHM_DISABLE=1` (the TCP transport, 4 streams); TLS is `BRAID_TLS_PSK` "
             "(TLS 1.3, AES-128-GCM; this kernel has no kTLS): `tls` with Braid's record layer "
             "(`BRAID_TLS_RECORDS=braid`) and its default AES-GCM (`BRAID_TLS_GCM=auto`: Intel's "
             "ipsec-mb where it loads), `tls-evp` with that record layer and OpenSSL's AES-GCM "
             "(`BRAID_TLS_GCM=openssl`), `tls-openssl` with OpenSSL's record layer. "
             f"all_reduce_perf, float sum, out of place, checked; each size its own run of "
             f"max({args.iters}, {human(args.volume)} / size) iterations after an eighth of that "
             "volume of warm-up (a shaper's bucket passes 1 ms of traffic at memory speed after "
             "idling); "
             f"{args.rounds} rounds, each round running every rate, each configuration in turn "
             f"({', '.join(configs)}). busbw (GB/s) is the median over rounds; x/plain is the "
             "median over rounds of the ratio within a round.", ""]
    encrypted = configs[1:]
    header = ["size"]
    for rate in rates:
        header += [f"{rate}G plain"]
        for c in encrypted:
            header += [f"{rate}G {c}", f"{rate}G {c}/plain"]
    table = []
    for s in sizes:
        row = [human(s)]
        for rate in rates:
            p = busbw[rate]["plain"][s]
            row += [f"{compare.median(p):.3f}" if p else "-"]
            for c in encrypted:
                t = busbw[rate][c][s]
                row += [f"{compare.median(t):.3f}" if t else "-",
                        ratio(t, p) if len(p) == len(t) else "-"]
        table.append(row)
    lines += ["## busbw", ""] + md_table(header, table) + [""]
    lat_rows = []
    for rate in rates:
        p = lat[rate]["plain"]
        row = [f"{rate}G", f"{compare.median(p):.1f}" if p else "-"]
        for c in encrypted:
            t = lat[rate][c]
            cost = "-"
            if p and t and len(p) == len(t):
                cost = f"{compare.median(b - a for a, b in zip(p, t)):+.1f}"
            row += [f"{compare.median(t):.1f}" if t else "-", cost]
        lat_rows.append(row)
    lat_header = ["link", "plain us"]
    for c in encrypted:
        lat_header += [f"{c} us", f"{c} cost us (median of per-round differences)"]
    lines += [f"## 8-byte AllReduce latency ({args.lat_iters} iterations)", ""] + \
        md_table(lat_header, lat_rows)
    lines += ["", "## Every round", ""]
    rr = []
    for rate in rates:
        for c in configs:
            for s in sizes:
                rr.append([f"{rate}G", c, human(s)] + [f"{v:.3f}" for v in busbw[rate][c][s]])
            rr.append([f"{rate}G", c, "8 B (us)"] + [f"{v:.1f}" for v in lat[rate][c]])
    lines += md_table(["link", "config", "size"] + [f"round {i + 1}" for i in range(args.rounds)], rr)
    text = "\n".join(lines) + "\n"
    path = Path(args.results) / f"{args.name}.md"
    path.write_text(text)
    print(text)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
