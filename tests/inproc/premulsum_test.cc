// ncclRedOpCreatePreMulSum on host memory: AllReduce, Reduce and ReduceScatter compute the sum of
// scalar * input, in and out of place, for integer and floating types. On host memory a "device"
// scalar is a host pointer read when the collective runs, while a HostImmediate scalar is copied
// at creation: every case changes the scalar between creation and the call, and the result
// must show the new value for Device residence and the old one for HostImmediate.
// Scalars are powers of two for floats (scaling is then exact) and odd integers for integers.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/coll_sweep.h"
#include "common/ranks.h"

namespace braid {
namespace {

std::string last(ncclComm_t comm) { return ncclGetLastError(comm); }

// The scalar, stored as `type`, at `dst` (8 bytes is enough for any type).
void storeScalar(ncclDataType_t type, double v, void* dst) {
  if (testing::isFloatType(type)) {
    testing::storeFloat(type, dst, 0, v);
  } else {
    int64_t i = static_cast<int64_t>(v);
    std::memcpy(dst, &i, kernels::typeSize(type));
  }
}

struct PreMulCase {
  const char* coll;
  ncclDataType_t type;
  ncclScalarResidence_t residence;
  size_t count;
  bool inPlace;
};

std::vector<PreMulCase> preMulCases() {
  const ncclDataType_t types[] = {ncclInt8,       ncclUint8,     ncclInt32,   ncclUint64,
                                  ncclFloat16,    ncclFloat32,   ncclFloat64, ncclBfloat16,
                                  ncclFloat8e4m3, ncclFloat8e5m2};
  std::vector<PreMulCase> cases;
  for (const char* coll : {"AllReduce", "Reduce", "ReduceScatter"})
    for (ncclDataType_t type : types)
      for (auto residence : {ncclScalarHostImmediate, ncclScalarDevice})
        for (size_t count : {size_t{1}, size_t{37}, size_t{4099}})
          for (bool inPlace : {false, true})
            cases.push_back({coll, type, residence, count, inPlace});
  return cases;
}

std::string runCase(ncclComm_t comm, int rank, int nranks, const PreMulCase& c) {
  const bool isFloat = testing::isFloatType(c.type);
  const double atCreation = isFloat ? 2.0 : 3.0, atCall = isFloat ? 4.0 : 5.0;
  alignas(8) unsigned char scalar[8] = {};
  storeScalar(c.type, atCreation, scalar);
  ncclRedOp_t op;
  if (ncclRedOpCreatePreMulSum(&op, scalar, c.type, c.residence, comm) != ncclSuccess)
    return "ncclRedOpCreatePreMulSum: " + last(comm);
  storeScalar(c.type, atCall, scalar);
  const testing::SweepCase sc{
      &testing::collective(c.coll), c.type, ncclSum, nranks - 1, c.count, c.inPlace};
  const double expected = c.residence == ncclScalarDevice ? atCall : atCreation;
  testing::CaseRun run(sc, rank, nranks, testing::PreMul{op, expected});
  std::string what = testing::describe(sc) +
                     (c.residence == ncclScalarDevice ? " premulsum(device)" : " premulsum(host)");
  if (run.call(comm) != ncclSuccess) return what + ": " + last(comm);
  std::string err = run.check();
  if (ncclRedOpDestroy(op, comm) != ncclSuccess) return what + ": ncclRedOpDestroy: " + last(comm);
  return err.empty() ? "" : what + ": rank " + std::to_string(rank) + ": " + err;
}

TEST(PreMulSum, ScalesEveryInputBeforeTheSum) {
  const auto cases = preMulCases();
  for (int nranks : {1, 3, 4}) {
    auto errors = testing::runThreads(nranks, [&](int rank, ncclComm_t comm) -> std::string {
      for (const auto& c : cases)
        if (std::string e = runCase(comm, rank, nranks, c); !e.empty()) return e;
      return "";
    });
    for (int r = 0; r < nranks; ++r) EXPECT_EQ(errors[r], "") << nranks << " ranks, rank " << r;
  }
}

// Argument errors need no peer, so one thread drives both communicators of a clique.
class PreMulSumErrors : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(ncclCommInitAll(comms_, 2, nullptr), ncclSuccess); }
  void TearDown() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }
  ncclResult_t allReduce(ncclRedOp_t op, ncclDataType_t type = ncclFloat32) {
    return ncclAllReduce(buf_, buf_, 4, type, op, comms_[0], nullptr);
  }
  ncclComm_t comms_[2] = {};
  alignas(8) unsigned char buf_[64] = {};
  float scalar_ = 2.0f;
};

