// The schedule type's own pieces: concatSchedules (algos/schedule.h).
#include <gtest/gtest.h>

#include "algos/schedule.h"

namespace braid {
namespace {

using algos::Buffer;
using algos::Schedule;
using algos::ScheduleBuilder;

// The dependencies of step i, as a list.
std::vector<uint32_t> depsOf(const Schedule& s, uint32_t i) {
  return {s.deps.begin() + s.steps[i].depBegin, s.deps.begin() + s.steps[i].depBegin + s.steps[i].depCount};
}

std::vector<uint32_t> dependentsOf(const Schedule& s, uint32_t i) {
  return {s.dependents.begin() + s.dependentsBegin[i], s.dependents.begin() + s.dependentsBegin[i + 1]};
}

TEST(ConcatSchedules, PartsKeepTheirOwnDependenciesInOrder) {
  ScheduleBuilder a("p2p");
  a.copy({Buffer::Send, 0, 4}, {Buffer::Scratch, 0, 4});
  a.send(2, {Buffer::Scratch, 0, 4});  // waits for the copy
  a.needScratch(4);
  ScheduleBuilder b("p2p");
  b.recv(1, {Buffer::Recv, 0, 4});
  b.send(1, {Buffer::Recv, 0, 4});  // waits for the receive
  b.needScratch(2);
  b.needPacked(10);
  std::vector<Schedule> parts;
  parts.push_back(std::move(a).finish());
  parts.push_back(std::move(b).finish());
  const Schedule joined = algos::concatSchedules(parts);

  ASSERT_EQ(joined.steps.size(), 4u);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(joined.steps[i].kind, parts[0].steps[i].kind);
    EXPECT_EQ(joined.steps[i + 2].kind, parts[1].steps[i].kind);
  }
  EXPECT_EQ(depsOf(joined, 0), std::vector<uint32_t>{});
  EXPECT_EQ(depsOf(joined, 1), std::vector<uint32_t>{0});
  EXPECT_EQ(depsOf(joined, 2), std::vector<uint32_t>{});  // no edge across parts
  EXPECT_EQ(depsOf(joined, 3), std::vector<uint32_t>{2});
  EXPECT_EQ(dependentsOf(joined, 0), std::vector<uint32_t>{1});
  EXPECT_EQ(dependentsOf(joined, 2), std::vector<uint32_t>{3});
  EXPECT_EQ(dependentsOf(joined, 3), std::vector<uint32_t>{});
  EXPECT_EQ(joined.scratchCount, 4u);
  EXPECT_EQ(joined.packedBytes, 10u);
  EXPECT_EQ(joined.peers, (std::vector<int>{1, 2}));  // sorted, once each
  EXPECT_EQ(joined.algorithm, "p2p+p2p");

  EXPECT_TRUE(algos::concatSchedules({}).steps.empty());
  const Schedule one = algos::concatSchedules({parts[1]});
  EXPECT_EQ(one.deps, parts[1].deps);
  EXPECT_EQ(one.dependents, parts[1].dependents);
  EXPECT_EQ(one.dependentsBegin, parts[1].dependentsBegin);
}

}  // namespace
}  // namespace braid
