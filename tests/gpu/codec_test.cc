// The CUDA codecs on a device: INT8 block and top-k messages, residuals and decoded values are
// the host codecs' bytes, for fp32, fp16 and bf16, with and without error feedback; a bad
// message sets the check word and writes nothing. Skips without a device, except the argument
// checks, which return before anything reaches CUDA.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "compress/cuda/codec_cuda.h"
#include "compress/int8_block.h"
#include "compress/topk.h"
#include "gpu_test_util.h"
#include "kernels/functors.h"
#include "kernels/reduce.h"

namespace braid::compress::cuda {
namespace {

using braid::testing::DeviceBuffer;

std::unique_ptr<Codec> int8Codec(uint32_t block, Rounding rounding, ScaleFormat scales) {
  std::unique_ptr<Int8BlockCodec> c;
  EXPECT_TRUE(Int8BlockCodec::create({block, rounding, scales}, &c).ok());
  return c;
}

std::unique_ptr<Codec> topkCodec(double ratio) {
  std::unique_ptr<TopKCodec> c;
  EXPECT_TRUE(TopKCodec::create({ratio}, &c).ok());
  return c;
}

size_t unitOf(ncclDataType_t type) { return type == ncclFloat32 ? 4 : 2; }

// count values of `type` (as bytes): normal values of mixed magnitudes, some Inf, and NaN where
// `nan` (top-k with error feedback leaves NaN out: a device's addition returns the canonical NaN,
// the host's keeps the payload, and the value sent is that sum).
std::vector<unsigned char> inputBytes(size_t count, ncclDataType_t type, uint64_t seed, bool nan) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<unsigned char> out(count * unitOf(type));
  for (size_t i = 0; i < count; ++i) {
    float x = normal(rng) * ((i / 256) % 3 == 0 ? 1e-3f : (i / 256) % 3 == 1 ? 1.0f : 1e3f);
    if (i % 1009 == 17) x = std::numeric_limits<float>::infinity();
    if (nan && i % 1013 == 5) x = std::numeric_limits<float>::quiet_NaN();
    if (type == ncclFloat32) {
      std::memcpy(out.data() + 4 * i, &x, 4);
    } else {
      const uint16_t bits =
          type == ncclFloat16 ? kernels::floatToHalf(x).bits : kernels::floatToBf16(x).bits;
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

std::vector<float> residualValues(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> r(count);
  for (float& x : r) x = normal(rng);
  return r;
}

template <typename V>
void toDevice(DeviceBuffer& d, const V& host) {
  ASSERT_EQ(cudaMemcpy(d.at(0), host.data(), host.size() * sizeof(host[0]), cudaMemcpyHostToDevice),
            cudaSuccess);
}

template <typename V>
void fromDevice(V& host, DeviceBuffer& d) {
  ASSERT_EQ(cudaMemcpy(host.data(), d.at(0), host.size() * sizeof(host[0]), cudaMemcpyDeviceToHost),
            cudaSuccess);
}

// Encodes on the host and the device and compares message and residual; then decodes the host's
// message both ways and compares.
void checkCodec(const Codec& codec, size_t count, ncclDataType_t type, bool residual, bool nan,
                uint64_t seed) {
  SCOPED_TRACE(codec.name() + " " + kernels::typeName(type) + " count " + std::to_string(count) +
               (residual ? " with residual" : ""));
  const auto input = inputBytes(count, type, seed, nan);
  auto hostResidual = residualValues(count, seed + 1);
  std::vector<float> deviceResidual = hostResidual;
  std::vector<std::byte> msg(codec.maxEncodedBytes(count, type));
  size_t written = 0;
  ASSERT_TRUE(codec
                  .encode(input.data(), count, type, residual ? hostResidual.data() : nullptr, seed,
                          msg, &written)
                  .ok());

  DeviceBuffer dIn(input.size()), dRes(count * 4), dOut(msg.size()), dAcc(count * 4),
      dDecoded(input.size()), dCheck(4);
  ASSERT_TRUE(dIn.ok && dRes.ok && dOut.ok && dAcc.ok && dDecoded.ok && dCheck.ok);
  toDevice(dIn, input);
  toDevice(dRes, deviceResidual);
  size_t deviceWritten = 0;
  Status st = encode(codec, dIn.at(0), count, type,
                     residual ? reinterpret_cast<float*>(dRes.at(0)) : nullptr, seed, dOut.at(0),
                     msg.size(), &deviceWritten, nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(deviceWritten, written);
  std::vector<std::byte> got(msg.size());
  fromDevice(got, dOut);
  ASSERT_EQ(0, std::memcmp(got.data(), msg.data(), msg.size())) << "message bytes differ";
  if (residual) {
    fromDevice(deviceResidual, dRes);
    ASSERT_EQ(0, std::memcmp(deviceResidual.data(), hostResidual.data(), count * 4))
        << "residuals differ";
  }

  // Decoding: accumulate onto the same values, and decode into the input's type.
  std::vector<float> hostAcc = residualValues(count, seed + 2), deviceAcc = hostAcc;
  ASSERT_TRUE(codec.decodeAccumulate(msg, count, hostAcc.data()).ok());
  toDevice(dAcc, deviceAcc);
  ASSERT_EQ(cudaMemset(dCheck.at(0), 0, 4), cudaSuccess);
  auto* check = reinterpret_cast<uint32_t*>(dCheck.at(0));
  st = decodeAccumulate(codec, dOut.at(0), msg.size(), count, reinterpret_cast<float*>(dAcc.at(0)),
                        check, nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<unsigned char> hostDecoded(input.size()), deviceDecoded(input.size());
  ASSERT_TRUE(codec.decode(msg, count, type, hostDecoded.data()).ok());
  st = decode(codec, dOut.at(0), msg.size(), count, type, dDecoded.at(0), check, nullptr);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  uint32_t word = 1;
  ASSERT_EQ(cudaMemcpy(&word, check, 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(word, kMessageOk) << decodeCheckName(word);
  fromDevice(deviceAcc, dAcc);
  fromDevice(deviceDecoded, dDecoded);
  EXPECT_EQ(0, std::memcmp(deviceAcc.data(), hostAcc.data(), count * 4)) << "accumulated";
  EXPECT_EQ(0, std::memcmp(deviceDecoded.data(), hostDecoded.data(), input.size())) << "decoded";
}

class GpuCodecs : public ::testing::Test {
 protected:
  void SetUp() override { BRAID_REQUIRE_DEVICE(); }
};

constexpr ncclDataType_t kTypes[] = {ncclFloat32, ncclFloat16, ncclBfloat16};

TEST_F(GpuCodecs, Int8MessagesAreTheHostCodecsBytes) {
  const std::unique_ptr<Codec> codecs[] = {int8Codec(64, Rounding::Nearest, ScaleFormat::Fp32),
                                           int8Codec(48, Rounding::Stochastic, ScaleFormat::Bf16),
                                           int8Codec(256, Rounding::Stochastic, ScaleFormat::Fp32)};
  uint64_t seed = 1;
  for (const auto& codec : codecs)
    for (ncclDataType_t type : kTypes)
      for (size_t count : {size_t(0), size_t(1), size_t(1000), size_t(1 << 20) + 3})
        for (bool residual : {false, true}) checkCodec(*codec, count, type, residual, true, ++seed);
}

TEST_F(GpuCodecs, TopkMessagesAreTheHostCodecsBytes) {
  uint64_t seed = 100;
  for (double ratio : {0.01, 0.3, 1.0}) {
    const auto codec = topkCodec(ratio);
    for (ncclDataType_t type : kTypes)
      for (size_t count : {size_t(0), size_t(1), size_t(5000), size_t(1 << 20)})
        for (bool residual : {false, true})
          checkCodec(*codec, count, type, residual, !residual, ++seed);
  }
}

// A message whose header or indices are wrong sets the check word and leaves the output alone.
TEST_F(GpuCodecs, BadMessagesWriteNothing) {
  const size_t count = 4096;
  const auto input = inputBytes(count, ncclFloat32, 3, false);
  const std::unique_ptr<Codec> codecs[] = {int8Codec(64, Rounding::Nearest, ScaleFormat::Fp32),
                                           topkCodec(0.01)};
  for (const auto& codec : codecs) {
    SCOPED_TRACE(codec->name());
    std::vector<std::byte> msg(codec->maxEncodedBytes(count, ncclFloat32));
    size_t written = 0;
    ASSERT_TRUE(codec->encode(input.data(), count, ncclFloat32, nullptr, 1, msg, &written).ok());
    std::vector<std::vector<std::byte>> bad;
    bad.push_back(msg);
    bad.back()[8] = std::byte(0x55);  // another count
    if (codec->name() == "topk") {
      bad.push_back(msg);  // two indices swapped
      std::swap_ranges(bad.back().begin() + 16, bad.back().begin() + 20, bad.back().begin() + 20);
    }
    for (size_t b = 0; b < bad.size(); ++b) {
      DeviceBuffer dMsg(msg.size()), dAcc(count * 4), dCheck(4);
      ASSERT_TRUE(dMsg.ok && dAcc.ok && dCheck.ok);
      toDevice(dMsg, bad[b]);
      const std::vector<float> before = residualValues(count, 9);
      toDevice(dAcc, before);
      auto* check = reinterpret_cast<uint32_t*>(dCheck.at(0));
      for (bool accumulate : {true, false}) {
        ASSERT_EQ(cudaMemset(check, 0, 4), cudaSuccess);
        Status st = accumulate
                        ? decodeAccumulate(*codec, dMsg.at(0), msg.size(), count,
                                           reinterpret_cast<float*>(dAcc.at(0)), check, nullptr)
                        : decode(*codec, dMsg.at(0), msg.size(), count, ncclFloat32, dAcc.at(0),
                                 check, nullptr);
        ASSERT_TRUE(st.ok()) << st.message();
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        uint32_t word = 0;
        ASSERT_EQ(cudaMemcpy(&word, check, 4, cudaMemcpyDeviceToHost), cudaSuccess);
        EXPECT_EQ(word, b == 0 ? kBadHeader : kBadIndex) << decodeCheckName(word);
        std::vector<float> after(count);
        fromDevice(after, dAcc);
        EXPECT_EQ(0, std::memcmp(after.data(), before.data(), count * 4)) << "output written";
      }
    }
  }
}

// Refused by name before any CUDA call (so this runs without a device too).
TEST(GpuCodecArguments, AreCheckedBeforeLaunch) {
  const auto codec = int8Codec(64, Rounding::Nearest, ScaleFormat::Fp32);
  alignas(16) char buffer[4096];
  size_t written = 0;
  auto expectRefused = [](const Status& st, const char* names) {
    EXPECT_EQ(st.code(), ncclInvalidArgument);
    EXPECT_NE(st.message().find(names), std::string::npos) << st.message();
  };
  expectRefused(encode(*codec, buffer, 16, ncclInt32, nullptr, 1, buffer, 4096, &written, nullptr),
                "datatype");
  expectRefused(
      encode(*codec, buffer + 2, 16, ncclFloat32, nullptr, 1, buffer, 4096, &written, nullptr),
      "input");
  expectRefused(
      encode(*codec, buffer, 16, ncclFloat32, nullptr, 1, buffer + 1, 4096, &written, nullptr),
      "message");
  expectRefused(
      encode(*codec, buffer, 1000, ncclFloat32, nullptr, 1, buffer, 64, &written, nullptr),
      "output of 64 bytes");
  expectRefused(encode(*codec, buffer, 16, ncclFloat32, reinterpret_cast<float*>(buffer + 2), 1,
                       buffer, 4096, &written, nullptr),
                "residual");
  expectRefused(decode(*codec, buffer, 4096, 16, ncclFloat16, buffer + 1, nullptr, nullptr),
                "output");
  expectRefused(decodeAccumulate(*codec, buffer, 4096, size_t(1) << 33,
                                 reinterpret_cast<float*>(buffer), nullptr, nullptr),
                "2^32");
}

}  // namespace
}  // namespace braid::compress::cuda
