#!/usr/bin/env python3
"""The network changes under a running job: a loop of AllReduce calls on the emulated cluster
(tools/netcluster, 8 hosts, 2 racks, ranks alternating racks), whose uplinks start as fast as
the host links, are slowed to a quarter mid-run and later restored (netcluster --reshape).
Three runs side by side, one after another in one invocation:

  adaptive   Braid as it ships (BRAID_ADAPT=1)
  fixed      BRAID_ADAPT=0: the plan made at init stays
  fresh      a communicator initialised on the degraded network (uplinks slow from the start)

Then one host's link (host 3) slowed to a tenth instead, for good, adaptive and fixed: whether
the plan settles (no switching back and forth) and what it gains.

Writes bench/results/<name>.md (per-phase medians, the goal checks, every plan change, the
command), <name>.json (every call) and <name>.png (per-call time over time, the link changes
and plan changes marked). Needs root (network namespaces) and a built tree:

    sudo python3 bench/adapt.py [--build build/release] [--bytes 8M] [--name adapt_netcluster]

Rank 0's lines are read in order: "call i t=... us=..." from bench/micro/allreduce_loop,
netcluster's "t=... s: uplinks now G Gbit/s", and Braid's "adapt: ..." INFO lines, so a link
change is placed between the two calls it fell between (the call in flight is the first after).
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALL = re.compile(r"^\[0\] call (\d+) t=([0-9.]+) us=([0-9]+)")
RESHAPE = re.compile(r"^netcluster: t=([0-9.]+) s: (\S+) now ([0-9.]+) Gbit/s")
ADAPT = re.compile(r"^\[0\] .*NCCL (?:INFO|WARN) adapt: comm \S+ rank 0: call (\d+): (.*)$")
CHOICE = re.compile(r"^\[0\] .*NCCL INFO ncclAllReduce count (\d+) x 4 B, \d+ ranks: (\w+)")


def run(args, label, env, reshape, uplink, seconds):
    cmd = [str(ROOT / "tools" / "netcluster"), "--hosts", "8", "--racks", "2", "--placement",
           "alternate", "--rack-gbit", str(args.rack_gbit), "--uplink-gbit", str(uplink),
           "--timeout", str(int(seconds * 4 + 120))]
    if reshape:
        cmd += ["--reshape", reshape]
    cmd += ["--", str(Path(args.build) / "bench" / "micro" / "allreduce_loop"), "-b", args.bytes,
            "-s", str(seconds)]
    full_env = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING", **env}
    print(f"== {label}: {' '.join(f'{k}={v}' for k, v in env.items())} {' '.join(cmd)}", flush=True)
    p = subprocess.run(cmd, env={**os.environ, **full_env}, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:])
        sys.exit(f"{label}: netcluster exited {p.returncode}")
    calls, events = [], []
    large = str(int(parse_bytes(args.bytes) // 4))
    for line in p.stdout.splitlines():
        if m := CALL.match(line):
            calls.append({"call": int(m[1]), "t": float(m[2]), "ms": int(m[3]) / 1000})
        elif m := RESHAPE.match(line):
            events.append({"kind": "link", "before_call": len(calls), "what": f"{m[2]} {m[3]} Gbit/s"})
        elif m := ADAPT.match(line):
            if "plan epoch" in m[2]:
                events.append({"kind": "plan", "before_call": len(calls), "what": m[2]})
            elif " is late: " in m[2] or "on time again" in m[2]:
                events.append({"kind": "late", "before_call": len(calls), "what": m[2]})
            elif "is on a slow host" in m[2] or "no longer slow" in m[2]:
                events.append({"kind": "slow", "before_call": len(calls), "what": m[2]})
        elif (m := CHOICE.match(line)) and m[1] == large:
            events.append({"kind": "algorithm", "before_call": len(calls), "what": m[2]})
    return {"label": label, "env": env, "command": cmd, "calls": calls, "events": events}


def parse_bytes(s):
    m = re.fullmatch(r"([0-9.]+)([KMG]?)", s)
    return float(m[1]) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m[2]]


def med(calls):
    return statistics.median(c["ms"] for c in calls) if calls else float("nan")


def link_changes(r):
    return [e["before_call"] for e in r["events"] if e["kind"] == "link"]


def phases(r):
    """(before the first link change, calls 10-19 after it, the rest of the degraded phase,
    10-19 calls after the second, the rest)."""
    c = r["calls"]
    ch = link_changes(r)
    if len(ch) < 2:
        return None
    d, u = ch[0], ch[1]
    return {"before": c[:d], "degraded 10-19": c[d + 10:min(d + 20, u)],
            "degraded rest": c[d + 20:u], "restored 10-19": c[u + 10:u + 20],
            "restored rest": c[u + 20:]}


def plot(runs, fresh_ms, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(10, 5.4))
    colors = {"adaptive": "tab:blue", "fixed": "tab:red"}
    for r in runs:
        ax.plot([c["t"] for c in r["calls"]], [c["ms"] for c in r["calls"]], ".-", lw=1,
                ms=3, color=colors[r["label"]],
                label=f"{r['label']} ({'BRAID_ADAPT=0' if r['label'] == 'fixed' else 'default'})")
    ax.axhline(fresh_ms, color="tab:green", ls="--", lw=1,
               label=f"fresh communicator on the degraded network ({fresh_ms:.0f} ms)")
    adaptive = next(r for r in runs if r["label"] == "adaptive")
    calls = adaptive["calls"]
    for e in adaptive["events"]:
        # Between the call that ended before it and the next one.
        x = calls[e["before_call"] - 1]["t"] if e["before_call"] > 0 else 0
        if e["kind"] == "link":
            ax.axvline(x, color="black", lw=1.5)
            ax.text(x + 0.2, ax.get_ylim()[1] * 0.95, "uplinks " + e["what"].split()[1] + " Gbit/s",
                    fontsize=8, va="top")
        elif e["kind"] == "algorithm":
            ax.axvline(x, color="tab:blue", lw=0.8, ls=":")
            ax.text(x + 0.2, ax.get_ylim()[1] * 0.8, e["what"], fontsize=8, color="tab:blue",
                    va="top")
    ax.set_xlabel("seconds since the first call (the adaptive run's link and plan changes marked)")
    ax.set_ylabel("AllReduce time per call (ms)")
    ax.set_yscale("log")
    ax.set_title("8 MiB AllReduce, 8 hosts in 2 racks (alternating); uplinks slowed to a quarter, "
                 "then restored", fontsize=10)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=str(ROOT / "build" / "release"))
    ap.add_argument("--bytes", default="8M")
    ap.add_argument("--rack-gbit", type=float, default=2.0)
    ap.add_argument("--degrade-at", type=float, default=8.0, help="seconds after the ranks start")
    ap.add_argument("--restore-at", type=float, default=30.0)
    ap.add_argument("--seconds", type=float, default=42.0, help="length of the loop")
    ap.add_argument("--name", default="adapt_netcluster")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    slow = args.rack_gbit / 4
    reshape = f"{args.degrade_at:g}:uplinks={slow:g},{args.restore_at:g}:uplinks={args.rack_gbit:g}"
    # The adaptive run also writes its telemetry (BRAID_STATS_FILE), drawn by tools/braid-stats.
    for old in Path("/tmp").glob("braid-adapt-bench.*.jsonl"):
        old.unlink()
    stats_env = {"BRAID_STATS_FILE": "/tmp/braid-adapt-bench.%h.%p.jsonl",
                 "BRAID_STATS_INTERVAL_MS": "500"}
    runs = [run(args, "adaptive", stats_env, reshape, args.rack_gbit, args.seconds),
            run(args, "fixed", {"BRAID_ADAPT": "0"}, reshape, args.rack_gbit, args.seconds)]
    fresh = run(args, "fresh", {}, "", slow, 8.0)
    # One host's link slowed instead (host 3: rank 6 with alternating placement), for good.
    host_gbit = args.rack_gbit / 10
    slowhost = [run(args, label, env, f"{args.degrade_at:g}:h3={host_gbit:g}", args.rack_gbit, 30.0)
                for label, env in (("slow host, adaptive", {}), ("slow host, fixed", {"BRAID_ADAPT": "0"}))]
    fresh_ms = med(fresh["calls"][3:])
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps({"runs": runs + [fresh] + slowhost}, indent=1) + "\n")
    plot(runs, fresh_ms, out / f"{args.name}.png")
    stats_files = sorted(str(p) for p in Path("/tmp").glob("braid-adapt-bench.*.jsonl"))
    stats = subprocess.run([sys.executable, str(ROOT / "tools" / "braid-stats"), *stats_files, "--png",
                            str(out / f"{args.name}_stats.png")], capture_output=True, text=True)
    if stats.returncode != 0:
        sys.exit(f"tools/braid-stats failed: {stats.stdout}{stats.stderr}")

    lines = [f"# AllReduce while the uplinks change: adaptive, fixed and fresh plans", "",
             "`sudo python3 " + " ".join(["bench/adapt.py"] + sys.argv[1:]) + "`", "",
             f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; git "
             + subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip(), "",
             f"tools/netcluster: 8 hosts, 2 racks, ranks alternating racks, {args.rack_gbit:g} Gbit/s "
             f"host links and uplinks; `--reshape {reshape}` (seconds after the ranks start); "
             f"bench/micro/allreduce_loop -b {args.bytes} (one AllReduce per call, every rank "
             "checking every result exactly). The fresh run starts with the uplinks at "
             f"{slow:g} Gbit/s. Medians in ms; a phase's calls counted from the first call that was "
             "in flight when the link changed.", "",
             "| run | before | degraded, calls 10-19 | degraded, later | restored, calls 10-19 | restored, later |",
             "|---|---|---|---|---|---|"]
    table = {}
    for r in runs:
        ph = phases(r)
        if ph is None:
            sys.exit(f"{r['label']}: the link changes were not both seen")
        table[r["label"]] = {k: med(v) for k, v in ph.items()}
        lines.append(f"| {r['label']} | " + " | ".join(f"{v:.0f}" for v in table[r['label']].values()) + " |")
    lines.append(f"| fresh (degraded from the start) | | {fresh_ms:.0f} | | | |")
    a, f = table["adaptive"], table["fixed"]
    lines += ["", "Goals (issue 19): within 10 calls of the change, within 1.2x of a fresh communicator "
              "and at least 1.5x faster than BRAID_ADAPT=0:", "",
              f"- adaptive / fresh, degraded calls 10-19: {a['degraded 10-19'] / fresh_ms:.2f}x",
              f"- fixed / adaptive, degraded calls 10-19: {f['degraded 10-19'] / a['degraded 10-19']:.2f}x",
              f"- fixed / adaptive, restored calls 10-19: {f['restored 10-19'] / a['restored 10-19']:.2f}x",
              "", "Conditions: the 8 ranks, their shapers and their TCP stacks share the machine's "
              f"{os.cpu_count()} cores. With ranks alternating racks every hop of a flat ring crosses a "
              "rack uplink that four flows share, which the init probe (one pair at a time) does not "
              "see: it finds no racks, and the cost model prices the ring at about a quarter of what it "
              "measures. The connections' path rates show it, and the ranks probe again under load "
              "(docs/adaptation.md, rule 8), which finds the racks; later probes run those rounds too.",
              "", "Plan changes of the adaptive run (rank 0's log; every rank logs the same call):", ""]
    adaptive = runs[0]
    for e in adaptive["events"]:
        lines.append(f"- before loop call {e['before_call']}: {e['kind']}: {e['what']}")
    lines += ["", f"One host's link (host 3, rank 6) slowed to {host_gbit:g} Gbit/s "
              f"{args.degrade_at:g} s in, for the rest of a 30 s loop (medians in ms):", "",
              "| run | before | after, calls 10-19 | after, later | plan changes |", "|---|---|---|---|---|"]
    for r in slowhost:
        c, ch = r["calls"], link_changes(r)
        d = ch[0] if ch else len(c)
        changes = sum(1 for e in r["events"] if e["kind"] == "plan")
        lines.append(f"| {r['label']} | {med(c[:d]):.0f} | {med(c[d + 10:d + 20]):.0f} | "
                     f"{med(c[d + 20:]):.0f} | {changes} |")
    lines += ["", "Its plan changes and warnings (rank 0's log):", ""]
    for e in slowhost[0]["events"]:
        if e["kind"] != "link":
            lines.append(f"- before loop call {e['before_call']}: {e['kind']}: {e['what']}")
    lines += ["", f"![per-call time]({args.name}.png)", "",
              "The adaptive run's telemetry (`BRAID_STATS_FILE`, a line every 500 ms), as "
              "`tools/braid-stats` tabulates and draws it (dotted: plan changes):", "", "```",
              stats.stdout.strip().replace(f"\nwrote {out / f'{args.name}_stats.png'}", ""), "```", "",
              f"![telemetry timeline]({args.name}_stats.png)", ""]
    (out / f"{args.name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
