// The bootstrap's wire formats as pure functions over bytes: what the root reads from a rank
// (the hello) and decides about it (the rendezvous table), what a rank reads back (the address
// table or a refusal naming the cause), the hello that opens a rank-to-rank connection, and the
// framing of bootstrap messages. The socket code (bootstrap_root.cc, bootstrap.cc) only moves
// bytes and calls these, so the fuzz target tests/fuzz/fuzz_bootstrap.cc runs exactly the
// production decoders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/net/socket.h"
#include "base/status.h"

namespace braid::bootstrap {

// The bootstrap protocol's version. It sits at bytes 8-11 of the root hello in every version,
// after the magic, so a root can name the version of any build's hello. The high half is a
// marker: a hello of a build older than the version field carries a rank id there (below 2^20),
// which can never be mistaken for a version.
constexpr uint32_t kWireVersionMarker = 0x42520000u;  // "BR"
constexpr uint32_t kWireVersion = kWireVersionMarker | 2u;
// Ranks accept at most this many ranks; bigger is a corrupt or hostile hello.
constexpr uint32_t kMaxRanks = 1u << 20;

// Rank -> root: magic u64, version u32, rank u32, nranks u32, the rank's listener address.
constexpr size_t kRootHelloBytes = 20 + net::SocketAddress::kWireBytes;
struct RootHello {
  uint64_t magic = 0;
  uint32_t version = kWireVersion;
  uint32_t rank = 0;
  uint32_t nranks = 0;
  net::SocketAddress address;
};
void encodeRootHello(const RootHello& hello, uint8_t* out);  // kRootHelloBytes

// Why the root refused a hello; travels in a refusal reply. Values are part of the wire format.
enum class Refusal : uint32_t {
  WrongMagic = 1,         // a unique id of another rendezvous (stale or foreign)
  WrongVersion = 2,       // a Braid build speaking another bootstrap version
  BadAddress = 3,         // the hello's listener address cannot be decoded
  RankOutOfRange = 4,     // rank >= nranks, nranks 0 or above kMaxRanks
  WorldSizeMismatch = 5,  // nranks differs from the nranks earlier ranks gave
  DuplicateRank = 6,      // a rank id that already arrived
  RendezvousFailed = 7,   // another rank's refusal failed the rendezvous this rank was part of
  Timeout = 8,            // ranks missing when the root gave up
  Encryption = 9,         // a plaintext rank at a root that encrypts (TLS, base/net/tls.h)
};
// The NCCL code a rank's init returns for a refusal: ncclInvalidArgument when the rank's own
// arguments cannot be right whatever the other ranks do (an id of another rendezvous, a rank
// out of range), ncclInvalidUsage when the ranks' calls contradict each other (world sizes,
// a rank id used twice, builds of two versions) or another rank broke the rendezvous, and
// ncclRemoteError when ranks never came.
ncclResult_t refusalCode(Refusal reason);

// Root -> rank: magic u64 (the rank's own), kind u32, count u32, then the body:
//   kind 1 (table): count = nranks, then nranks listener addresses (wire form);
//   kind 2 (refusal): count = body bytes (at most kMaxRefusalBytes): reason u32, then text.
// This layout is fixed in every version, so a rank of any build can read a refusal.
constexpr size_t kRootReplyHeaderBytes = 16;
constexpr uint32_t kReplyTable = 1;
constexpr uint32_t kReplyRefusal = 2;
constexpr size_t kMaxRefusalBytes = 1024;
std::vector<uint8_t> encodeTableReply(uint64_t magic, uint32_t nranks,
                                      const std::vector<uint8_t>& addresses);
std::vector<uint8_t> encodeRefusalReply(uint64_t magic, Refusal reason, const std::string& text);

// A rank's reading of the root's reply header: Ok with the body's size and kind, or an error
// naming what does not fit this rank's rendezvous (another magic, another nranks, a body size
// beyond the format's limits).
struct ReplyHeader {
  uint32_t kind = 0;
  size_t bodyBytes = 0;
};
Status decodeReplyHeader(const uint8_t* header, uint64_t magic, uint32_t nranks, ReplyHeader* out);
// The table body: nranks addresses, each a valid address with a port.
Status decodeTable(const uint8_t* body, size_t bytes, uint32_t nranks,
                   std::vector<net::SocketAddress>* peers);
// A refusal body, turned into the error the rank's init returns (never Ok).
Status decodeRefusal(const uint8_t* body, size_t bytes);

// The root's side: one rendezvous as a state machine over hellos, without sockets.
class Rendezvous {
 public:
  explicit Rendezvous(uint64_t magic) : magic_(magic) {}

