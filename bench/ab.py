#!/usr/bin/env python3
"""ab.py: Braid against Braid, interleaved: an A/B of builds (before and after a change) or of
flags (-R 0 against -R 1 on one build), measured side by side in one run.

    bench/ab.py --np 2,4 --variant before=/work/before/build/release --variant after=build/release \\
        --rounds 3 -b 8 -e 256M -f 2 -n 20 -w 5
    bench/ab.py --np 2 --variant copy=build/release:-R 0 --variant zerocopy=build/release:-R 1 --rounds 5
    bench/ab.py --variant ring="build/release:-A ring" --variant auto=build/release

--variant NAME=BUILD[:ARGS] is a build folder (tools/braidrun and bench/perf/<coll>_perf in it)
and arguments added to the perf binary's (words after it up to the next option join them; quote
ARGS that hold an option of their own, as "-A ring"). Each round runs every variant once, in the order
given (A, B, A, B, ...), at each rank count in turn, so that the machine's drift reaches them
alike. Per size the table gives each variant's median time over the rounds and the busbw of
that round, and, for every variant after the first, the median over rounds of its time over the
first variant's in the same round ("after/before time": below 1, faster); a last table has
every round's times. The results file bench/results/<name>.md starts with the one command that
reproduces it, the date, the machine and each variant's source revision (git describe of the
tree its build was configured from: CMakeCache.txt's CMAKE_HOME_DIRECTORY).

Parsing, running and merging rounds are compare.py's (imported, not copied).
"""
import argparse
import datetime
import shlex
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402
from report import build_source, git_revision, human, machine, md_table, rank_counts, text_table  # noqa: E402


def parse_variant(text):
    """NAME=BUILD[:ARGS] as (name, build folder, [args])."""
    name, eq, rest = text.partition("=")
    build, _, extra = rest.partition(":")
    if not eq or not name.strip() or not build.strip():
        raise ValueError(f"--variant {text}: expected NAME=BUILD[:ARGS]")
    return name.strip(), str(Path(build.strip()).resolve()), shlex.split(extra)


def time_ratio(row, base):
    """The median over rounds of row's time over base's in the same round, "0.930"; "-" where one
    is missing or their rounds do not pair up (a round failed)."""
    if not row or not base:
        return "-"
    mine, theirs = row.get("rounds_us", [row["time_us"]]), base.get("rounds_us", [base["time_us"]])
    if len(mine) != len(theirs) or min(theirs) <= 0:
        return "-"
    return f"{compare.median(a / b for a, b in zip(mine, theirs)):.3f}"


def table(variants, runs, sizes):
    """Per size: each variant's median time and busbw, then each later variant's time ratio."""
    first = variants[0][0]
    header = ["size"]
    for name, _, _ in variants:
        header += [f"{name} us", f"{name} busbw"]
    header += [f"{name}/{first} time" for name, _, _ in variants[1:]]
    rows = []
    for s in sizes:
        row = [human(s)]
        for name, _, _ in variants:
            row += [compare.time_cell(runs[name], s), compare.cell(runs[name], s, "busbw", "{:.2f}")]
        row += [time_ratio(runs[name].rows.get(s), runs[first].rows.get(s)) for name, _, _ in variants[1:]]
        rows.append(row)
    return header, rows


def every_round(variants, runs, sizes):
    header = ["size"] + [f"{name} us, by round" for name, _, _ in variants]
    rows = [[human(s)] + [" / ".join(f"{t:.2f}" for t in runs[n].rows[s].get("rounds_us", [runs[n].rows[s]["time_us"]]))
                          if s in runs[n].rows else "-" for n, _, _ in variants] for s in sizes]
    return header, rows


