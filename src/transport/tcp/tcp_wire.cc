#include "transport/tcp/tcp_wire.h"

namespace braid::transport::tcp {

std::vector<uint8_t> encodeHandle(const Handle& handle) {
  std::vector<uint8_t> out(kHandleBytes, 0);
  net::putU32(out.data(), kHandleVersion);
  net::putU32(out.data() + 4, static_cast<uint32_t>(handle.streams));
  net::putU64(out.data() + 8, handle.token);
  handle.address.toWire(out.data() + 16);
  return out;
}

Status decodeHandle(const std::vector<uint8_t>& bytes, Handle* out) {
  if (bytes.size() != kHandleBytes)
    return invalidArgument("the peer's handle is %zu bytes, a TCP handle %zu", bytes.size(),
                           kHandleBytes);
  if (net::getU32(bytes.data()) != kHandleVersion)
    return invalidArgument("the peer's handle starts 0x%08x, not a TCP handle (0x%08x)",
                           net::getU32(bytes.data()), kHandleVersion);
  const uint32_t streams = net::getU32(bytes.data() + 4);
  if (streams < 1 || streams > static_cast<uint32_t>(kMaxStreams))
    return invalidArgument("the peer's handle names %u streams (1 to %d)", streams, kMaxStreams);
  Handle h;
  h.streams = static_cast<int>(streams);
  h.token = net::getU64(bytes.data() + 8);
  BRAID_TRY(
      net::SocketAddress::fromWire(bytes.data() + 16, &h.address).withContext("the peer's handle"));
  if (h.address.port() == 0) return invalidArgument("%s", "the peer's handle has port 0");
  *out = h;
  return Status::Ok();
}

void encodeHello(const StreamHello& hello, uint8_t* out) {
  net::putU64(out, hello.token);
  net::putU32(out + 8, hello.rank);
  net::putU32(out + 12, hello.stream);
  net::putU32(out + 16, hello.streams);
  net::putU32(out + 20, 0);
}

Status decodeHello(const uint8_t* bytes, uint64_t token, uint32_t streams, StreamHello* out) {
  StreamHello h;
  h.token = net::getU64(bytes);
  h.rank = net::getU32(bytes + 8);
  h.stream = net::getU32(bytes + 12);
  h.streams = net::getU32(bytes + 16);
  if (h.token != token)
    return invalidArgument("hello with token 0x%016llx, this listener's is 0x%016llx",
                           static_cast<unsigned long long>(h.token),
                           static_cast<unsigned long long>(token));
  if (h.rank > kMaxRank) return invalidArgument("hello from rank %u", h.rank);
  if (h.streams != streams)
    return invalidArgument("hello from rank %u for %u streams, this rank uses %u", h.rank,
                           h.streams, streams);
  if (h.stream >= h.streams)
    return invalidArgument("hello from rank %u for stream %u of %u", h.rank, h.stream, h.streams);
  *out = h;
  return Status::Ok();
}

void encodeHeader(uint64_t message, size_t bytes, uint8_t* out) {
  net::putU32(out, kMessageMagic);
  net::putU32(out + 4, static_cast<uint32_t>(message));
  net::putU64(out + 8, bytes);
}

Status checkHeader(const uint8_t* header, uint64_t message, size_t postedBytes) {
  const uint32_t magic = net::getU32(header), seq = net::getU32(header + 4);
  const uint64_t bytes = net::getU64(header + 8);
  if (magic != kMessageMagic || seq != static_cast<uint32_t>(message))
    return internalError("corrupt message header (magic 0x%08x, sequence %u, expected %u)", magic,
                         seq, static_cast<uint32_t>(message));
  if (bytes != postedBytes)
    return invalidUsage("message %llu: peer sent %llu bytes, the posted receive is %zu bytes",
                        static_cast<unsigned long long>(message),
                        static_cast<unsigned long long>(bytes), postedBytes);
  return Status::Ok();
}

}  // namespace braid::transport::tcp
