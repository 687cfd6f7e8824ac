#include "core/bootstrap/wire.h"

#include <algorithm>
#include <cstring>

#include "base/strfmt.h"

namespace braid::bootstrap {
namespace {

constexpr size_t kAddressOffset = 20;
constexpr size_t kVersionEnd = 12;  // magic and version are in once this many bytes arrived

uint32_t versionNumber(uint32_t v) { return v & 0xffffu; }

std::string describeVersion(uint32_t v) {
  if ((v & 0xffff0000u) == kWireVersionMarker) return strfmt("version %u", versionNumber(v));
  return strfmt("a Braid build older than bootstrap versions (word 0x%08x)", v);
}

// "magic 0x..., this rendezvous has 0x...": what a stranger's or a stale id's bytes show.
std::string magics(uint64_t got, uint64_t ours) {
  return strfmt("magic 0x%016llx, this rendezvous has 0x%016llx",
                static_cast<unsigned long long>(got), static_cast<unsigned long long>(ours));
}

}  // namespace

ncclResult_t refusalCode(Refusal reason) {
  switch (reason) {
    case Refusal::WrongMagic:
    case Refusal::BadAddress:
    case Refusal::RankOutOfRange: return ncclInvalidArgument;
    case Refusal::WrongVersion:
    case Refusal::WorldSizeMismatch:
    case Refusal::DuplicateRank:
    case Refusal::RendezvousFailed:
    case Refusal::Encryption: return ncclInvalidUsage;
    case Refusal::Timeout: return ncclRemoteError;
  }
  return ncclInternalError;
}

void encodeRootHello(const RootHello& hello, uint8_t* out) {
  net::putU64(out, hello.magic);
  net::putU32(out + 8, hello.version);
  net::putU32(out + 12, hello.rank);
  net::putU32(out + 16, hello.nranks);
  hello.address.toWire(out + kAddressOffset);
}

std::vector<uint8_t> encodeTableReply(uint64_t magic, uint32_t nranks,
                                      const std::vector<uint8_t>& addresses) {
  std::vector<uint8_t> reply(kRootReplyHeaderBytes + addresses.size());
  net::putU64(reply.data(), magic);
  net::putU32(reply.data() + 8, kReplyTable);
  net::putU32(reply.data() + 12, nranks);
  if (!addresses.empty())
    std::memcpy(reply.data() + kRootReplyHeaderBytes, addresses.data(), addresses.size());
  return reply;
}

std::vector<uint8_t> encodeRefusalReply(uint64_t magic, Refusal reason, const std::string& text) {
  const size_t textBytes = std::min(text.size(), kMaxRefusalBytes - 4);
  std::vector<uint8_t> reply(kRootReplyHeaderBytes + 4 + textBytes);
  net::putU64(reply.data(), magic);
  net::putU32(reply.data() + 8, kReplyRefusal);
  net::putU32(reply.data() + 12, static_cast<uint32_t>(4 + textBytes));
  net::putU32(reply.data() + kRootReplyHeaderBytes, static_cast<uint32_t>(reason));
  std::memcpy(reply.data() + kRootReplyHeaderBytes + 4, text.data(), textBytes);
  return reply;
}

Status decodeReplyHeader(const uint8_t* header, uint64_t magic, uint32_t nranks, ReplyHeader* out) {
  const uint64_t gotMagic = net::getU64(header);
  const uint32_t kind = net::getU32(header + 8), count = net::getU32(header + 12);
  if (gotMagic != magic)
    return internalError("the root's reply carries %s", magics(gotMagic, magic).c_str());
  if (kind == kReplyTable) {
    if (count != nranks)
      return internalError("the root's table holds %u ranks, this rank expects %u", count, nranks);
    out->kind = kind;
    out->bodyBytes = static_cast<size_t>(count) * net::SocketAddress::kWireBytes;
    return Status::Ok();
  }
  if (kind == kReplyRefusal) {
    if (count < 4 || count > kMaxRefusalBytes)
      return internalError("the root's refusal claims %u bytes (4 to %zu allowed)", count,
                           kMaxRefusalBytes);
    out->kind = kind;
    out->bodyBytes = count;
    return Status::Ok();
  }
  return internalError("the root's reply has kind %u (neither a table nor a refusal)", kind);
}

Status decodeTable(const uint8_t* body, size_t bytes, uint32_t nranks,
                   std::vector<net::SocketAddress>* peers) {
  if (bytes != static_cast<size_t>(nranks) * net::SocketAddress::kWireBytes)
    return internalError("the root's table is %zu bytes, %u ranks need %zu", bytes, nranks,
                         static_cast<size_t>(nranks) * net::SocketAddress::kWireBytes);
  std::vector<net::SocketAddress> out(nranks);
  for (uint32_t r = 0; r < nranks; ++r) {
    BRAID_TRY(net::SocketAddress::fromWire(body + r * net::SocketAddress::kWireBytes, &out[r])
                  .withContext(strfmt("the root's table: rank %u's address", r)));
    if (out[r].port() == 0)
      return internalError("the root's table: rank %u's address has port 0", r);
  }
  *peers = std::move(out);
  return Status::Ok();
}

Status decodeRefusal(const uint8_t* body, size_t bytes) {
  if (bytes < 4)
    return internalError("the root's refusal is %zu bytes, under its 4-byte reason", bytes);
  const uint32_t reason = net::getU32(body);
  std::string text(reinterpret_cast<const char*>(body + 4), bytes - 4);
  // The text is shown to people: anything but printable ASCII becomes '?'.
  for (char& c : text)
    if (c < 0x20 || c > 0x7e) c = '?';
  if (reason < static_cast<uint32_t>(Refusal::WrongMagic) ||
      reason > static_cast<uint32_t>(Refusal::Encryption))
    return internalError("the root refused this rank for reason %u, unknown to this build: %s",
                         reason, text.c_str());
  return {refusalCode(static_cast<Refusal>(reason)),
          "the bootstrap root refused this rank: " + text};
}

Rendezvous::Step Rendezvous::inspect(const uint8_t* bytes, size_t got, RootHello* hello,
                                     Refusal* reason, std::string* text) {
  if (got >= 8 && net::getU64(bytes) != magic_) {
    *reason = Refusal::WrongMagic;
    *text = "hello with " + magics(net::getU64(bytes), magic_) +
            " (a unique id of another rendezvous, or a stale one)";
    return Step::Refuse;
  }
  if (got >= kVersionEnd && net::getU32(bytes + 8) != kWireVersion) {
    *reason = Refusal::WrongVersion;
    *text = strfmt(
        "hello of bootstrap %s, this root (Braid %s) speaks version %u: every rank must "
        "run the same Braid build",
        describeVersion(net::getU32(bytes + 8)).c_str(), BRAID_VERSION_STRING,
        versionNumber(kWireVersion));
    fail(*reason, *text);
    return Step::Refuse;
  }
  if (failed_) {
    *reason = Refusal::RendezvousFailed;
    *text = failedNotice();
    return got >= kVersionEnd ? Step::Refuse : Step::NeedMore;
  }
  if (got < kRootHelloBytes) return Step::NeedMore;
  RootHello h;
  h.magic = net::getU64(bytes);
  h.version = net::getU32(bytes + 8);
  h.rank = net::getU32(bytes + 12);
  h.nranks = net::getU32(bytes + 16);
  Status st = net::SocketAddress::fromWire(bytes + kAddressOffset, &h.address);
  if (st.ok() && h.address.port() == 0) st = invalidArgument("%s", "port 0");
  if (!st.ok()) {
    *reason = Refusal::BadAddress;
    *text = strfmt("rank %u sent a listener address that cannot be used (%s)", h.rank,
                   st.message().c_str());
    fail(*reason, *text);
    return Step::Refuse;
  }
  if (h.nranks == 0 || h.nranks > kMaxRanks || h.rank >= h.nranks) {
    *reason = Refusal::RankOutOfRange;
    *text =
        strfmt("rank %u of nranks %u is out of range (rank must be below nranks, nranks 1 to %u)",
               h.rank, h.nranks, kMaxRanks);
    fail(*reason, *text);
    return Step::Refuse;
  }
  *hello = h;
  return Step::Complete;
}

bool Rendezvous::admit(const RootHello& hello, Refusal* reason, std::string* text) {
  if (failed_) {
    *reason = Refusal::RendezvousFailed;
    *text = failedNotice();
    return false;
  }
  if (expected_ > 0 && hello.nranks != expected_) {
    *reason = Refusal::WorldSizeMismatch;
    *text = strfmt(
        "rank %u says nranks %u, rank %u said nranks %u: the ranks disagree on the "
        "world size",
        hello.rank, hello.nranks, firstRank_, expected_);
    return fail(*reason, *text);
  }
  if (expected_ == 0) {
    expected_ = hello.nranks;
    firstRank_ = hello.rank;
    present_.assign(expected_, false);
    addresses_.assign(static_cast<size_t>(expected_) * net::SocketAddress::kWireBytes, 0);
  }
  if (present_[hello.rank]) {
    *reason = Refusal::DuplicateRank;
    *text = strfmt("rank %u of %u arrived twice: two processes were given the same rank",
                   hello.rank, expected_);
    return fail(*reason, *text);
  }
  present_[hello.rank] = true;
  hello.address.toWire(addresses_.data() + hello.rank * net::SocketAddress::kWireBytes);
  ++arrived_;
  return true;
}

void Rendezvous::timeOut(int64_t idleMs) {
  if (failed_) return;
  fail(Refusal::Timeout,
       strfmt("%u of %u ranks arrived and none for %lld ms (BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS); "
              "missing: rank %s",
              arrived_, expected_, static_cast<long long>(idleMs), missingRanks().c_str()));
}

std::string Rendezvous::failedNotice() const { return "the rendezvous failed: " + failureText_; }

std::string Rendezvous::missingRanks() const {
  constexpr int kNamed = 8;
  std::string out;
  int named = 0;
  uint32_t more = 0;
  for (uint32_t r = 0; r < expected_; ++r) {
    if (present_[r]) continue;
    if (named == kNamed) {
      ++more;
      continue;
    }
    out += (named++ ? ", " : "") + std::to_string(r);
  }
  if (more) out += strfmt(" and %u more", more);
  return out;
}

bool Rendezvous::fail(Refusal reason, std::string text) {
  if (!failed_) {
    failed_ = true;
    failure_ = reason;
    failureText_ = std::move(text);
  }
  return false;
}

void encodePeerHello(uint64_t magic, uint32_t rank, ConnKind kind, uint8_t* out) {
  net::putU64(out, magic);
  net::putU32(out + 8, rank);
  net::putU32(out + 12, static_cast<uint32_t>(kind));
}

Status decodePeerHello(const uint8_t* hello, uint64_t magic, uint32_t nranks, uint32_t* rank,
                       ConnKind* kind) {
  const uint64_t gotMagic = net::getU64(hello);
  const uint32_t from = net::getU32(hello + 8), k = net::getU32(hello + 12);
  if (gotMagic != magic) return invalidArgument("hello with %s", magics(gotMagic, magic).c_str());
  if (from >= nranks) return invalidArgument("hello from rank %u of %u", from, nranks);
  if (k != static_cast<uint32_t>(ConnKind::Ring) && k != static_cast<uint32_t>(ConnKind::P2P))
    return invalidArgument("hello from rank %u of connection kind %u", from, k);
  *rank = from;
  *kind = static_cast<ConnKind>(k);
  return Status::Ok();
}

void encodeMsgHeader(uint64_t tag, uint64_t bytes, uint8_t* out) {
  net::putU64(out, tag);
  net::putU64(out + 8, bytes);
}

Status decodeMsgHeader(const uint8_t* header, uint64_t* tag, uint64_t* bytes) {
  *tag = net::getU64(header);
  *bytes = net::getU64(header + 8);
  if (*bytes > kMaxMessageBytes)
    return internalError("message header (tag %llu) claims %llu bytes, above the %llu allowed",
                         static_cast<unsigned long long>(*tag),
                         static_cast<unsigned long long>(*bytes),
                         static_cast<unsigned long long>(kMaxMessageBytes));
  return Status::Ok();
}

Status checkRingHeader(const uint8_t* header, size_t expectBytes) {
  const uint64_t got = net::getU64(header);
  if (got != expectBytes)
    return internalError("previous rank sent %llu bytes per rank, this rank expects %zu",
                         static_cast<unsigned long long>(got), expectBytes);
  return Status::Ok();
}

}  // namespace braid::bootstrap
