// BRAID_STATS_FILE (api/stats.h): two processes run 1 MiB AllReduces for about half a second with
// a line every 40 ms; each file then holds interval lines whose counters never go back and a last
// "destroy" line with every call, in which each rank's bytes sent to the other are the bytes the
// other received from it. tools/braid-stats turns the files into its table.
#include <glob.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "common/ranks.h"

namespace {

// The value of a numeric field of a stats line ("calls", "bytesSent"...); -1 if it is missing.
long long field(const std::string& line, const std::string& name) {
  const std::regex re("\"" + name + "\":(-?[0-9]+)");
  std::smatch m;
  return std::regex_search(line, m, re) ? std::stoll(m[1]) : -1;
}

// The first peer entry ([peer, bytesSent, bytesReceived, ...]) of a 2-rank line.
std::vector<long long> peerEntry(const std::string& line) {
  const std::regex re(R"("peers":\[\[(\d+),(\d+),(\d+),(\d+),(\d+),(\d+),)");
  std::smatch m;
  if (!std::regex_search(line, m, re)) return {};
  std::vector<long long> out;
  for (size_t i = 1; i < m.size(); ++i) out.push_back(std::stoll(m[i]));
  return out;
}

constexpr int kCalls = 12;

TEST(StatsFile, LinesEveryIntervalAndAtDestroyAgreeWithTheCounters) {
  const std::string prefix = "/tmp/braid-stats-file-test." + std::to_string(getpid());
  auto results = braid::testing::runProcesses(
      2,
      [](int, ncclComm_t comm) {
        std::vector<float> v(262144, 1.0f);
        for (int i = 0; i < kCalls; ++i) {
          if (ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comm, nullptr) !=
              ncclSuccess)
            return 1;
          std::this_thread::sleep_for(std::chrono::milliseconds(40));
        }
        return 0;
      },
      {{"BRAID_STATS_FILE", prefix + ".%p.jsonl"}, {"BRAID_STATS_INTERVAL_MS", "40"}});
  for (int r = 0; r < 2; ++r) ASSERT_EQ(results[r].exitCode, 0) << "rank " << r;

  glob_t found{};
  ASSERT_EQ(glob((prefix + ".*.jsonl").c_str(), 0, nullptr, &found), 0);
  std::vector<std::string> files(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  globfree(&found);
  ASSERT_EQ(files.size(), 2u);
  std::vector<std::string> last(2);
  for (const std::string& path : files) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    ASSERT_GE(lines.size(), 5u) << path;  // ~500 ms at 40 ms a line, and the last
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      EXPECT_NE(lines[i].find("\"event\":\"interval\""), std::string::npos) << lines[i];
      for (const char* f : {"calls", "bytesSent", "bytesReceived", "messagesSent"})
        EXPECT_LE(field(lines[i], f), field(lines[i + 1], f)) << f << " went back in " << path;
    }
    const std::string& end = lines.back();
    EXPECT_NE(end.find("\"event\":\"destroy\""), std::string::npos) << end;
    EXPECT_EQ(field(end, "calls"), kCalls) << end;
    EXPECT_EQ(field(end, "failedCalls"), 0) << end;
    EXPECT_EQ(field(end, "timedCalls"), kCalls) << end;  // 1 MiB calls are timed
    const long long rank = field(end, "rank");
    ASSERT_TRUE(rank == 0 || rank == 1) << end;
    last[static_cast<size_t>(rank)] = end;
  }
  // Each end of the one connection counts what crossed it alike.
  const std::vector<long long> p0 = peerEntry(last[0]), p1 = peerEntry(last[1]);
  ASSERT_EQ(p0.size(), 6u) << last[0];
  ASSERT_EQ(p1.size(), 6u) << last[1];
  EXPECT_EQ(p0[0], 1);
  EXPECT_EQ(p1[0], 0);
  EXPECT_GE(p0[1], kCalls * (1 << 20) / 2) << "rank 0 sent at least half the data each call";
  EXPECT_EQ(p0[1], p1[2]) << "rank 0's bytes sent to rank 1 are rank 1's received from it";
  EXPECT_EQ(p1[1], p0[2]);
  EXPECT_EQ(p0[3], p1[4]) << "messages";
  EXPECT_EQ(field(last[0], "bytesSent"), p0[1]) << "the communicator's total is its peer's";

  // tools/braid-stats: a row per rank, exit status 0.
  const std::string command = "python3 " + std::string(BRAID_SOURCE_DIR) + "/tools/braid-stats " +
                              files[0] + " " + files[1] + " 2>&1";
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("communicator "), std::string::npos) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\\n0 +\\S+ +12 +0 "))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\\n1 +\\S+ +12 +0 "))) << out;
  // and a row per link: the one connection, seen from both ends, busy for some time.
  EXPECT_TRUE(std::regex_search(out, std::regex("\\n0->1 +0 .* [0-9.]+ +[0-9]+%"))) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex("\\n1->0 +0 "))) << out;
  for (const std::string& f : files) std::remove(f.c_str());
}

}  // namespace