  enum class Step {
    NeedMore,  // the bytes so far are a valid beginning; read on
    Complete,  // a whole hello, decoded into *hello: pass it to admit()
    Refuse,    // refused: *reason and *text say why (the connection is answered, then closed)
  };
  // Looks at the first `got` bytes (at most kRootHelloBytes) of one connection's hello.
  // A hello with this rendezvous's magic comes from one of its ranks, so refusing it (wrong
  // version, bad address, rank out of range) also fails the rendezvous.
  Step inspect(const uint8_t* bytes, size_t got, RootHello* hello, Refusal* reason,
               std::string* text);
  // Takes a complete hello into the table; false (with *reason and *text) when it contradicts
  // the hellos before it, which fails the rendezvous, or when it has failed already.
  bool admit(const RootHello& hello, Refusal* reason, std::string* text);
  // Fails the rendezvous (the root gave up waiting): the ranks still missing are named.
  void timeOut(int64_t idleMs);

  bool failed() const { return failed_; }
  Refusal failure() const { return failure_; }
  const std::string& failureText() const { return failureText_; }
  // What every other rank of a failed rendezvous is told: "the rendezvous failed: <text>".
  std::string failedNotice() const;
  bool complete() const { return !failed_ && expected_ > 0 && arrived_ == expected_; }
  uint32_t expected() const { return expected_; }
  uint32_t arrived() const { return arrived_; }
  bool hasRank(uint32_t rank) const { return rank < present_.size() && present_[rank]; }
  // Every rank's listener address in wire form, rank order (valid once complete()).
  const std::vector<uint8_t>& addresses() const { return addresses_; }
  // "2, 5 and 3 more" style list of the ranks not arrived yet.
  std::string missingRanks() const;

 private:
  bool fail(Refusal reason, std::string text);

  const uint64_t magic_;
  uint32_t expected_ = 0;   // 0: no hello admitted yet
  uint32_t firstRank_ = 0;  // the rank whose hello set expected_
  uint32_t arrived_ = 0;
  std::vector<bool> present_;
  std::vector<uint8_t> addresses_;
  bool failed_ = false;
  Refusal failure_ = Refusal::RendezvousFailed;
  std::string failureText_;
};

// Rank -> rank: every bootstrap connection opens with magic u64, rank u32, kind u32.
enum class ConnKind : uint32_t { Ring = 1, P2P = 2 };
constexpr size_t kPeerHelloBytes = 16;
void encodePeerHello(uint64_t magic, uint32_t rank, ConnKind kind, uint8_t* out);
// Ok with the dialer's rank and connection kind, or an error naming what is wrong.
Status decodePeerHello(const uint8_t* hello, uint64_t magic, uint32_t nranks, uint32_t* rank,
                       ConnKind* kind);

// A point-to-point message: tag u64, bytes u64, then the bytes. A ring step: bytes u64, then
// the bytes.
constexpr size_t kMsgHeaderBytes = 16;
constexpr size_t kRingHeaderBytes = 8;
// Point-to-point messages above this are refused as a corrupt or hostile size (bootstrap
// messages are ids, signatures and small tables; the receiver allocates what a header claims).
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 30;
void encodeMsgHeader(uint64_t tag, uint64_t bytes, uint8_t* out);
Status decodeMsgHeader(const uint8_t* header, uint64_t* tag, uint64_t* bytes);
// A ring step's header must carry the size this rank expects.
Status checkRingHeader(const uint8_t* header, size_t expectBytes);

}  // namespace braid::bootstrap
