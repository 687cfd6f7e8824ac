"""bench/compare.py's arithmetic: how rounds merge, and the copy bound of the collectives that
only move data. Run by ctest (bench.compare_py); needs no build."""
import importlib.util
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare", REPO / "bench" / "compare.py")
compare = importlib.util.module_from_spec(spec)
sys.modules["compare"] = compare
spec.loader.exec_module(compare)


def perf_run(key, rows, status="ok"):
    run = compare.Run(key, ["cmd"])
    run.status = status
    run.rows = {size: {"time_us": t, "busbw": b, "wrong": 0} for size, (t, b) in rows.items()}
    return run


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
            np, place, cores = 4, "out", 2
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


if __name__ == "__main__":
    unittest.main()
