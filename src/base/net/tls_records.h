// TLS 1.3 records (RFC 8446 section 5) with TLS_AES_128_GCM_SHA256, sealed and opened by Braid
// once OpenSSL's handshake has agreed the traffic secrets: what the kernel does for a kTLS
// socket, done in user space where the kernel has no TLS. OpenSSL's own record layer copies
// every byte once more each way than the transfer needs (a send's plaintext into its buffer
// before encrypting it there; a receive's plaintext out of its buffer after decrypting it
// there). Here a record is encrypted from the caller's buffers straight into the send queue and
// decrypted from the received bytes straight into the caller's buffers. The key schedule is
// OpenSSL's (HKDF), the cipher AES-128-GCM from OpenSSL or Intel's ipsec-mb (gcm.h); this file
// frames records, numbers them and updates keys (KeyUpdate, section 4.6.3).
//
// No sockets here: net::TlsSession (tls.h) moves the bytes, so tests and the fuzz target drive
// these classes from memory.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/net/gcm.h"

namespace braid::net::tls13 {

constexpr size_t kHeaderBytes = 5;
constexpr size_t kTagBytes = Aes128Gcm::kTagBytes;
constexpr size_t kMaxPlainBytes = 16384;                // a record's plaintext at most
constexpr size_t kMaxBodyBytes = kMaxPlainBytes + 256;  // a record's ciphertext at most (5.2)
constexpr size_t kMaxRecordBytes = kHeaderBytes + kMaxBodyBytes;
constexpr size_t kSecretBytes = 32;  // SHA-256's
constexpr uint8_t kAlert = 21, kHandshake = 22, kApplicationData = 23;
// Section 5.5: an AES-GCM key protects at most 2^24.5 full records; Braid's writer updates its
// key (a KeyUpdate) after 2^24 records of one key, 256 GiB at full records.
constexpr uint64_t kRecordsPerKey = uint64_t{1} << 24;
// The bytes a record of `plain` plaintext bytes takes on the wire.
constexpr size_t sealedBytes(size_t plain) { return kHeaderBytes + plain + 1 + kTagBytes; }

// An application traffic secret as OpenSSL's key log hands it over (the handshake's output).
struct Secret {
  uint8_t bytes[kSecretBytes] = {};
  bool set = false;
  ~Secret();
};
// One key-log line, "CLIENT_TRAFFIC_SECRET_0 <client random> <secret>" or the server's: stores
// the secret in `client` or `server`; other lines are ignored. False for a line of that label
// whose secret is not 32 bytes of hex.
bool parseKeyLogLine(const char* line, Secret* client, Secret* server);

// One direction's key: the AEAD key, the IV, the sequence number and the traffic secret (kept
// for KeyUpdate), all wiped on destruction.
class RecordKey {
 public:
  RecordKey() = default;
  ~RecordKey();
  RecordKey(const RecordKey&) = delete;
  RecordKey& operator=(const RecordKey&) = delete;
  // From an application traffic secret (section 7.3), to seal (encrypt) or to open, with the
  // given AES-GCM implementation.
  bool init(const uint8_t* secret, bool seal, GcmImpl impl, std::string* why);
  // The next generation (section 7.2): a new secret, key and IV, the sequence from 0.
  bool update(std::string* why);
  uint64_t sequence() const { return seq_; }

  // One record: begin with its 5-byte header (the additional data), then crypt() its body's
  // bytes in order, then finish: sealing writes the tag to `tag`; opening checks the tag at
  // `tag` and is false for a record that fails authentication.
  bool begin(const uint8_t* header);
  bool crypt(const uint8_t* in, uint8_t* out, size_t bytes);
  bool finish(uint8_t* tag);

 private:
  bool derive(bool seal, GcmImpl impl, std::string* why);
  Aes128Gcm gcm_;
  uint8_t secret_[kSecretBytes] = {};
  uint8_t iv_[Aes128Gcm::kNonceBytes] = {};
  uint64_t seq_ = 0;
};

// Where a receive's plaintext goes: the caller's buffers in order.
class IovSink {
 public:
  IovSink(const iovec* iov, size_t count) : iov_(iov), count_(count) {}
  size_t room() const;
  // The next contiguous space, at most `bytes` of it (*got: how much, 0 when full); the caller
  // fills it.
  uint8_t* next(size_t bytes, size_t* got);
  size_t written() const { return written_; }

