"""bench/compare.py's arithmetic and parsing (how rounds merge, the copy bound of the collectives
that only move data, the uplink bound, the compression columns, the sections per rank count,
the plot's data) and bench/ab.py's ratios. Run by ctest (bench.compare_py); needs no build and
runs no benchmark."""
import contextlib
import importlib.util
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare", REPO / "bench" / "compare.py")
compare = importlib.util.module_from_spec(spec)
sys.modules["compare"] = compare
spec.loader.exec_module(compare)
import ab  # noqa: E402  (bench/ is on the path now; ab imports this same compare)
import cluster  # noqa: E402
import plot_busbw  # noqa: E402
import report  # noqa: E402


def perf_run(key, rows, status="ok", **kind):
    run = compare.Run(key, ["cmd"], **kind)
    run.status = status
    run.rows = {size: {"size": size, "time_us": t, "busbw": b, "wrong": 0} for size, (t, b) in rows.items()}
    return run


# A build folder with nothing built in it: compare.py's command line wants one, and nothing can start.
EMPTY_BUILD = tempfile.TemporaryDirectory()
(Path(EMPTY_BUILD.name) / "bench" / "perf").mkdir(parents=True)


def args_for(*argv):
    """compare.py's parsed command line (nothing runs)."""
    return compare.parse_args(["--build", EMPTY_BUILD.name] + list(argv))


def refused(*argv):
    """Whether compare.py's command line refuses argv (argparse's message kept off the log)."""
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            args_for(*argv)
        except SystemExit:
            return True
    return False


class Speedup(unittest.TestCase):
    def test_from_the_times_when_every_run_has_one(self):
        braid = {"time_us": 0.16, "busbw": 0.05}
        others = [{"time_us": 0.14, "busbw": 0.05}, {"time_us": 0.30, "busbw": 0.02}]
        self.assertEqual(compare.speedup(braid, others), "0.88x")  # 0.14 / 0.16, not 0.05 / 0.05

    def test_with_rounds_the_median_of_each_rounds_ratio(self):
        # Round 2 caught Braid in a slow minute and round 3 OpenMPI: the medians of the times
        # (0.16 and 0.15) would say 0.94x; round by round it is 1.00x, 0.40x and 2.5x.
        braid = {"time_us": 0.16, "busbw": 0.05, "rounds_us": [0.15, 0.40, 0.16]}
        mpi = {"time_us": 0.15, "busbw": 0.05, "rounds_us": [0.15, 0.15, 0.40]}
        self.assertEqual(compare.speedup(braid, [mpi]), "1.00x")

    def test_from_busbw_without_times_and_nothing_to_compare(self):
        self.assertEqual(compare.speedup({"busbw": 3.0}, [{"busbw": 1.5}]), "2.00x")
        self.assertEqual(compare.speedup({"time_us": 1.0, "busbw": 1.0}, []), "-")
        self.assertEqual(compare.speedup(None, [{"time_us": 1.0, "busbw": 1.0}]), "-")


class MemcpyShare(unittest.TestCase):
    def test_each_rounds_share_then_the_median(self):
        braid = {"busbw": 6.0, "rounds": [6.0, 6.2, 5.8]}
        memcpy = {"rate": 15.0, "rounds": [12.0, 15.0, 20.0]}  # 50%, 41%, 29%
        self.assertEqual(compare.memcpy_share(braid, memcpy), "41%")

    def test_one_round_and_nothing_to_compare(self):
        self.assertEqual(compare.memcpy_share({"busbw": 6.0}, {"rate": 15.0}), "40%")
        self.assertEqual(compare.memcpy_share(None, {"rate": 15.0}), "-")


