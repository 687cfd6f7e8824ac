// Fuzz target: the bootstrap's wire formats, as the process reads them from outside
// (core/bootstrap/wire.h, bootstrap_root.h). The first byte picks the decoder:
//   0  the root: a sequence of connections' hellos, each delivered in pieces, into one
//      Rendezvous, then the table or the refusals it would send, read back as a rank reads them
//   1  a rank reading the root's reply (header, then table or refusal)
//   2  the hello that opens a rank-to-rank connection
//   3  point-to-point and ring message headers
//   4  the unique id
#include <vector>

#include "core/bootstrap/bootstrap.h"
#include "core/bootstrap/bootstrap_root.h"
#include "core/bootstrap/wire.h"
#include "fuzz_common.h"

namespace braid {
namespace {

using fuzz::broken;
using fuzz::Input;
constexpr uint64_t kMagic = 0x0123456789abcdefull;

// A reply the root builds must read back as a rank reads it.
void readBack(const std::vector<uint8_t>& reply, uint32_t nranks, bool table) {
  bootstrap::ReplyHeader h;
  Status st = bootstrap::decodeReplyHeader(reply.data(), kMagic, nranks, &h);
  if (!st.ok()) broken("root reply header", st.message());
  if (bootstrap::kRootReplyHeaderBytes + h.bodyBytes != reply.size()) broken("root reply size");
  const uint8_t* body = reply.data() + bootstrap::kRootReplyHeaderBytes;
  if (table) {
    std::vector<net::SocketAddress> peers;
    st = bootstrap::decodeTable(body, h.bodyBytes, nranks, &peers);
    if (!st.ok() || peers.size() != nranks) broken("root table", st.message());
  } else if (bootstrap::decodeRefusal(body, h.bodyBytes).ok()) {
    broken("a refusal read back as success");
  }
}

void rootHellos(Input& in) {
  bootstrap::Rendezvous rv(kMagic);
  while (in.left() > 0 && !rv.complete()) {
    // One connection: its hello's length, then how it arrives (piece sizes).
    const size_t length = in.u8() % (bootstrap::kRootHelloBytes + 1);
    const uint8_t piece = static_cast<uint8_t>(in.u8() % 8 + 1);
    uint8_t hello[bootstrap::kRootHelloBytes] = {};
    std::string_view bytes = in.bytes(length);
    std::memcpy(hello, bytes.data(), bytes.size());
    size_t got = 0;
    bool done = false;
    while (!done && got < bytes.size()) {
      got = std::min(bytes.size(), got + piece);
      bootstrap::RootHello h;
      bootstrap::Refusal reason{};
      std::string text;
      switch (rv.inspect(hello, got, &h, &reason, &text)) {
        case bootstrap::Rendezvous::Step::NeedMore:
          if (got == bootstrap::kRootHelloBytes) broken("a whole hello still needs more");
          break;
        case bootstrap::Rendezvous::Step::Refuse:
          readBack(bootstrap::encodeRefusalReply(kMagic, reason, text), 0, false);
          done = true;
          break;
        case bootstrap::Rendezvous::Step::Complete:
          if (h.rank >= h.nranks) broken("admitted a rank out of range");
          if (!rv.admit(h, &reason, &text)) {
            if (!rv.failed()) broken("a refused admission did not fail the rendezvous");
            readBack(bootstrap::encodeRefusalReply(kMagic, reason, text), 0, false);
          }
          done = true;
          break;
      }
    }
  }
  if (rv.complete()) {
    if (rv.addresses().size() != rv.expected() * net::SocketAddress::kWireBytes)
      broken("table size");
    readBack(bootstrap::encodeTableReply(kMagic, rv.expected(), rv.addresses()), rv.expected(),
             true);
  } else if (rv.expected() > 0) {
    rv.timeOut(1000);
    if (!rv.failed() || rv.missingRanks().empty()) broken("a timed-out rendezvous names nobody");
  }
}

void rankReply(Input& in) {
  const uint32_t nranks = in.u8() % 9 + 1;
  uint8_t header[bootstrap::kRootReplyHeaderBytes];
  in.take(header, sizeof(header));
  bootstrap::ReplyHeader h;
  if (!bootstrap::decodeReplyHeader(header, kMagic, nranks, &h).ok()) return;
  if (h.bodyBytes > bootstrap::kMaxRefusalBytes &&
      h.bodyBytes != nranks * net::SocketAddress::kWireBytes)
    broken("a reply body beyond the format's limits was accepted");
  std::vector<uint8_t> body(h.bodyBytes);
  in.take(body.data(), body.size());
  if (h.kind == bootstrap::kReplyRefusal) {
    Status st = bootstrap::decodeRefusal(body.data(), body.size());
    if (st.ok()) broken("a refusal decoded as success");
  } else {
    std::vector<net::SocketAddress> peers;
    if (bootstrap::decodeTable(body.data(), body.size(), nranks, &peers).ok() &&
        peers.size() != nranks)
      broken("table of the wrong size");
  }
}

void peerHello(Input& in) {
  const uint32_t nranks = in.u16();
  uint8_t hello[bootstrap::kPeerHelloBytes];
  in.take(hello, sizeof(hello));
  uint32_t rank = 0;
  bootstrap::ConnKind kind{};
  if (bootstrap::decodePeerHello(hello, kMagic, nranks, &rank, &kind).ok() && rank >= nranks)
    broken("peer hello from a rank out of range");
}

void messageHeaders(Input& in) {
  uint8_t header[bootstrap::kMsgHeaderBytes];
  in.take(header, sizeof(header));
  uint64_t tag = 0, bytes = 0;
  if (bootstrap::decodeMsgHeader(header, &tag, &bytes).ok() && bytes > bootstrap::kMaxMessageBytes)
    broken("message size beyond the limit accepted");
  (void)bootstrap::checkRingHeader(header, in.u32());
}

void uniqueId(Input& in) {
  ncclUniqueId id;
  in.take(id.internal, sizeof(id.internal));
  bootstrap::IdContents c;
  const bool ok = bootstrap::decodeUniqueId(id, &c).ok();
  if (ok != validateUniqueId(id).ok()) broken("validate and decode disagree");
  (void)describeUniqueId(id);
  if (!ok) return;
  ncclUniqueId again;
  bootstrap::encodeUniqueId(c, &again);
  bootstrap::IdContents c2;
  if (!bootstrap::decodeUniqueId(again, &c2).ok() || c2.magic != c.magic || !(c2.root == c.root))
    broken("unique id round trip");
}

}  // namespace

std::span<const fuzz::Decoder> fuzz::decoders() {
  static constexpr Decoder kDecoders[] = {rootHellos, rankReply, peerHello, messageHeaders,
                                          uniqueId};
  return kDecoders;
}

}  // namespace braid