def measure(args, variants, np_):
    """Every variant once per round at np_ ranks; the merged runs by name."""
    rounds = {name: [] for name, _, _ in variants}
    for i in range(args.rounds):
        for name, build, extra in variants:
            vargs = SimpleNamespace(**{**vars(args), "build": build, "np": np_})
            run = compare.settle(compare.run_braid(vargs, args.coll, extra=extra))
            rounds[name].append(run)
            print(f"== {name} ({np_} ranks, round {i + 1} of {args.rounds}): {run.status}"
                  + (f" ({run.why})" if run.why else ""), file=sys.stderr, flush=True)
    return {name: compare.merge(rs) for name, rs in rounds.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", action="append", required=True, nargs="+", metavar="NAME=BUILD[:ARGS]",
                    help="a build folder and extra perf arguments (quote them where one is an option of its own: "
                         "\"x=build:-A ring\"); two or more, the first the baseline")
    ap.add_argument("-np", "--np", default="4", help="ranks, or a comma list run in turn (default 4)")
    ap.add_argument("--coll", default="allreduce", choices=list(compare.COLLS))
    ap.add_argument("-b", "--min", type=compare.parse_size, default=8)
    ap.add_argument("-e", "--max", type=compare.parse_size, default=256 << 20)
    ap.add_argument("-f", "--factor", type=int, default=2, choices=(2, 4))
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-w", "--warmup", type=int, default=5)
    ap.add_argument("-c", "--check", type=int, default=1, choices=(0, 1))
    ap.add_argument("-r", "--root", type=int, default=0)
    ap.add_argument("--place", choices=("out", "in"), default="out")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every variant (default 3)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per run (default 900)")
    ap.add_argument("--name", help="results file name (default ab_<coll>_np<N>_<date>)")
    ap.add_argument("--results", default=str(compare.BENCH / "results"), help="folder for <name>.md")
    args = ap.parse_args()
    try:
        variants = [parse_variant(" ".join(v)) for v in args.variant]
        nps = compare.rank_list(args.np)
    except ValueError as e:
        ap.error(str(e) or f"--np {args.np}: expected a rank count or a comma list of them")
    names = [v[0] for v in variants]
    if len(variants) < 2 or len(set(names)) < len(names) or args.rounds < 1:
        ap.error("give two or more variants with different names, and --rounds 1 or more")
    args.sizes = compare.size_steps(args.min, args.max, args.factor)
    args.cluster, args.register = None, False  # what compare.run_braid asks of its args

    now = datetime.datetime.now(datetime.timezone.utc)
    coll = compare.COLLS[args.coll]
    place = "out-of-place" if args.place == "out" else "in-place"
    out = [f"# A/B: {coll.title}, {' vs '.join(reversed(names))} ({rank_counts(nps)} on one host)", "",
           f"- command: `{shlex.join([sys.executable] + sys.argv)}`",
           f"- date: {now.strftime('%Y-%m-%d %H:%M:%S UTC')}",
           f"- machine: {machine()}"]
    for name, build, extra in variants:
        out.append(f"- {name}: build `{build}`, source {git_revision(build_source(build))} (`{build_source(build)}`)"
                   + (f", perf arguments `{shlex.join(extra)}`" if extra else ""))
    out += [f"- {coll.title}, {'float sum' if coll.reduces else 'float'}; sizes {human(args.min)} to "
            f"{human(args.max)}, factor {args.factor}; {args.iters} timed iterations after {args.warmup} warm-up; data "
            f"check {'on' if args.check else 'off'}; the {place} columns; busbw = {coll.busbw}",
            f"- {args.rounds} rounds: each runs every variant once, in the order above; a variant's cell is its round "
            f"with the median time; `X/{names[0]} time` is the median over rounds of X's time over {names[0]}'s in the "
            "same round (below 1: X is faster)"]
    bad = []
    for np_ in nps:
        runs = measure(args, variants, np_)
        header, rows = table(variants, runs, args.sizes)
        print(f"\n{np_} ranks\n" + text_table(header, rows))
        out += ["", f"## {np_} ranks", "", "| variant | status | command |", "|---|---|---|"]
        for name, _, _ in variants:
            r = runs[name]
            status = r.status + (f" ({r.why})" if r.why else "") + (f"; {r.wrong} WRONG values" if r.wrong else "")
            out.append(f"| {name} | {status.replace('|', '/')} | `{r.shown()}` |")
        out += md_table(header, rows)
        if args.rounds > 1:
            out += ["", "Every round, in the order they ran:"] + md_table(*every_round(variants, runs, args.sizes))
        bad += [f"{n} ({np_} ranks)" for n, r in runs.items() if r.wrong]

    name = args.name or f"ab_{args.coll}_np{'-'.join(map(str, nps))}_{now.strftime('%Y%m%d-%H%M')}"
    path = Path(args.results) / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    return compare.finish(path, "\n".join(out) + "\n", bad)


if __name__ == "__main__":
    sys.exit(main())