class MergeRounds(unittest.TestCase):
    def test_one_round_is_itself(self):
        run = perf_run("braid", {1024: (10.0, 1.0)})
        self.assertIs(compare.merge([run]), run)

    def test_median_time_row_and_every_round_kept(self):
        rounds = [perf_run("mpi", {1024: (30.0, 1.0)}), perf_run("mpi", {1024: (10.0, 3.0)}),
                  perf_run("mpi", {1024: (20.0, 2.0)})]
        merged = compare.merge(rounds)
        self.assertEqual(merged.rows[1024]["time_us"], 20.0)
        self.assertEqual(merged.rows[1024]["busbw"], 2.0)
        self.assertEqual(merged.rows[1024]["rounds"], [1.0, 3.0, 2.0])  # in the order they ran
        self.assertEqual(merged.rows[1024]["rounds_us"], [30.0, 10.0, 20.0])
        self.assertEqual(merged.status, "ok")

    def test_even_rounds_take_the_lower_median_and_failures_show(self):
        rounds = [perf_run("braid", {8: (4.0, 1.0)}), perf_run("braid", {8: (2.0, 2.0)}, status="failed")]
        rounds[1].why = "exit code 1"
        merged = compare.merge(rounds)
        self.assertEqual(merged.rows[8]["time_us"], 2.0)
        self.assertEqual((merged.status, merged.why), ("failed", "exit code 1"))

    def test_memcpy_rounds_merge_by_rate(self):
        rounds = []
        for rate in (10.0, 30.0, 20.0):
            run = compare.Run("memcpy", ["memcpy-rate"])
            run.status, run.rows = "ok", {64: {"rate": rate}}
            rounds.append(run)
        self.assertEqual(compare.merge(rounds).rows[64]["rate"], 20.0)


class CopyBound(unittest.TestCase):
    def test_every_output_written(self):
        # AllGather out of place, 4 ranks: 4 outputs of size bytes; busbw = 3/4 size / time.
        self.assertEqual(compare.COLLS["allgather"].copies(4, False), (4, 0.75))
        self.assertEqual(compare.COLLS["alltoall"].copies(4, True), (3, 0.75))
        self.assertEqual(compare.COLLS["broadcast"].copies(4, False), (4, 1))
        self.assertEqual(compare.COLLS["gather"].copies(4, False), (1, 0.75))
        self.assertIsNone(compare.COLLS["allreduce"].copies)

    def test_bound_column(self):
        class Args:
            np, place, cores, uplink, cluster = 4, "out", 2, None, None
        runs = {"braid": perf_run("braid", {1 << 20: (100.0, 2.0)}),
                "mpi": perf_run("mpi", {1 << 20: (200.0, 1.0)}),
                "gloo": compare.Run("gloo")}
        for key, rate in (("memcpy", 10.0), ("memcpy-all", 16.0)):
            runs[key] = compare.Run(key)
            runs[key].status, runs[key].rows = "ok", {1 << 20: {"rate": rate}}
        header, table = compare.combine(Args, "allgather", runs, [1 << 20])
        row = dict(zip(header, table[0]))
        self.assertEqual(row["copy bound busbw"], "3.00")  # 16 GB/s x 0.75 / 4
        self.assertEqual(row["Braid/bound"], "67%")
        self.assertEqual(row["OpenMPI/bound"], "33%")


