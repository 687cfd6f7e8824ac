// Fuzz target: the TCP transport's wire formats (transport/tcp/tcp_wire.h) and the endpoint
// that reads them. The first byte picks:
//   0  a connection handle (the bytes a peer publishes through the bootstrap)
//   1  a stream's opening hello
//   2  a message header
//   3  the endpoint itself: a TcpEndpoint over socket pairs (1 to 3 streams) reads the input
//      as its peer's byte streams into posted receives (some through a RecvSink), until every
//      receive completes or it fails; it must never write outside a posted buffer or hang.
//   4  Braid's TLS 1.3 record layer (base/net/tls_records.h), which the TCP transport's bytes
//      cross under encryption: records of input-chosen content types and contents, sealed with
//      the connection's key (a byte changed in some), fed in input-sized pieces to a reader that
//      opens them into input-sized buffers. The data records' bytes must come out exactly and
//      in order, and the reader must stop as a model says: closed after a close_notify, failed
//      at a changed record or any other record but a KeyUpdate (whose new key the writer never
//      took, so the record after it fails); raw input bytes after the records must fail or wait.
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "base/net/tls_records.h"
#include "fuzz_common.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/tcp_wire.h"

namespace braid {
namespace {

using fuzz::broken;
using fuzz::Input;
namespace tcp = transport::tcp;

void handle(Input& in) {
  std::string_view b = in.rest();
  std::vector<uint8_t> bytes(b.begin(), b.end());
  tcp::Handle h;
  if (!tcp::decodeHandle(bytes, &h).ok()) return;
  if (h.streams < 1 || h.streams > tcp::kMaxStreams) broken("handle stream count");
  tcp::Handle again;
  if (!tcp::decodeHandle(tcp::encodeHandle(h), &again).ok() || again.token != h.token ||
      again.streams != h.streams || !(again.address == h.address))
    broken("handle round trip");
}

void hello(Input& in) {
  const uint64_t token = in.u64();
  const uint32_t streams = in.u8() % 65;
  uint8_t bytes[tcp::kHelloBytes];
  in.take(bytes, sizeof(bytes));
  tcp::StreamHello h;
  if (tcp::decodeHello(bytes, token, streams, &h).ok() && h.stream >= streams)
    broken("hello for a stream out of range");
}

void header(Input& in) {
  const uint64_t message = in.u64();
  const size_t posted = in.u32();
  uint8_t bytes[tcp::kHeaderBytes];
  in.take(bytes, sizeof(bytes));
  (void)tcp::checkHeader(bytes, message, posted);
}

// Checks that a sink sees each byte of its message once, in order, inside the message.
class OrderedSink final : public transport::RecvSink {
 public:
  explicit OrderedSink(size_t bytes) : bytes_(bytes) {}
  void consume(size_t offset, const void* data, size_t bytes) override {
    if (offset != next_ || bytes > bytes_ - offset) broken("sink handed bytes out of order");
    volatile uint8_t sum = 0;  // touch every byte, so ASan sees a read past the staging buffer
    for (size_t i = 0; i < bytes; ++i) sum = sum + static_cast<const uint8_t*>(data)[i];
    next_ += bytes;
  }

 private:
  size_t bytes_;
  size_t next_ = 0;
};

void endpoint(Input& in) {
  const size_t streams = in.u8() % 3 + 1;
  const size_t slice = size_t{16} << (in.u8() % 4);  // 16 to 128 bytes: several slices a message
  const size_t receives = in.u8() % 4 + 1;
  std::vector<size_t> sizes(receives);
  for (size_t& s : sizes) s = in.u16() % 1024;
  const uint8_t sinkMask = in.u8();

  std::vector<transport::TcpEndpoint::StreamSockets> fds(streams);
  std::vector<int> peers(streams);
  for (size_t j = 0; j < streams; ++j) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return;
    fds[j].send = net::Socket(net::Fd(sv[0]));
    peers[j] = sv[1];
  }
  // The peer's bytes: the rest of the input, stream j taking every streams-th chunk of 64.
  std::string_view rest = in.rest();
  for (size_t off = 0, k = 0; off < rest.size(); off += 64, ++k) {
    std::string_view chunk = rest.substr(off, 64);
    (void)!::write(peers[k % streams], chunk.data(), chunk.size());
  }
  for (int p : peers) ::shutdown(p, SHUT_WR);

