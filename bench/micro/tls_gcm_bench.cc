// TLS record sealing and opening (base/net/tls_records.h) per AES-GCM implementation (gcm.h):
// full 16 KiB records, sealed from one buffer into a queue and opened from it into another, as
// the TCP transport's TLS path does (opening includes the copy into the reader's buffer that a
// receive's system call makes). Bytes/s counts plaintext bytes.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/net/tls_records.h"
#include "benchmark_main.h"

namespace braid::net::tls13 {
namespace {

constexpr size_t kRecords = 64;  // 1 MiB of plaintext a pass
const uint8_t kSecret[kSecretBytes] = {7};

void sealRecords(RecordWriter& w, const std::vector<uint8_t>& plain, std::vector<uint8_t>* wire) {
  std::string why;
  uint8_t* out = wire->data();
  for (size_t i = 0; i < kRecords; ++i) {
    const uint8_t* in = plain.data() + i * kMaxPlainBytes;
    out += w.seal(
        kMaxPlainBytes, kApplicationData, out,
        [&](RecordKey& key, uint8_t* body) { return key.crypt(in, body, kMaxPlainBytes); }, &why);
  }
  wire->resize(static_cast<size_t>(out - wire->data()));
}

void seal(benchmark::State& state, GcmImpl impl) {
  std::vector<uint8_t> plain(kRecords * kMaxPlainBytes, 1), wire;
  RecordWriter w;
  std::string why;
  if (!w.init(kSecret, &why, impl)) return state.SkipWithError(why.c_str());
  for (auto _ : state) {
    wire.resize(kRecords * sealedBytes(kMaxPlainBytes) + 64);
    sealRecords(w, plain, &wire);
    benchmark::DoNotOptimize(wire.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(plain.size()));
}

void open(benchmark::State& state, GcmImpl impl) {
  std::vector<uint8_t> plain(kRecords * kMaxPlainBytes, 1), out(plain.size());
  RecordWriter w(/*recordsPerKey=*/uint64_t{1} << 62);
  RecordReader r;
  std::string why;
  if (!w.init(kSecret, &why, impl) || !r.init(kSecret, &why, impl))
    return state.SkipWithError(why.c_str());
  std::vector<uint8_t> wire;
  for (auto _ : state) {
    state.PauseTiming();  // the reader's key moves on with the writer's: seal a fresh pass
    wire.resize(kRecords * sealedBytes(kMaxPlainBytes) + 64);
    sealRecords(w, plain, &wire);
    state.ResumeTiming();
    for (size_t fed = 0; fed < wire.size();) {
      size_t room = 0;
      uint8_t* at = r.space(&room);
      const size_t n = std::min(room, wire.size() - fed);
      std::memcpy(at, wire.data() + fed, n);
      r.received(n);
      fed += n;
      iovec iov{out.data(), out.size()};
      IovSink sink(&iov, 1);
      if (r.open(sink, SIZE_MAX, &why) == RecordReader::Result::Failed)
        return state.SkipWithError(why.c_str());
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(plain.size()));
}

void registerAll() {
  std::string why;
  for (GcmImpl impl : {GcmImpl::OpenSsl, GcmImpl::IpsecMb}) {
    if (impl == GcmImpl::IpsecMb && !ipsecMbGcmAvailable(&why)) continue;
    const std::string name = gcmImplName(impl);
    benchmark::RegisterBenchmark(("seal/" + name).c_str(), seal, impl);
    benchmark::RegisterBenchmark(("open/" + name).c_str(), open, impl);
  }
}

}  // namespace
}  // namespace braid::net::tls13

int main(int argc, char** argv) {
  return braid::bench::benchmarkMain(argc, argv, braid::net::tls13::registerAll);
}