class UplinkBound(unittest.TestCase):
    def test_the_cluster_from_netclusters_own_defaults(self):
        c = cluster.Topology("--hosts 8 --racks 2 --placement alternate")
        self.assertEqual((c.ranks, c.rack_sizes, c.rack_gbit, c.placement), (8, [4, 4], 2.0, "alternate"))
        self.assertAlmostEqual(c.uplink_gbit, 2 / 3)  # a third of the host links
        self.assertEqual(cluster.Topology("--hosts 3 --racks 2 --ranks-per-host 2").rack_sizes, [2, 1])
        self.assertEqual(cluster.Topology("--hosts 3 --racks 2 --ranks-per-host 2").ranks, 6)
        with self.assertRaises(ValueError):
            cluster.Topology("--hosts 4 --mpi")  # compare.py adds --mpi itself
        cmd = c.command(["perf", "-b", "8"], mpi=True, timeout=60)
        self.assertEqual(cmd[1:], ["--quiet", "--timeout", "60", "--hosts", "8", "--racks", "2", "--placement",
                                   "alternate", "--mpi", "--", "perf", "-b", "8"])

    def test_bound_is_size_bits_over_the_uplink_rate_for_two_racks(self):
        two, four = cluster.Topology("--hosts 4 --racks 2"), cluster.Topology("--hosts 4 --racks 4")
        self.assertAlmostEqual(two.uplink_bound_us(1 << 20, 0.5), (1 << 20) * 8 / 0.5e9 * 1e6)
        self.assertAlmostEqual(four.uplink_bound_us(1 << 20, 0.5), 1.5 * (1 << 20) * 8 / 0.5e9 * 1e6)  # 2(R-1)/R

    def test_bound_column_is_bound_over_measured(self):
        args = args_for("--netcluster", "--hosts 4 --racks 2 --uplink-gbit 0.5", "--uplink-gbit", "0.5",
                        "--algos", "auto,ring", "-b", "1M", "-e", "1M")
        runs = {"braid/auto": perf_run("braid/auto", {1 << 20: (33554.4, 0.05)}, algo="auto"),
                "braid/ring": perf_run("braid/ring", {1 << 20: (16777.2, 0.09)}, algo="ring"),
                "mpi": perf_run("mpi", {}), "gloo": perf_run("gloo", {})}
        header, table = compare.combine(args, "allreduce", runs, args.sizes)
        row = dict(zip(header, table[0]))
        self.assertEqual(row["uplink bound us"], "16777.2")  # 1 MiB x 8 / 0.5 Gbit/s
        self.assertEqual(row["Braid/auto bound/measured"], "50%")
        self.assertEqual(row["Braid/ring bound/measured"], "100%")
        self.assertNotIn("memcpy GB/s", header)  # memcpy does not run on the emulated cluster
        header, _ = compare.combine(args, "allgather", runs, args.sizes)
        self.assertNotIn("uplink bound us", header)  # AllReduce's bound only

    def test_uplink_must_be_the_clusters(self):
        self.assertTrue(refused("--netcluster", "--hosts 4 --racks 2", "--uplink-gbit", "1"))  # 2/3 Gbit/s
        self.assertTrue(refused("--uplink-gbit", "1"))  # no cluster
        self.assertFalse(refused("--netcluster", "--hosts 4 --racks 2", "--uplink-gbit", "0.667"))


# all_reduce_perf -Z int8 (braidrun -np 2, -b 1K -e 64K -f 8 -n 2 -w 1), as it printed.
Z_SAMPLE = """\
[0] # Compression int8 (BRAID_COMPRESS=int8)
[0] #                                                                             out-of-place                              in-place
[0] #       size         count      type   redop    root      time    algbw    busbw  #wrong      time    algbw    busbw  #wrong
[0] #        (B)    (elements)                                (us)   (GB/s)   (GB/s)              (us)   (GB/s)   (GB/s)
[0]         1024           256     float     sum      -1      3.57     0.29     0.29     N/A      3.48     0.29     0.29     N/A
[0]         8192          2048     float     sum      -1      7.18     1.14     1.14     N/A      5.33     1.54     1.54     N/A
[0]        65536         16384     float     sum      -1     29.49     2.22     2.22     N/A     30.39     2.16     2.16     N/A
[0] # Accuracy, compression int8: one out-of-place call on a fresh buffer (no residual
[0] # from earlier calls) against an exact fp64 AllReduce of the same inputs;
[0] # effbusbw = logical bytes of the buffer over the measured time, as busbw
[0] #       size         count      type   redop   effbusbw      rel L2     max abs      cosine        bias
[0] #        (B)    (elements)                       (GB/s)
[0] #       1024           256     float     sum      0.287   8.433e-03   2.596e-02    0.999964    2.22e-04
[0] #       8192          2048     float     sum      1.142   8.335e-03   3.694e-02    0.999965    3.37e-04
[0] #      65536         16384     float     sum      2.222   8.308e-03   4.406e-02    0.999965    1.03e-04
[0] # Algorithm int8 used: c2shot 1 KiB..64 KiB
[0] # Out of bounds values : 0 OK
"""


