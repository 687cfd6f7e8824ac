#include "base/net/tls_records.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cstring>

#include "base/strfmt.h"

namespace braid::net::tls13 {

namespace {

constexpr size_t kKeyBytes = Aes128Gcm::kKeyBytes;
constexpr size_t kIvBytes = Aes128Gcm::kNonceBytes;
// Ciphertext a receive holds: many records, so that a read system call takes several.
constexpr size_t kReceiveBufferBytes = 256u << 10;
static_assert(kReceiveBufferBytes >= 2 * kMaxRecordBytes, "a whole record must always fit");
// A record with fewer bytes of content than this is decrypted into the held buffer and copied
// out: control records (an alert, a KeyUpdate) never land in the caller's buffers, and a small
// message costs one copy of a few bytes.
constexpr size_t kDirectMinBytes = 64;
// A KeyUpdate message (section 4.6.3): type 24, length 1, update_not_requested.
constexpr uint8_t kKeyUpdateMessage[] = {24, 0, 0, 1, 0};

// HKDF-Expand-Label(secret, label, "", bytes) with SHA-256 (section 7.1).
bool expandLabel(const uint8_t* secret, const char* label, uint8_t* out, size_t bytes) {
  uint8_t info[2 + 1 + 255 + 1];
  const size_t labelBytes = std::strlen(label);
  size_t n = 0;
  info[n++] = static_cast<uint8_t>(bytes >> 8);
  info[n++] = static_cast<uint8_t>(bytes);
  info[n++] = static_cast<uint8_t>(6 + labelBytes);
  std::memcpy(info + n, "tls13 ", 6);
  n += 6;
  std::memcpy(info + n, label, labelBytes);
  n += labelBytes;
  info[n++] = 0;  // no context
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX* ctx = kdf ? EVP_KDF_CTX_new(kdf) : nullptr;
  int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
                               OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_construct_octet_string(
                                   OSSL_KDF_PARAM_KEY, const_cast<uint8_t*>(secret), kSecretBytes),
                               OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
                               OSSL_PARAM_construct_end()};
  const bool ok = ctx && EVP_KDF_derive(ctx, out, bytes, params) == 1;
  EVP_KDF_CTX_free(ctx);
  EVP_KDF_free(kdf);
  return ok;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Secret::~Secret() { OPENSSL_cleanse(bytes, sizeof(bytes)); }

bool parseKeyLogLine(const char* line, Secret* client, Secret* server) {
  Secret* to = nullptr;
  const char* rest = nullptr;
  for (auto [label, secret] : {std::pair{"CLIENT_TRAFFIC_SECRET_0 ", client},
                               std::pair{"SERVER_TRAFFIC_SECRET_0 ", server}}) {
    if (std::strncmp(line, label, std::strlen(label)) == 0) {
      to = secret;
      rest = line + std::strlen(label);
    }
  }
  if (!to) return true;           // another secret of the handshake: not needed here
  rest = std::strchr(rest, ' ');  // past the client random
  if (!rest) return false;
  ++rest;
  if (std::strlen(rest) != 2 * kSecretBytes) return false;
  for (size_t i = 0; i < kSecretBytes; ++i) {
    const int hi = hexValue(rest[2 * i]), lo = hexValue(rest[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    to->bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  to->set = true;
  return true;
}

RecordKey::~RecordKey() {
  OPENSSL_cleanse(secret_, sizeof(secret_));
  OPENSSL_cleanse(iv_, sizeof(iv_));
}

bool RecordKey::init(const uint8_t* secret, bool seal, GcmImpl impl, std::string* why) {
  std::memcpy(secret_, secret, kSecretBytes);
  return derive(seal, impl, why);
}

bool RecordKey::derive(bool seal, GcmImpl impl, std::string* why) {
  uint8_t key[kKeyBytes];
  seq_ = 0;
  if (!expandLabel(secret_, "key", key, kKeyBytes) || !expandLabel(secret_, "iv", iv_, kIvBytes)) {
    *why = "deriving the TLS record keys failed (OpenSSL's HKDF)";
    return false;
  }
  const bool ok = gcm_.init(impl, key, seal, why);
  OPENSSL_cleanse(key, sizeof(key));
  return ok;
}

bool RecordKey::update(std::string* why) {
  uint8_t next[kSecretBytes];
  const bool ok = expandLabel(secret_, "traffic upd", next, kSecretBytes);
  std::memcpy(secret_, next, kSecretBytes);
  OPENSSL_cleanse(next, sizeof(next));
  if (!ok) {
    *why = "deriving the next TLS traffic secret failed (OpenSSL's HKDF)";
    return false;
  }
  return derive(gcm_.sealing(), gcm_.impl(), why);
}

bool RecordKey::begin(const uint8_t* header) {
  // The nonce: the IV with the record's 64-bit sequence number XORed into its last 8 bytes.
  uint8_t nonce[kIvBytes];
  std::memcpy(nonce, iv_, kIvBytes);
  for (int i = 0; i < 8; ++i) nonce[kIvBytes - 1 - i] ^= static_cast<uint8_t>(seq_ >> (8 * i));
  return gcm_.begin(nonce, header, kHeaderBytes);
}

bool RecordKey::crypt(const uint8_t* in, uint8_t* out, size_t bytes) {
  return gcm_.crypt(in, out, bytes);
}

bool RecordKey::finish(uint8_t* tag) {
  const bool ok = gcm_.finish(tag);
  if (ok) ++seq_;
  return ok;
}

size_t IovSink::room() const {
  size_t n = 0;
  for (size_t k = i_; k < count_; ++k) n += iov_[k].iov_len - (k == i_ ? off_ : 0);
  return n;
}

uint8_t* IovSink::next(size_t bytes, size_t* got) {
  while (i_ < count_ && off_ == iov_[i_].iov_len) {
    ++i_;
    off_ = 0;
  }
  *got = 0;
  if (i_ >= count_ || bytes == 0) return nullptr;
  *got = std::min(bytes, iov_[i_].iov_len - off_);
  uint8_t* p = static_cast<uint8_t*>(iov_[i_].iov_base) + off_;
  off_ += *got;
  written_ += *got;
  return p;
}

size_t RecordWriter::bytesFor(size_t plain) const {
  const size_t update = key_.sequence() >= perKey_ ? sealedBytes(sizeof(kKeyUpdateMessage)) : 0;
  return update + sealedBytes(plain);
}

uint8_t* RecordWriter::beginRecord(size_t plain, uint8_t* out) {
  const size_t body = plain + 1 + kTagBytes;
  out[0] = kApplicationData;  // every record after the handshake says so outside (5.2)
  out[1] = 3;
  out[2] = 3;
  out[3] = static_cast<uint8_t>(body >> 8);
  out[4] = static_cast<uint8_t>(body);
  return key_.begin(out) ? out + kHeaderBytes : nullptr;
}

bool RecordWriter::endRecord(uint8_t type, uint8_t* at, std::string* why) {
  if (key_.crypt(&type, at, 1) && key_.finish(at + 1)) return true;
  *why = "sealing a TLS record failed (OpenSSL's AES-128-GCM)";
  return false;
}

size_t RecordWriter::sealKeyUpdate(uint8_t* out, std::string* why) {
  constexpr size_t kBytes = sizeof(kKeyUpdateMessage);
  uint8_t* body = beginRecord(kBytes, out);
  if (!body || !key_.crypt(kKeyUpdateMessage, body, kBytes) ||
      !endRecord(kHandshake, body + kBytes, why) || !key_.update(why)) {
    if (why->empty()) *why = "sealing a TLS KeyUpdate failed";
    return 0;
  }
  ++updates_;
  return sealedBytes(kBytes);
}

RecordReader::RecordReader()
    : buf_(new uint8_t[kReceiveBufferBytes]), held_(new uint8_t[kMaxPlainBytes]) {}

uint8_t* RecordReader::space(size_t* bytes) {
  if (head_ == tail_) {
    head_ = tail_ = 0;
  } else if (kReceiveBufferBytes - tail_ < kMaxRecordBytes) {
    // Less than a record's room left: the part of a record at head_ moves to the front.
    std::memmove(buf_.get(), buf_.get() + head_, tail_ - head_);
    tail_ -= head_;
    head_ = 0;
  }
  *bytes = kReceiveBufferBytes - tail_;
  return buf_.get() + tail_;
}

bool RecordReader::wholeRecord() const {
  if (tail_ - head_ < kHeaderBytes) return false;
  const uint8_t* h = buf_.get() + head_;
  const size_t body = static_cast<size_t>(h[3]) << 8 | h[4];
  // A header open() will refuse counts as whole: the receive then says why.
  return body > kMaxBodyBytes || tail_ - head_ >= kHeaderBytes + body;
}

bool RecordReader::ready() const { return heldAt_ < heldEnd_ || closed_ || wholeRecord(); }

RecordReader::Result RecordReader::open(IovSink& sink, size_t limit, std::string* why) {
  for (;;) {
    if (heldAt_ < heldEnd_) {
      size_t got = 0;
      uint8_t* dst =
          sink.next(std::min(heldEnd_ - heldAt_, limit - std::min(limit, sink.written())), &got);
      if (got == 0) return Result::Moved;
      std::memcpy(dst, held_.get() + heldAt_, got);
      heldAt_ += got;
      continue;
    }
    if (closed_) return sink.written() > 0 ? Result::Moved : Result::Closed;
    if (sink.written() >= limit || sink.room() == 0) return Result::Moved;
    const Result r = openRecord(sink, why);
    if (r == Result::Failed) return r;
    if (r == Result::NeedBytes) return sink.written() > 0 ? Result::Moved : Result::NeedBytes;
  }
}

// Opens the record at head_ if it is whole, decrypting as much of its content as the sink has
// room for into the sink and the rest into held_ (which is empty here).
RecordReader::Result RecordReader::openRecord(IovSink& sink, std::string* why) {
  if (tail_ - head_ < kHeaderBytes) return Result::NeedBytes;
  const uint8_t* h = buf_.get() + head_;
  const size_t body = static_cast<size_t>(h[3]) << 8 | h[4];
  if (h[0] != kApplicationData || h[1] != 3 || h[2] != 3) {
    *why =
        strfmt("a record with header %02x %02x %02x after the handshake (TLS 1.3 sends 17 03 03)",
               h[0], h[1], h[2]);
    return Result::Failed;
  }
  if (body < 1 + kTagBytes || body > kMaxBodyBytes) {
    *why = strfmt("a record of %zu bytes (TLS 1.3's are %zu to %zu)", body, 1 + kTagBytes,
                  kMaxBodyBytes);
    return Result::Failed;
  }
  if (tail_ - head_ < kHeaderBytes + body) return Result::NeedBytes;
  const uint8_t* in = h + kHeaderBytes;
  const size_t content = body - kTagBytes - 1;  // the content type follows the content
  if (content > kMaxPlainBytes) {
    *why = strfmt("a record of %zu bytes of content (TLS allows %zu)", content, kMaxPlainBytes);
    return Result::Failed;
  }
  if (!key_.begin(h)) {
    *why = "opening a TLS record failed (OpenSSL's AES-128-GCM)";
    return Result::Failed;
  }
  const size_t direct = content >= kDirectMinBytes ? std::min(content, sink.room()) : 0;
  bool ok = true;
  for (size_t done = 0; done < direct && ok;) {
    size_t got = 0;
    uint8_t* dst = sink.next(direct - done, &got);
    ok = key_.crypt(in + done, dst, got);
    done += got;
  }
  uint8_t type = 0;
  ok = ok && key_.crypt(in + direct, held_.get(), content - direct) &&
       key_.crypt(in + content, &type, 1);
  if (!ok || !key_.finish(const_cast<uint8_t*>(in + content + 1))) {
    *why = strfmt(
        "record %llu from the peer failed authentication: its bytes were changed on "
        "the way, or it was not sealed with this connection's key",
        static_cast<unsigned long long>(key_.sequence()));
    return Result::Failed;
  }
  head_ += kHeaderBytes + body;
  if (type == kApplicationData) {
    heldAt_ = 0;
    heldEnd_ = content - direct;
    return Result::Moved;
  }
  bool closed = false;
  if (direct > 0 || !control(type, content, why, &closed)) {
    if (why->empty()) *why = strfmt("a record of type %u with %zu bytes of content", type, content);
    return Result::Failed;
  }
  if (closed) closed_ = true;
  return Result::Moved;
}

// A record other than data, its content in held_: an alert or a KeyUpdate. False (*why) for
// anything else.
bool RecordReader::control(uint8_t type, size_t bytes, std::string* why, bool* closed) {
  const uint8_t* m = held_.get();
  if (type == kAlert && bytes == 2) {
    if (m[1] == 0) {  // close_notify
      *closed = true;
      return true;
    }
    *why = strfmt("the peer sent TLS alert %u (%s)", m[1], SSL_alert_desc_string_long(m[1]));
    return false;
  }
  if (type == kHandshake && bytes == sizeof(kKeyUpdateMessage) &&
      std::memcmp(m, kKeyUpdateMessage, bytes - 1) == 0) {
    if (m[bytes - 1] != 0) {
      *why = "the peer's KeyUpdate asks for one back, which no Braid process sends";
      return false;
    }
    if (!key_.update(why)) return false;
    ++updates_;
    return true;
  }
  if (type == 0) {
    *why = "a padded record, which no Braid process sends";
    return false;
  }
  *why = strfmt("a record of content type %u with %zu bytes after the handshake", type, bytes);
  return false;
}

}  // namespace braid::net::tls13