TEST_F(PreMulSumErrors, ADestroyedOpIsRejected) {
  ncclRedOp_t op;
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&op, &scalar_, ncclFloat32, ncclScalarHostImmediate, comms_[0]),
      ncclSuccess);
  EXPECT_GE(static_cast<int>(op), static_cast<int>(ncclNumOps));
  ASSERT_EQ(ncclRedOpDestroy(op, comms_[0]), ncclSuccess);
  EXPECT_EQ(allReduce(op), ncclInvalidArgument);
  EXPECT_NE(last(comms_[0]).find("destroyed"), std::string::npos) << last(comms_[0]);
  EXPECT_EQ(ncclReduce(buf_, buf_, 4, ncclFloat32, op, 0, comms_[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclReduceScatter(buf_, buf_, 2, ncclFloat32, op, comms_[0], nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpDestroy(op, comms_[0]), ncclInvalidArgument) << "destroyed twice";
  EXPECT_EQ(ncclRedOpDestroy(ncclSum, comms_[0]), ncclInvalidArgument) << "a built-in op";
}

TEST_F(PreMulSumErrors, AnOpOfAnotherCommunicatorIsRejected) {
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar_, ncclFloat32, ncclScalarDevice, comms_[1]),
            ncclSuccess);
  EXPECT_EQ(allReduce(op), ncclInvalidArgument);
  EXPECT_NE(last(comms_[0]).find("communicator"), std::string::npos) << last(comms_[0]);
  EXPECT_EQ(ncclRedOpDestroy(op, comms_[0]), ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpDestroy(op, comms_[1]), ncclSuccess);
}

TEST_F(PreMulSumErrors, AnOpUsedWithAnotherTypeIsRejected) {
  ncclRedOp_t op;
  ASSERT_EQ(
      ncclRedOpCreatePreMulSum(&op, &scalar_, ncclFloat32, ncclScalarHostImmediate, comms_[0]),
      ncclSuccess);
  EXPECT_EQ(allReduce(op, ncclFloat64), ncclInvalidArgument);
  EXPECT_NE(last(comms_[0]).find("created for float"), std::string::npos) << last(comms_[0]);
  EXPECT_EQ(ncclReduceScatter(buf_, buf_, 0, ncclInt32, op, comms_[0], nullptr),
            ncclInvalidArgument)
      << "checked even when count is 0";
  EXPECT_EQ(ncclRedOpDestroy(op, comms_[0]), ncclSuccess);
}

TEST_F(PreMulSumErrors, CreationArguments) {
  ncclRedOp_t op;
  EXPECT_EQ(ncclRedOpCreatePreMulSum(nullptr, &scalar_, ncclFloat32, ncclScalarDevice, comms_[0]),
            ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, nullptr, ncclFloat32, ncclScalarDevice, comms_[0]),
            ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar_, ncclNumTypes, ncclScalarDevice, comms_[0]),
            ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar_, ncclFloat32,
                                     static_cast<ncclScalarResidence_t>(7), comms_[0]),
            ncclInvalidArgument);
  EXPECT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar_, ncclFloat32, ncclScalarDevice, nullptr),
            ncclInvalidArgument);
}

}  // namespace
}  // namespace braid
