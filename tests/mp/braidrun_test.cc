// Runs the built braidrun binary on small shell commands: environment, prefixes, the exit
// code, and that one failing rank takes the others down quickly instead of leaving them hung.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

// Built piecewise: GCC 12 warns (-Wrestrict, falsely) on "[" + std::to_string(i).
std::string tag(int rank) {
  std::string s = "[";
  s += std::to_string(rank);
  s += "] ";
  return s;
}

// BRAIDRUN overrides; otherwise the build tree's tools/braidrun next to tests/.
fs::path braidrunPath() {
  if (const char* p = std::getenv("BRAIDRUN")) return p;
  return fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "tools" / "braidrun";
}

struct Result {
  int rc = -1;
  std::string out, err;
  double seconds = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// args go to the shell as written, so tests can quote their little scripts.
Result run(const std::string& args) {
  fs::path dir = fs::temp_directory_path() / ("braidrun_test." + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string cmd = braidrunPath().string() + " " + args + " >" + (dir / "out").string() + " 2>" +
                    (dir / "err").string();
  auto t0 = std::chrono::steady_clock::now();
  int status = std::system(cmd.c_str());
  Result r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

class Braidrun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(braidrunPath()))
      FAIL() << braidrunPath() << " not found: build the braidrun target or set BRAIDRUN";
  }
};

TEST_F(Braidrun, SetsEnvironmentAndPrefixesLines) {
  Result r =
      run("-np 3 -- sh -c 'echo \"$RANK/$WORLD_SIZE $LOCAL_RANK/$LOCAL_WORLD_SIZE "
          "$NCCL_COMM_ID $MASTER_ADDR\"; echo e$RANK >&2'");
  EXPECT_EQ(r.rc, 0) << r.err;
  for (int i = 0; i < 3; ++i) {
    std::string want = tag(i) + std::to_string(i) + "/3 " + std::to_string(i) + "/3 127.0.0.1:";
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    // stderr stays stderr
    EXPECT_NE(r.err.find(tag(i) + "e" + std::to_string(i) + "\n"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("] e"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find(" 127.0.0.1\n"), std::string::npos) << r.out;
}

TEST_F(Braidrun, AllRanksShareOneCommId) {
  Result r = run("-np 4 --no-prefix sh -c 'echo $NCCL_COMM_ID'");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string first, line;
  int n = 0;
  while (std::getline(lines, line)) {
    if (n++ == 0) first = line;
    EXPECT_EQ(line, first);
  }
  EXPECT_EQ(n, 4);
  EXPECT_EQ(first.rfind("127.0.0.1:", 0), 0u);
}

TEST_F(Braidrun, NoPrefixPassesOutputThrough) {
  Result r = run("--no-prefix -np 2 sh -c 'echo plain'");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "plain\nplain\n");
}

TEST_F(Braidrun, PartialLastLineIsKept) {
  Result r = run("-np 1 sh -c 'printf tail'");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out, "[0] tail\n");
}

TEST_F(Braidrun, OneFailingRankKillsTheOthersQuickly) {
  Result r = run("-np 4 sh -c 'if [ $RANK = 2 ]; then exit 7; fi; sleep 30'");
  EXPECT_EQ(r.rc, 7);
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(r.err.find("rank 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("exited with status 7"), std::string::npos) << r.err;
}

TEST_F(Braidrun, RankThatIgnoresSigtermGetsKilled) {
  Result r =
      run("--grace 0.5 -np 2 sh -c 'trap \"\" TERM; if [ $RANK = 1 ]; then sleep 0.3; kill -SEGV "
          "$$; fi; "
          "while :; do sleep 0.1; done'");
  EXPECT_EQ(r.rc, 128 + 11);
  EXPECT_GT(r.seconds, 0.7);  // rank 0 outlived SIGTERM for the grace period
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(r.err.find("sending SIGKILL"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("signal 11"), std::string::npos) << r.err;
}

TEST_F(Braidrun, TimeoutEndsTheJob) {
  Result r = run("--timeout 0.5 --grace 0.5 -np 2 sleep 30");
  EXPECT_EQ(r.rc, 124);
  EXPECT_LT(r.seconds, 10);
  EXPECT_NE(r.err.find("timeout"), std::string::npos) << r.err;
}

TEST_F(Braidrun, MissingCommandFails) {
  Result r = run("-np 2 /nonexistent/braidrun_test_cmd");
  EXPECT_EQ(r.rc, 127);
}

TEST_F(Braidrun, BadUsageFails) {
  EXPECT_EQ(run("-np 0 true").rc, 2);
  EXPECT_EQ(run("-np 2").rc, 2);
}

}  // namespace