class Compression(unittest.TestCase):
    def test_accuracy_table_of_all_reduce_perf_z(self):
        sizes = [1024, 8192, 65536]
        rows = compare.parse_perf_table(Z_SAMPLE, "out", sizes)
        compare.parse_accuracy_table(Z_SAMPLE, sizes, rows)
        self.assertEqual([rows[s]["time_us"] for s in sizes], [3.57, 7.18, 29.49])
        self.assertEqual([rows[s]["rel_l2"] for s in sizes], [8.433e-03, 8.335e-03, 8.308e-03])
        self.assertEqual(rows[65536]["effbusbw"], 2.222)
        self.assertEqual(rows[1024]["wrong_all"], 0)  # N/A: not checked

    def test_not_available_error_and_a_missing_size(self):
        text = Z_SAMPLE.replace("0.287   8.433e-03   2.596e-02    0.999964    2.22e-04",
                                "0.287         N/A         N/A         N/A         N/A")
        rows = compare.parse_perf_table(text, "out", [1024, 8192, 65536, 1 << 20])
        compare.parse_accuracy_table(text, [1024, 8192, 65536, 1 << 20], rows)
        self.assertIsNone(rows[1024]["rel_l2"])
        self.assertNotIn(1 << 20, rows)

    def test_columns_per_mode_against_none(self):
        args = args_for("--np", "2", "--compress", "auto,none,int8", "-b", "1K", "-e", "1K")
        runs = {f"braid/{m}": perf_run(f"braid/{m}", {1024: (t, 0.1)}, compress=m)
                for m, t in (("auto", 5.0), ("none", 10.0), ("int8", 4.0))}
        runs["braid/none"].rows[1024]["rounds_us"] = [10.0, 10.0, 10.0]
        runs["braid/int8"].rows[1024]["rounds_us"] = [4.0, 2.0, 20.0]  # 2.5x, 5x, 0.5x: median 2.5x
        runs["braid/auto"].rows[1024]["rounds_us"] = [5.0, 5.0, 5.0]
        for m, l2 in (("auto", 1e-2), ("none", 3e-8), ("int8", None)):
            runs[f"braid/{m}"].rows[1024]["rel_l2"] = l2
        runs.update({k: perf_run(k, {}) for k in ("mpi", "gloo", "memcpy", "memcpy-all")})
        self.assertEqual(compare.headline(runs), "braid/none")  # not auto, a compression mode here
        header, table = compare.combine(args, "allreduce", runs, args.sizes)
        row = dict(zip(header, table[0]))
        self.assertEqual(row["Braid/none rel L2"], "3.00e-08")
        self.assertEqual(row["Braid/int8 rel L2"], "N/A")
        self.assertEqual(row["Braid/int8 vs Braid/none"], "2.50x")
        self.assertEqual(row["Braid/auto vs Braid/none"], "2.00x")
        self.assertNotIn("Braid/none vs Braid/none", header)

    def test_modes_checked(self):
        for bad in (["--compress", "int4"], ["--compress", "topk:2"], ["--compress", "int8", "--coll", "allgather"],
                    ["--compress", "int8", "--algos", "ring,rhd"]):
            self.assertTrue(refused(*bad), bad)
        self.assertEqual(args_for("--compress", "none,topk:0.01,topk,int8").compress,
                         ["none", "topk:0.01", "topk", "int8"])