  transport::TcpEndpoint ep(std::move(fds), slice, 1);
  std::vector<std::vector<uint8_t>> buffers(receives);
  std::vector<std::unique_ptr<OrderedSink>> sinks(receives);
  for (size_t k = 0; k < receives; ++k) {
    buffers[k].resize(sizes[k]);
    if (sinkMask & (1u << k)) sinks[k] = std::make_unique<OrderedSink>(sizes[k]);
    if (!ep.postRecv(buffers[k].data(), sizes[k], sinks[k].get()).ok()) break;
  }
  // Every byte is already in the sockets, and the peer closed: each round either moves bytes
  // or ends in an error, so a bounded number of rounds must settle it.
  for (int round = 0; round < 10000; ++round) {
    if (!ep.progress().ok()) break;
    if (ep.recvsCompleted() == receives) break;
    if (round == 9999) broken("the endpoint neither finished nor failed");
  }
  for (int p : peers) ::close(p);
}

void records(Input& in) {
  namespace tls13 = net::tls13;
  const uint8_t secret[tls13::kSecretBytes] = {7, 1, 7};
  const uint8_t first = in.u8();
  tls13::RecordWriter w(1 + first % 4);  // the writer's own KeyUpdates, often
  tls13::RecordReader r;
  std::string why;
  // Each end's AES-GCM from the same byte: OpenSSL's, or ipsec-mb's where it loads.
  static const bool ipsec = tls13::ipsecMbGcmAvailable(&why);
  auto gcm = [](bool want) {
    return want && ipsec ? tls13::GcmImpl::IpsecMb : tls13::GcmImpl::OpenSsl;
  };
  why.clear();
  if (!w.init(secret, &why, gcm(first & 4)) || !r.init(secret, &why, gcm(first & 8)))
    broken("record keys");
  // The model: the bytes expected out, and how the reader ends.
  enum class End { Waits, Closed, Fails } end = End::Waits;
  std::vector<uint8_t> wire, expected;
  static constexpr uint8_t kUpdate[] = {24, 0, 0, 1, 0};
  bool stale = false;  // a KeyUpdate the writer never took: the next record fails
  for (int k = 0; k < 12 && in.left() > 0 && end == End::Waits; ++k) {
    const uint8_t kind = in.u8();
    std::string_view content = in.bytes(in.u16() % (tls13::kMaxPlainBytes + 1));
    uint8_t type = tls13::kApplicationData;
    std::vector<uint8_t> plain(content.begin(), content.end());
    if (kind % 8 == 1) type = tls13::kAlert, plain = {1, static_cast<uint8_t>(kind >> 7)};
    if (kind % 8 == 2) type = tls13::kHandshake, plain.assign(kUpdate, kUpdate + 5);
    if (kind % 8 == 3) type = kind >> 3;
    std::vector<uint8_t> rec(w.bytesFor(plain.size()));
    if (w.seal(
            plain.size(), type, rec.data(),
            [&](tls13::RecordKey& key, uint8_t* body) {
              return key.crypt(plain.data(), body, plain.size());
            },
            &why) != rec.size())
      broken("sealing a record");
    const bool changed = kind % 8 == 4;
    if (changed) rec[in.u16() % rec.size()] ^= static_cast<uint8_t>(1 | in.u8());
    wire.insert(wire.end(), rec.begin(), rec.end());
    if (stale || changed) {
      end = End::Fails;
    } else if (type == tls13::kApplicationData) {
      expected.insert(expected.end(), plain.begin(), plain.end());
    } else if (type == tls13::kAlert && plain.size() == 2 && plain[1] == 0) {
      end = End::Closed;
    } else if (type == tls13::kHandshake && plain.size() == 5 &&
               std::memcmp(plain.data(), kUpdate, 5) == 0) {
      stale = true;
    } else {
      end = End::Fails;
    }
  }
  const bool raw = end == End::Waits && in.u8() % 2;  // raw bytes after the records
  if (raw) {
    std::string_view tail = in.bytes(in.u16());
    wire.insert(wire.end(), tail.begin(), tail.end());
  }
  // Sizes from the input while it lasts, then large ones, so the rounds stay few.
  auto size = [&](size_t most) { return in.left() > 0 ? 1 + in.u16() % most : most; };
  std::vector<uint8_t> out(expected.size() + tls13::kMaxPlainBytes);
  size_t fed = 0, got = 0;
  for (int round = 0;; ++round) {
    if (round > 100000) broken("the reader neither finished nor failed");
    const size_t piece = std::min<size_t>(wire.size() - fed, size(1 << 16));
    size_t room = 0;
    uint8_t* at = r.space(&room);
    const size_t n = std::min(piece, room);
    if (n > 0) std::memcpy(at, wire.data() + fed, n);
    r.received(n);
    fed += n;
    iovec iov[2];
    const size_t a = size(20000), b = size(20000) - 1;
    const size_t left = out.size() - got;
    iov[0] = {out.data() + got, std::min(a, left)};
    iov[1] = {out.data() + got + iov[0].iov_len, std::min(b, left - iov[0].iov_len)};
    net::tls13::IovSink sink(iov, 2);
    const auto res = r.open(sink, SIZE_MAX, &why);
    if (res != tls13::RecordReader::Result::Failed) got += sink.written();
    if (got > expected.size() && !raw) broken("more bytes out than the data records held");
    if (res == tls13::RecordReader::Result::Failed) {
      if (end != End::Fails && !raw) broken("a record the reader should have opened failed");
      break;
    }
    if (res == tls13::RecordReader::Result::Closed) {
      if (end != End::Closed) broken("closed without a close_notify");
      break;
    }
    if (res == tls13::RecordReader::Result::NeedBytes && fed == wire.size()) {
      // A changed length may leave the last record short: the reader then waits for the rest.
      if (end == End::Closed) broken("the reader waits instead of reading the close_notify");
      break;
    }
  }
  const size_t compared = std::min(got, expected.size());
  if (compared > 0 && std::memcmp(out.data(), expected.data(), compared) != 0)
    broken("the data records' bytes came out changed");
  if (end != End::Fails && !raw && got != expected.size()) broken("data records' bytes lost");
}

}  // namespace

std::span<const fuzz::Decoder> fuzz::decoders() {
  static constexpr Decoder kDecoders[] = {handle, hello, header, endpoint, records};
  return kDecoders;
}

}  // namespace braid