 private:
  const iovec* iov_;
  size_t count_;
  size_t i_ = 0, off_ = 0, written_ = 0;
};

// Seals application data into records, putting a KeyUpdate first when the key is due one.
class RecordWriter {
 public:
  explicit RecordWriter(uint64_t recordsPerKey = kRecordsPerKey) : perKey_(recordsPerKey) {}
  bool init(const uint8_t* secret, std::string* why, GcmImpl impl = GcmImpl::OpenSsl) {
    return key_.init(secret, true, impl, why);
  }
  // The bytes the next record of `plain` bytes needs in the queue, a KeyUpdate included.
  size_t bytesFor(size_t plain) const;
  // Seals `plain` bytes (<= kMaxPlainBytes) of content type `type` into `out` (bytesFor(plain)
  // of room), taking the plaintext from `source`, called as source(key, out) to crypt its
  // pieces in order; returns the bytes written, 0 on failure (*why).
  template <class Source>
  size_t seal(size_t plain, uint8_t type, uint8_t* out, Source&& source, std::string* why) {
    size_t used = 0;
    if (key_.sequence() >= perKey_) {
      used = sealKeyUpdate(out, why);
      if (used == 0) return 0;
      out += used;
    }
    uint8_t* body = beginRecord(plain, out);
    if (!body || !source(key_, body) || !endRecord(type, body + plain, why)) {
      if (why->empty()) *why = "sealing a record failed";
      return 0;
    }
    return used + sealedBytes(plain);
  }
  uint64_t keyUpdates() const { return updates_; }

 private:
  size_t sealKeyUpdate(uint8_t* out, std::string* why);
  uint8_t* beginRecord(size_t plain, uint8_t* out);
  bool endRecord(uint8_t type, uint8_t* at, std::string* why);
  RecordKey key_;
  uint64_t perKey_;
  uint64_t updates_ = 0;
};

// Opens the records a connection receives: the session reads ciphertext into space() and calls
// received(); open() then moves plaintext into the caller's buffers, decrypting a record
// straight into them where they have room for it and holding the rest of a record here.
class RecordReader {
 public:
  RecordReader();
  bool init(const uint8_t* secret, std::string* why, GcmImpl impl = GcmImpl::OpenSsl) {
    return key_.init(secret, false, impl, why);
  }
  // Where to read ciphertext into (at least one whole record's room).
  uint8_t* space(size_t* bytes);
  void received(size_t bytes) { tail_ += bytes; }
  enum class Result { Moved, NeedBytes, Closed, Failed };
  // Moves plaintext into `sink` until it is full, `limit` bytes have moved, or no whole record
  // is left: Moved (some bytes went, see sink.written()), NeedBytes (nothing to move: read
  // more), Closed (the peer's close_notify, after any bytes before it), Failed (*why: the
  // connection is broken, and what this call wrote to the sink counts for nothing).
  Result open(IovSink& sink, size_t limit, std::string* why);
  // Plaintext is held, or a whole record waits: a receive would move bytes without reading.
  bool ready() const;
  uint64_t keyUpdates() const { return updates_; }

 private:
  bool wholeRecord() const;
  Result openRecord(IovSink& sink, std::string* why);
  bool control(uint8_t type, size_t bytes, std::string* why, bool* closed);
  RecordKey key_;
  std::unique_ptr<uint8_t[]> buf_;  // ciphertext received: [head_, tail_)
  size_t head_ = 0, tail_ = 0;
  std::unique_ptr<uint8_t[]> held_;  // plaintext decrypted, not yet delivered: [heldAt_, heldEnd_)
  size_t heldAt_ = 0, heldEnd_ = 0;
  bool closed_ = false;
  uint64_t updates_ = 0;
};

}  // namespace braid::net::tls13