class RankCounts(unittest.TestCase):
    def test_a_build_is_needed(self):
        self.assertTrue(refused("--build", str(Path(EMPTY_BUILD.name) / "nothing")))

    def test_list(self):
        self.assertEqual(compare.rank_list("2,4"), [2, 4])
        self.assertEqual(compare.rank_list("4,2,4"), [4, 2])
        with self.assertRaises(ValueError):
            compare.rank_list("0,2")
        self.assertEqual(args_for().nps, [4])
        self.assertEqual(args_for("--netcluster", "--hosts 3 --ranks-per-host 2 --racks 1").nps, [6])
        self.assertTrue(refused("--np", "2,4", "--netcluster", "--hosts 4"))  # the cluster has 4 ranks
        self.assertFalse(refused("--np", "4", "--netcluster", "--hosts 4"))

    def test_a_section_per_rank_count(self):
        args = args_for("--np", "2,4", "-b", "1K", "-e", "1K")
        sections = []
        for args.np, t in ((2, 7.0), (4, 9.0)):
            runs = {"braid": perf_run("braid", {1024: (t, 0.2)}), "mpi": perf_run("mpi", {1024: (2 * t, 0.1)}),
                    "gloo": perf_run("gloo", {}), "memcpy": compare.Run("memcpy"),
                    "memcpy-all": compare.Run("memcpy-all")}
            header, table = compare.combine(args, "allreduce", runs, args.sizes)
            c = compare.COLLS["allreduce"]
            sections.append((args.np, c, report.section(args, c, runs, header, table)))
        text = report.markdown(args, sections, ["- command: `x`"], plot="p.png")
        self.assertTrue(text.startswith("# AllReduce: Braid vs OpenMPI vs Gloo (2 and 4 ranks on one host)\n"))
        two, four = text.index("\n## 2 ranks\n"), text.index("\n## 4 ranks\n")
        self.assertLess(text.index("![busbw against message size](p.png)"), two)
        self.assertLess(two, four)
        self.assertIn("- ranks: 2 on one host", text[two:four])
        self.assertIn("| 1 KiB | 0.20 | 7.00 | 0.10 | 14.0 |", text[two:four])
        self.assertIn("- ranks: 4 on one host", text[four:])
        self.assertIn("| 1 KiB | 0.20 | 9.00 | 0.10 | 18.0 |", text[four:])

    def test_openmpi_yields_where_ranks_outnumber_cores(self):
        args = args_for("--np", "2,4")
        args.cores = 2
        commands = []
        for args.np in (2, 4):
            run = compare.run_mpi(args, "allreduce")  # not built in a bare tree: fails before it runs
            commands.append(run.shown())
        self.assertNotIn("mpi_yield_when_idle", commands[0])
        self.assertIn("--mca mpi_yield_when_idle 1 -np 4", commands[1])
        self.assertIn("`--mca mpi_yield_when_idle 1` at 4 ranks", "\n".join(report.how_run(args, "torch 2")))


class PlotData(unittest.TestCase):
    def test_the_plot_holds_what_the_table_holds(self):
        args = args_for("--np", "4", "--algos", "auto,ring", "-b", "8", "-e", "1M", "-f", "4")
        sizes = args.sizes
        runs = {}
        for key, scale in (("braid/auto", 1.0), ("braid/ring", 1.7), ("mpi", 2.3), ("gloo", 9.1)):
            rows = {}
            for s in sizes:
                t = round(scale * (2 + s / 1e3), 2)
                rows[s] = (t, round(s * 1.5 / (t * 1e3), 2))  # busbw = size x 2(n-1)/n / time
            runs[key] = perf_run(key, rows, algo=key.partition("/")[2] or None)
        runs["memcpy"] = compare.Run("memcpy")
        runs["memcpy"].status, runs["memcpy"].rows = "ok", {s: {"rate": 10.0 + s / 1e5} for s in sizes}
        runs["memcpy-all"] = compare.Run("memcpy-all")
        header, table = compare.combine(args, "allreduce", runs, sizes)
        c = compare.COLLS["allreduce"]
        panel = report.plot_panel(args, c, runs, sizes, "4 ranks")
        with tempfile.TemporaryDirectory() as d:
            doc = report.plot_document(args, [(4, c, [])], [panel])
            data = json.loads(report.write_plot_data(doc, Path(d) / "x.png").read_text())
        self.assertIn("4 ranks on one host", data["title"])
        series = {s["label"]: s for s in data["panels"][0]["series"]}
        self.assertEqual(list(series), ["Braid/auto", "Braid/ring", "OpenMPI", "Gloo",
                                        "memcpy (one thread's copy rate)"])
        for name, s in series.items():
            base = name.split(" (")[0]
            col = f"{base} busbw" if base != "memcpy" else "memcpy GB/s"
            self.assertEqual([p["size"] for p in s["points"]], sizes)
            cells = [dict(zip(header, row))[col] for row in table]
            self.assertEqual([f"{p['busbw']:.2f}" for p in s["points"]], cells, name)
            if base != "memcpy":
                self.assertEqual([compare.time_cell(runs[s["key"]], p["size"]) for p in s["points"]],
                                 [dict(zip(header, row))[f"{base} us"] for row in table])
        self.assertEqual(series["memcpy (one thread's copy rate)"]["style"], "dashed")

    def test_size_labels(self):
        ticks = plot_busbw.size_ticks(compare.size_steps(8, 256 << 20, 2))
        labels = [plot_busbw.size_label(t) for t in ticks]
        self.assertEqual(labels[0], "8 B")
        self.assertEqual(labels[-1], "256 MiB")
        self.assertTrue({"1 KiB", "1 MiB"} <= set(labels), labels)
        self.assertLessEqual(len(labels), 12)


