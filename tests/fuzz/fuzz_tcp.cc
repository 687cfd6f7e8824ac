// Fuzz target: the TCP transport's wire formats (transport/tcp/tcp_wire.h) and the endpoint
// that reads them. The first byte picks:
//   0  a connection handle (the bytes a peer publishes through the bootstrap)
//   1  a stream's opening hello
//   2  a message header
//   3  the endpoint itself: a TcpEndpoint over socket pairs (1 to 3 streams) reads the input
//      as its peer's byte streams into posted receives (some through a RecvSink), until every
//      receive completes or it fails; it must never write outside a posted buffer or hang.
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

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

}  // namespace

std::span<const fuzz::Decoder> fuzz::decoders() {
  static constexpr Decoder kDecoders[] = {handle, hello, header, endpoint};
  return kDecoders;
}

}  // namespace braid
