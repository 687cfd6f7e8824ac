// The ib transport's pure parts: NCCL_IB_HCA's syntax and the port's rate. The transport itself
// runs where an RDMA port is active (tests/rdma boots Soft-RoCE under qemu).
#include <gtest/gtest.h>

#if BRAID_HAVE_IBVERBS
#include "transport/ib/ib_device.h"

namespace braid::transport::ib {
namespace {

HcaFilter parse(const char* spec) {
  HcaFilter f;
  Status st = parseHcaFilter(spec, &f);
  EXPECT_TRUE(st.ok()) << spec << ": " << st.message();
  return f;
}

TEST(HcaFilter, EmptyAllowsEverything) {
  EXPECT_TRUE(parse("").allows("mlx5_0", 1));
  EXPECT_TRUE(parse("").allows("rxe0", 2));
}

TEST(HcaFilter, NamesArePrefixesUnlessExact) {
  const HcaFilter f = parse("mlx5");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_TRUE(f.allows("mlx5_12", 1));
  EXPECT_FALSE(f.allows("rxe0", 1));
  const HcaFilter exact = parse("=mlx5_1");
  EXPECT_TRUE(exact.allows("mlx5_1", 1));
  EXPECT_FALSE(exact.allows("mlx5_10", 1));
  EXPECT_FALSE(exact.allows("mlx5_0", 1));
}

TEST(HcaFilter, PortsAndExclusion) {
  const HcaFilter f = parse("mlx5_0:1,mlx5_1");
  EXPECT_TRUE(f.allows("mlx5_0", 1));
  EXPECT_FALSE(f.allows("mlx5_0", 2));
  EXPECT_TRUE(f.allows("mlx5_1", 2));
  const HcaFilter ex = parse("^mlx5_0:2,rxe");
  EXPECT_TRUE(ex.allows("mlx5_0", 1));
  EXPECT_FALSE(ex.allows("mlx5_0", 2));
  EXPECT_FALSE(ex.allows("rxe0", 1));
  EXPECT_TRUE(ex.allows("mlx4_0", 1));
  const HcaFilter exEx = parse("^=rxe0");
  EXPECT_FALSE(exEx.allows("rxe0", 1));
  EXPECT_TRUE(exEx.allows("rxe01", 1));
}

TEST(HcaFilter, BadPortsAndEmptyNamesAreErrorsNamingTheItem) {
  for (const char* bad : {"mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256", ":1"}) {
    HcaFilter f;
    Status st = parseHcaFilter(bad, &f);
    EXPECT_EQ(st.code(), ncclInvalidArgument) << bad;
    EXPECT_NE(st.message().find("NCCL_IB_HCA"), std::string::npos) << st.message();
  }
}

TEST(PortRate, WidthTimesLaneSpeed) {
  EXPECT_DOUBLE_EQ(portGbps(2, 32), 100);   // 4x EDR
  EXPECT_DOUBLE_EQ(portGbps(2, 64), 200);   // 4x HDR
  EXPECT_DOUBLE_EQ(portGbps(2, 128), 400);  // 4x NDR
  EXPECT_DOUBLE_EQ(portGbps(1, 1), 2.5);    // 1x SDR
  EXPECT_DOUBLE_EQ(portGbps(0, 0), 0);      // unknown
  EXPECT_EQ(mtuBytes(IBV_MTU_1024), 1024);
  EXPECT_EQ(mtuBytes(IBV_MTU_4096), 4096);
}

}  // namespace
}  // namespace braid::transport::ib
#endif
