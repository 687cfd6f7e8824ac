#!/usr/bin/env python3
"""plot_busbw: draws the picture of `bench/compare.py --plot`: busbw against message size, a
panel per rank count (or collective), a line per baseline, from the JSON compare.py writes:

    {"title": "...", "xlabel": "message size", "ylabel": "busbw (GB/s)",
     "panels": [{"title": "2 ranks",
                 "series": [{"label": "Braid/auto", "style": "solid",
                             "points": [{"size": 8, "busbw": 0.05}, ...]}, ...]}, ...]}

style is solid, dashed (memcpy, a yardstick) or dotted (a bound). Both axes are logarithmic: sizes in powers of two, labelled 8 B, 1 KiB, 1 MiB, ... Needs
matplotlib (Debian: python3-matplotlib); compare.py runs it with its --python where its own
interpreter lacks it.

    python3 bench/plot_busbw.py DATA.json OUT.png
"""
import json
import math
import sys
import textwrap


def size_label(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):g} {unit}"
    return f"{nbytes:g} B"


def size_ticks(sizes, most=10):
    """Tick sizes: the smallest and the largest, and between them the powers of two whose exponent
    is a multiple of k, the least of 1, 2, 5, 10 that keeps them to `most` (so 1 KiB, 1 MiB are
    among them from k = 2 on); none within one power of two of an end."""
    lo, hi = int(math.log2(min(sizes))), int(math.log2(max(sizes)))
    step = next((k for k in (1, 2, 5) if len(range(-(-lo // k) * k, hi + 1, k)) <= most), 10)
    inner = [e for e in range(lo + 1, hi) if e % step == 0 and (step == 1 or lo + 1 < e < hi - 1)]
    return [1 << e for e in [lo] + inner + ([hi] if hi > lo else [])]


def busbw_minor_label(value, limits):
    """Where the busbw axis spans under three powers of ten (one or two labelled), also label its
    2s and 5s."""
    lo, hi = limits
    digit = round(value / 10 ** math.floor(math.log10(value) + 1e-9))
    return f"{value:g}" if lo > 0 and math.log10(hi / lo) < 3 and digit in (2, 5) else ""


def draw(document, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullLocator

    panels = document["panels"]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 5.0), squeeze=False, sharey=True)
    colours = {}  # one colour per baseline across panels
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, panel in zip(axes[0], panels):
        sizes = []
        for s in panel["series"]:
            points = [p for p in s["points"] if p["busbw"] > 0]  # a log axis has no zero
            if not points:
                continue
            colour = colours.setdefault(s["label"], palette[len(colours) % len(palette)])
            xs, ys = [p["size"] for p in points], [p["busbw"] for p in points]
            sizes += xs
            style = s.get("style", "solid")
            ax.plot(xs, ys, marker="" if style == "dotted" else "o", markersize=3, linewidth=1.4, color=colour,
                    linestyle={"solid": "-", "dashed": "--", "dotted": ":"}[style], label=s["label"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        if sizes:
            ticks = size_ticks(sizes)
            ax.set_xticks(ticks)
            ax.set_xticklabels([size_label(t) for t in ticks], rotation=45, ha="right")
            ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _, ax=ax: busbw_minor_label(v, ax.get_ylim())))
        ax.set_xlabel(document.get("xlabel", "message size"))
        ax.set_title(panel["title"])
        ax.grid(True, which="major", alpha=0.35)
        ax.grid(True, which="minor", axis="y", alpha=0.12)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel(document.get("ylabel", "busbw (GB/s)"))
    width = int(12 * 6.4 * len(panels))  # characters of a 10-point title across the figure
    fig.suptitle("\n".join(textwrap.fill(line, width) for line in document["title"].splitlines()), fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        document = json.load(f)
    draw(document, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
