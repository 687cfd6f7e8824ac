// Braid's TLS 1.3 record layer (base/net/tls_records.h) driven from memory: records sealed from
// pieces of any shape and opened into buffers of any shape, across key updates; a changed byte
// anywhere in a record fails it; alerts, KeyUpdates and other records; OpenSSL's key-log lines.
// The first two run with each AES-GCM (gcm.h) sealing and each opening, so the two are shown to
// make the same records.
// That the records are TLS 1.3's, readable by OpenSSL and reading OpenSSL's, is
// tests/inproc/tls_test.cc's (a Braid session against an OpenSSL one).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/net/tls_records.h"

namespace braid::net::tls13 {
namespace {

const uint8_t kSecret[kSecretBytes] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                       12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                       23, 24, 25, 26, 27, 28, 29, 30, 31};

// Seals `bytes` of `data` as one record of `type`, taking it in `pieces` pieces.
std::vector<uint8_t> seal(RecordWriter& w, const uint8_t* data, size_t bytes, uint8_t type,
                          int pieces = 1) {
  std::vector<uint8_t> out(w.bytesFor(bytes));
  std::string why;
  const size_t used = w.seal(
      bytes, type, out.data(),
      [&](RecordKey& key, uint8_t* body) {
        size_t done = 0;
        for (int p = 0; p < pieces; ++p) {
          const size_t n = p + 1 == pieces ? bytes - done : bytes / pieces;
          if (!key.crypt(data + done, body + done, n)) return false;
          done += n;
        }
        return true;
      },
      &why);
  EXPECT_EQ(used, out.size()) << why;
  return out;
}

void feed(RecordReader& r, const uint8_t* data, size_t bytes) {
  while (bytes > 0) {
    size_t room = 0;
    uint8_t* at = r.space(&room);
    ASSERT_GT(room, 0u);
    const size_t n = std::min(room, bytes);
    std::memcpy(at, data, n);
    r.received(n);
    data += n;
    bytes -= n;
  }
}

// Opens one whole record fed alone into a fresh reader of the same secret.
RecordReader::Result openAlone(const std::vector<uint8_t>& wire, std::string* why,
                               std::vector<uint8_t>* plain, GcmImpl impl = GcmImpl::OpenSsl) {
  RecordReader r;
  EXPECT_TRUE(r.init(kSecret, why, impl)) << *why;
  feed(r, wire.data(), wire.size());
  plain->assign(kMaxPlainBytes, 0);
  iovec iov{plain->data(), plain->size()};
  IovSink sink(&iov, 1);
  const auto res = r.open(sink, SIZE_MAX, why);
  plain->resize(sink.written());
  return res;
}

// Which AES-GCM seals and which opens.
struct Gcms {
  GcmImpl seal, open;
};

class TlsRecordsGcm : public ::testing::TestWithParam<Gcms> {
 protected:
  void SetUp() override {
    std::string why;
    if ((GetParam().seal == GcmImpl::IpsecMb || GetParam().open == GcmImpl::IpsecMb) &&
        !ipsecMbGcmAvailable(&why))
      GTEST_SKIP() << why;
  }
};

INSTANTIATE_TEST_SUITE_P(SealOpen, TlsRecordsGcm,
                         ::testing::Values(Gcms{GcmImpl::OpenSsl, GcmImpl::OpenSsl},
                                           Gcms{GcmImpl::IpsecMb, GcmImpl::IpsecMb},
                                           Gcms{GcmImpl::OpenSsl, GcmImpl::IpsecMb},
                                           Gcms{GcmImpl::IpsecMb, GcmImpl::OpenSsl}),
                         [](const ::testing::TestParamInfo<Gcms>& info) {
                           auto name = [](GcmImpl g) {
                             return g == GcmImpl::IpsecMb ? "IpsecMb" : "OpenSsl";
                           };
                           return std::string(name(info.param.seal)) + "To" + name(info.param.open);
                         });

TEST_P(TlsRecordsGcm, RoundTripInAnyShapeAcrossKeyUpdates) {
  std::mt19937_64 rng(11);
  std::vector<uint8_t> src(3u << 20);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  RecordWriter w(/*recordsPerKey=*/5);
  RecordReader r;
  std::string why;
  ASSERT_TRUE(w.init(kSecret, &why, GetParam().seal)) << why;
  ASSERT_TRUE(r.init(kSecret, &why, GetParam().open)) << why;
  std::vector<uint8_t> wire;
  for (size_t at = 0; at < src.size();) {
    const size_t n = std::min<size_t>(src.size() - at, 1 + rng() % kMaxPlainBytes);
    const auto rec = seal(w, src.data() + at, n, kApplicationData, 1 + static_cast<int>(rng() % 3));
    wire.insert(wire.end(), rec.begin(), rec.end());
    at += n;
  }
  EXPECT_GT(w.keyUpdates(), 10u);
  // The wire in chunks of any size, the plaintext out into 1-3 buffers of any size.
  std::vector<uint8_t> dst(src.size(), 0);
  size_t fed = 0, got = 0;
  for (int round = 0; got < src.size() && round < 1000000; ++round) {
    if (fed < wire.size() && rng() % 2) {
      const size_t n = std::min<size_t>(wire.size() - fed, 1 + rng() % 40000);
      feed(r, wire.data() + fed, n);
      fed += n;
    }
    iovec iov[3];
    size_t count = 1 + rng() % 3, at = got;
    for (size_t k = 0; k < count; ++k) {
      const size_t len =
          std::min<size_t>(src.size() - at, rng() % 3 ? 1 + rng() % 70000 : 1 + rng() % 20);
      iov[k] = {dst.data() + at, len};
      at += len;
    }
    IovSink sink(iov, count);
    const auto res = r.open(sink, SIZE_MAX, &why);
    ASSERT_NE(res, RecordReader::Result::Failed) << why;
    ASSERT_NE(res, RecordReader::Result::Closed);
    if (res == RecordReader::Result::NeedBytes) {
      EXPECT_FALSE(r.ready());
      ASSERT_LT(fed, wire.size()) << "the reader wants bytes after the last record";
    }
    got += sink.written();
  }
  ASSERT_EQ(got, src.size());
  EXPECT_TRUE(src == dst);
  EXPECT_EQ(r.keyUpdates(), w.keyUpdates());
  EXPECT_FALSE(r.ready());
}

TEST(TlsRecords, ABufferSmallerThanARecordLeavesTheRestHeldAndReady) {
  RecordWriter w;
  RecordReader r;
  std::string why;
  ASSERT_TRUE(w.init(kSecret, &why) && r.init(kSecret, &why)) << why;
  std::vector<uint8_t> src(1000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
  const auto rec = seal(w, src.data(), src.size(), kApplicationData);
  feed(r, rec.data(), rec.size() - 1);
  EXPECT_FALSE(r.ready());  // the record is not whole
  feed(r, rec.data() + rec.size() - 1, 1);
  EXPECT_TRUE(r.ready());
  std::vector<uint8_t> dst(src.size());
  iovec first{dst.data(), 300};
  IovSink a(&first, 1);
  ASSERT_EQ(r.open(a, SIZE_MAX, &why), RecordReader::Result::Moved) << why;
  EXPECT_EQ(a.written(), 300u);
  EXPECT_TRUE(r.ready());  // 700 bytes held
  iovec rest{dst.data() + 300, 5000};
  IovSink b(&rest, 1);
  ASSERT_EQ(r.open(b, SIZE_MAX, &why), RecordReader::Result::Moved) << why;
  EXPECT_EQ(b.written(), 700u);
  EXPECT_FALSE(r.ready());
  EXPECT_TRUE(src == dst);
  IovSink c(&rest, 1);
  EXPECT_EQ(r.open(c, SIZE_MAX, &why), RecordReader::Result::NeedBytes);
}

TEST_P(TlsRecordsGcm, AChangedByteAnywhereFailsTheRecordSayingWhy) {
  const GcmImpl opener = GetParam().open;
  RecordWriter w;
  std::string why;
  ASSERT_TRUE(w.init(kSecret, &why, GetParam().seal)) << why;
  std::vector<uint8_t> src(4000, 0x5a);
  const auto rec = seal(w, src.data(), src.size(), kApplicationData);
  std::vector<uint8_t> plain;
  ASSERT_EQ(openAlone(rec, &why, &plain, opener), RecordReader::Result::Moved) << why;
  ASSERT_EQ(plain, src);
  struct Case {
    size_t at;
    const char* says;
  } cases[] = {{0, "header 16 03 03"},
               {2, "header 17 03 02"},
               {4, "failed authentication"},
               {5, "failed authentication"},
               {5 + 2000, "failed authentication"},
               {rec.size() - 17, "failed authentication"},
               {rec.size() - 1, "failed authentication"}};
  for (const Case& c : cases) {
    auto bad = rec;
    bad[c.at] ^= 0x01;
    why.clear();
    // A changed length leaves the record short or long: fed with a tail, it is whole either way.
    bad.resize(bad.size() + 64, 0);
    EXPECT_EQ(openAlone(bad, &why, &plain, opener), RecordReader::Result::Failed)
        << "byte " << c.at;
    EXPECT_NE(why.find(c.says), std::string::npos) << "byte " << c.at << ": " << why;
  }
  // A length no TLS 1.3 record has.
  auto huge = rec;
  huge[3] = 0xff;
  huge[4] = 0xff;
  EXPECT_EQ(openAlone(huge, &why, &plain, opener), RecordReader::Result::Failed);
  EXPECT_NE(why.find("65535 bytes"), std::string::npos) << why;
  // Sealed with another secret.
  uint8_t other[kSecretBytes] = {9};
  RecordWriter stranger;
  ASSERT_TRUE(stranger.init(other, &why, GetParam().seal)) << why;
  EXPECT_EQ(
      openAlone(seal(stranger, src.data(), src.size(), kApplicationData), &why, &plain, opener),
      RecordReader::Result::Failed);
  EXPECT_NE(why.find("not sealed with this connection's key"), std::string::npos) << why;
}

TEST(TlsRecords, CloseNotifyEndsTheStreamAfterTheBytesBeforeIt) {
  RecordWriter w;
  RecordReader r;
  std::string why;
  ASSERT_TRUE(w.init(kSecret, &why) && r.init(kSecret, &why)) << why;
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint8_t closeNotify[2] = {1, 0};
  auto wire = seal(w, data, sizeof(data), kApplicationData);
  const auto alert = seal(w, closeNotify, 2, kAlert);
  wire.insert(wire.end(), alert.begin(), alert.end());
  feed(r, wire.data(), wire.size());
  uint8_t dst[64] = {};
  iovec iov{dst, sizeof(dst)};
  IovSink a(&iov, 1);
  ASSERT_EQ(r.open(a, SIZE_MAX, &why), RecordReader::Result::Moved) << why;
  EXPECT_EQ(a.written(), sizeof(data));
  EXPECT_EQ(std::memcmp(dst, data, sizeof(data)), 0);
  EXPECT_TRUE(r.ready());  // the close is there to be read
  IovSink b(&iov, 1);
  EXPECT_EQ(r.open(b, SIZE_MAX, &why), RecordReader::Result::Closed);
  EXPECT_EQ(b.written(), 0u);
}

TEST(TlsRecords, OtherAlertsAndRecordsAreRefusedNamingThem) {
  RecordWriter w;
  std::string why;
  ASSERT_TRUE(w.init(kSecret, &why)) << why;
  std::vector<uint8_t> plain;
  const uint8_t failure[2] = {2, 40};
  EXPECT_EQ(openAlone(seal(w, failure, 2, kAlert), &why, &plain), RecordReader::Result::Failed);
  EXPECT_NE(why.find("alert 40"), std::string::npos) << why;
  RecordWriter w2;
  ASSERT_TRUE(w2.init(kSecret, &why)) << why;
  const uint8_t askBack[5] = {24, 0, 0, 1, 1};
  EXPECT_EQ(openAlone(seal(w2, askBack, 5, kHandshake), &why, &plain),
            RecordReader::Result::Failed);
  EXPECT_NE(why.find("asks for one back"), std::string::npos) << why;
  RecordWriter w3;
  ASSERT_TRUE(w3.init(kSecret, &why)) << why;
  const uint8_t ticket[8] = {4, 0, 0, 4, 0, 0, 0, 0};
  EXPECT_EQ(openAlone(seal(w3, ticket, 8, kHandshake), &why, &plain), RecordReader::Result::Failed);
  EXPECT_NE(why.find("content type 22"), std::string::npos) << why;
  RecordWriter w4;
  ASSERT_TRUE(w4.init(kSecret, &why)) << why;
  const uint8_t padded[3] = {1, 2, 3};
  EXPECT_EQ(openAlone(seal(w4, padded, 3, 0), &why, &plain), RecordReader::Result::Failed);
  EXPECT_NE(why.find("padded"), std::string::npos) << why;
  // A large record of another type never reaches the caller's buffer as data.
  RecordWriter w5;
  ASSERT_TRUE(w5.init(kSecret, &why)) << why;
  std::vector<uint8_t> big(5000, 1);
  EXPECT_EQ(openAlone(seal(w5, big.data(), big.size(), kAlert), &why, &plain),
            RecordReader::Result::Failed);
}

TEST(TlsRecords, KeyLogLinesGiveTheTrafficSecrets) {
  Secret client, server;
  const std::string random(64, 'a');
  std::string hex;
  for (int i = 0; i < 32; ++i) hex += "0123456789abcdef"[i % 16], hex += "fedcba9876543210"[i % 16];
  EXPECT_TRUE(parseKeyLogLine(("CLIENT_HANDSHAKE_TRAFFIC_SECRET " + random + " " + hex).c_str(),
                              &client, &server));
  EXPECT_FALSE(client.set || server.set);
  EXPECT_TRUE(
      parseKeyLogLine(("SERVER_TRAFFIC_SECRET_0 " + random + " " + hex).c_str(), &client, &server));
  EXPECT_TRUE(server.set);
  EXPECT_FALSE(client.set);
  EXPECT_EQ(server.bytes[0], 0x0f);
  EXPECT_EQ(server.bytes[1], 0x1e);
  EXPECT_FALSE(parseKeyLogLine(("CLIENT_TRAFFIC_SECRET_0 " + random + " " + hex.substr(2)).c_str(),
                               &client, &server));
  EXPECT_FALSE(parseKeyLogLine(("CLIENT_TRAFFIC_SECRET_0 " + random + " " + hex + "00").c_str(),
                               &client, &server));
  std::string bad = hex;
  bad[10] = 'g';
  EXPECT_FALSE(
      parseKeyLogLine(("CLIENT_TRAFFIC_SECRET_0 " + random + " " + bad).c_str(), &client, &server));
  EXPECT_FALSE(parseKeyLogLine("CLIENT_TRAFFIC_SECRET_0 nospace", &client, &server));
  EXPECT_FALSE(client.set);
}

TEST(TlsRecords, BraidTlsGcmChoosesTheCipherOrSaysWhyNot) {
  std::string missing;
  const bool have = ipsecMbGcmAvailable(&missing);
  GcmImpl impl = GcmImpl::IpsecMb;
  setenv("BRAID_TLS_GCM", "openssl", 1);
  ASSERT_TRUE(chooseGcm(&impl).ok());
  EXPECT_EQ(impl, GcmImpl::OpenSsl);
  setenv("BRAID_TLS_GCM", "auto", 1);
  ASSERT_TRUE(chooseGcm(&impl).ok());
  EXPECT_EQ(impl, have ? GcmImpl::IpsecMb : GcmImpl::OpenSsl);
  setenv("BRAID_TLS_GCM", "ipsec-mb", 1);
  Status st = chooseGcm(&impl);
  if (have) {
    EXPECT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(impl, GcmImpl::IpsecMb);
  } else {
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("BRAID_TLS_GCM is 'ipsec-mb'"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(missing), std::string::npos) << st.message();
  }
  setenv("BRAID_TLS_GCM", "aesni", 1);
  st = chooseGcm(&impl);
  unsetenv("BRAID_TLS_GCM");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("BRAID_TLS_GCM is 'aesni': auto, ipsec-mb or openssl"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace braid::net::tls13