class BuildSource(unittest.TestCase):
    def test_build_source_from_the_cache(self):
        with tempfile.TemporaryDirectory() as d:
            build = Path(d) / "out"
            build.mkdir()
            (build / "CMakeCache.txt").write_text("X:STRING=1\nCMAKE_HOME_DIRECTORY:INTERNAL=/src/tree\n")
            self.assertEqual(report.build_source(build), Path("/src/tree"))
            (Path(d) / "build" / "release").mkdir(parents=True)
            self.assertEqual(report.build_source(Path(d) / "build" / "release"), Path(d).resolve())



class AB(unittest.TestCase):
    def test_median_of_the_rounds_ratios(self):
        # before 10, 30, 20 and after 9, 12, 40 us: the medians' ratio says 12 / 20 = 0.6, while
        # round by round after took 0.9, 0.4 and 2.0 of before's time.
        before = compare.merge([perf_run("braid", {8: (t, 1.0)}) for t in (10.0, 30.0, 20.0)])
        after = compare.merge([perf_run("braid", {8: (t, 1.0)}) for t in (9.0, 12.0, 40.0)])
        self.assertEqual(ab.time_ratio(after.rows[8], before.rows[8]), "0.900")
        variants = [("before", "/b", []), ("after", "/a", ["-R", "1"])]
        header, rows = ab.table(variants, {"before": before, "after": after}, [8])
        self.assertEqual(dict(zip(header, rows[0])),
                         {"size": "8 B", "before us": "20.0", "before busbw": "1.00", "after us": "12.0",
                          "after busbw": "1.00", "after/before time": "0.900"})
        _, rounds = ab.every_round(variants, {"before": before, "after": after}, [8])
        self.assertEqual(rounds[0], ["8 B", "10.00 / 30.00 / 20.00", "9.00 / 12.00 / 40.00"])

    def test_one_round_and_rounds_that_do_not_pair(self):
        self.assertEqual(ab.time_ratio({"time_us": 3.0}, {"time_us": 4.0}), "0.750")
        self.assertEqual(ab.time_ratio({"time_us": 3.0, "rounds_us": [3.0, 1.0]}, {"time_us": 4.0}), "-")
        self.assertEqual(ab.time_ratio(None, {"time_us": 4.0}), "-")

    def test_variants(self):
        self.assertEqual(ab.parse_variant("zerocopy=/b/release:-R 1"), ("zerocopy", "/b/release", ["-R", "1"]))
        self.assertEqual(ab.parse_variant("before=/b/release")[2], [])
        with self.assertRaises(ValueError):
            ab.parse_variant("/b/release")


if __name__ == "__main__":
    unittest.main()
