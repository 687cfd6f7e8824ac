// The TCP transport's wire formats as pure functions over bytes: the connection handle a rank
// publishes through the bootstrap, the hello that opens every stream, and the header of every
// message. tcp_transport.cc and tcp_endpoint.cc call these, so the fuzz target
// tests/fuzz/fuzz_tcp.cc runs exactly the production decoders (and the endpoint itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/net/socket.h"
#include "base/status.h"

namespace braid::transport::tcp {

// More streams per peer than this is a corrupt handle or hello (NCCL_SOCKET_NTHREADS x
// NCCL_NSOCKS_PERTHREAD is at most 64).
constexpr int kMaxStreams = 64;
// A dialing rank's id above this is a corrupt hello.
constexpr uint32_t kMaxRank = 1u << 30;

// Handle: version u32 ("BTC1"), streams u32, token u64, the listener's address (wire form).
constexpr uint32_t kHandleVersion = 0x42544331;
constexpr size_t kHandleBytes = 16 + net::SocketAddress::kWireBytes;
struct Handle {
  int streams = 0;
  uint64_t token = 0;
  net::SocketAddress address;
};
std::vector<uint8_t> encodeHandle(const Handle& handle);
// Ok, or invalidArgument saying what is wrong with the bytes. The stream count is checked
// against this rank's by the caller (a mismatch is a configuration error, named as one).
Status decodeHandle(const std::vector<uint8_t>& bytes, Handle* out);

// Stream hello: token u64, rank u32, stream u32, streams u32, reserved u32.
constexpr size_t kHelloBytes = 24;
struct StreamHello {
  uint64_t token = 0;
  uint32_t rank = 0;
  uint32_t stream = 0;
  uint32_t streams = 0;
};
void encodeHello(const StreamHello& hello, uint8_t* out);
// Ok when the hello is for this listener (`token`) and this stream count.
Status decodeHello(const uint8_t* bytes, uint64_t token, uint32_t streams, StreamHello* out);

// Message header, first on stream 0: magic u32 ("BTM1"), sequence u32 (the message's index,
// mod 2^32), bytes u64.
constexpr size_t kHeaderBytes = 16;
constexpr uint32_t kMessageMagic = 0x42544d31;
void encodeHeader(uint64_t message, size_t bytes, uint8_t* out);
// Ok when the header is message `message`'s and its size is the posted receive's; otherwise an
// internal error (a corrupt stream) or invalidUsage (the sizes differ: mismatched calls).
Status checkHeader(const uint8_t* header, uint64_t message, size_t postedBytes);

}  // namespace braid::transport::tcp
