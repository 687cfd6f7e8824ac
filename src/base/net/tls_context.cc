#include "base/net/tls_context.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "base/env.h"
#include "base/log.h"
#include "base/net/tls.h"
#include "base/variables.h"

namespace braid::net {

TlsContext::~TlsContext() {
  SSL_CTX_free(ctx);
  OPENSSL_cleanse(key, sizeof(key));
}

namespace {

constexpr char kIdentity[] = "braid-psk-1";
constexpr char kKeyLabel[] = "braid tls 1.3 external psk v1";
constexpr unsigned char kCipherId[2] = {0x13, 0x01};  // TLS_AES_128_GCM_SHA256

// What OpenSSL's record layer (BRAID_TLS_RECORDS=openssl) reads ahead per system call: several
// records, so that reads are not one per record.
constexpr size_t kReadBufferBytes = 256u << 10;

std::mutex gMu;
bool gApiSet = false;                    // setEncryption was called: BRAID_TLS_PSK is ignored
std::shared_ptr<const TlsContext> gApi;  // its setting (null: none)
std::string gEnvKey;                     // the BRAID_TLS_PSK value gEnv was made from
std::shared_ptr<const TlsContext> gEnv;

SSL_SESSION* makeSession(SSL* ssl, const TlsContext& c) {
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kCipherId);
  if (!cipher) return nullptr;
  SSL_SESSION* s = SSL_SESSION_new();
  if (!s || !SSL_SESSION_set1_master_key(s, c.key, sizeof(c.key)) ||
      !SSL_SESSION_set_cipher(s, cipher) || !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

const TlsContext& contextOf(SSL* ssl) {
  return *static_cast<const TlsContext*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
}

// Client: offer the key. After a HelloRetryRequest OpenSSL asks again with the digest the
// server chose; a key of another digest is then not offered.
int useSession(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* idLen,
               SSL_SESSION** sess) {
  SSL_SESSION* s = makeSession(ssl, contextOf(ssl));
  if (!s) return 0;
  if (md && md != SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s))) {
    SSL_SESSION_free(s);
    *sess = nullptr;
    *id = nullptr;
    *idLen = 0;
    return 1;
  }
  *sess = s;
  *id = reinterpret_cast<const unsigned char*>(kIdentity);
  *idLen = sizeof(kIdentity) - 1;
  return 1;
}

// Server: the key for Braid's identity; any other identity finds none, and with no
// certificate to fall back on the handshake fails.
int findSession(SSL* ssl, const unsigned char* id, size_t idLen, SSL_SESSION** sess) {
  *sess = nullptr;
  if (idLen != sizeof(kIdentity) - 1 || std::memcmp(id, kIdentity, idLen) != 0) return 1;
  *sess = makeSession(ssl, contextOf(ssl));
  return *sess ? 1 : 0;
}

// OpenSSL's key log: the traffic secrets of a session that runs Braid's record layer (the
// session's Secrets are its app data; other sessions have none and nothing is kept).
void keyLog(const SSL* ssl, const char* line) {
  auto* s = static_cast<TlsSession::Secrets*>(SSL_get_app_data(ssl));
  if (s && !tls13::parseKeyLogLine(line, &s->client, &s->server)) s->malformed = true;
}

Status makeContext(const char* psk, std::shared_ptr<const TlsContext>* out) {
  auto c = std::make_shared<TlsContext>();
  unsigned int len = 0;
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  bool ok = md && EVP_DigestInit_ex(md, EVP_sha256(), nullptr) &&
            EVP_DigestUpdate(md, kKeyLabel, sizeof(kKeyLabel)) &&
            EVP_DigestUpdate(md, psk, std::strlen(psk)) && EVP_DigestFinal_ex(md, c->key, &len);
  EVP_MD_CTX_free(md);
  if (!ok || len != sizeof(c->key)) return systemError("TLS: SHA-256: %s", sslErrorText().c_str());
  SSL_CTX* ctx = SSL_CTX_new(TLS_method());
  if (!ctx) return systemError("TLS: SSL_CTX_new: %s", sslErrorText().c_str());
  c->ctx = ctx;
  if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) ||
      !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) ||
      !SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256"))
    return systemError("TLS: OpenSSL refuses TLS 1.3 with AES-128-GCM: %s", sslErrorText().c_str());
  // No tickets (every connection starts from the key), kTLS where the kernel has it, and a
  // peer that closes without close_notify reads as closed (a lost rank is reported as such).
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_ENABLE_KTLS | SSL_OP_IGNORE_UNEXPECTED_EOF);
  // One record per SSL_write call, and a blocked record may be offered from another address
  // (the stage, TlsSession::sendv).
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, kReadBufferBytes);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_psk_use_session_callback(ctx, useSession);
  SSL_CTX_set_psk_find_session_callback(ctx, findSession);
  SSL_CTX_set_app_data(ctx, c.get());
  SSL_CTX_set_keylog_callback(ctx, keyLog);
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

std::string sslErrorText() {
  unsigned long e = ERR_peek_last_error();
  if (!e) return "no detail from OpenSSL";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

Status validatePsk(const char* psk, const char* what) {
  if (!psk) return invalidArgument("%s is null: PSK mode needs a key", what);
  const size_t n = strnlen(psk, kMaxPskBytes + 1);
  if (n == 0) return invalidArgument("%s is empty: PSK mode needs a key", what);
  if (n < kMinPskBytes)
    return invalidArgument("%s is %zu bytes: a pre-shared key needs at least %zu", what, n,
                           kMinPskBytes);
  if (n > kMaxPskBytes) return invalidArgument("%s is longer than %zu bytes", what, kMaxPskBytes);
  return Status::Ok();
}

Status setEncryption(int mode, const char* psk) {
  std::shared_ptr<const TlsContext> ctx;
  if (mode == kEncryptionPsk) {
    BRAID_TRY(validatePsk(psk, "psk"));
    BRAID_TRY(makeContext(psk, &ctx));
  } else if (mode != kEncryptionNone) {
    return invalidArgument("mode %d is neither NONE (%d) nor PSK (%d)", mode, kEncryptionNone,
                           kEncryptionPsk);
  }
  std::lock_guard<std::mutex> lock(gMu);
  gApiSet = true;
  gApi = std::move(ctx);
  BRAID_INFO(kNet, "TCP encryption: %s", gApi ? "TLS 1.3 with a pre-shared key" : "none");
  return Status::Ok();
}

Status currentTlsContext(std::shared_ptr<const TlsContext>* out) {
  std::lock_guard<std::mutex> lock(gMu);
  if (gApiSet) {
    *out = gApi;
    return Status::Ok();
  }
  const char* value = env::get(env::kBraidTlsPsk);
  if (!value) {
    out->reset();
    return Status::Ok();
  }
  if (!gEnv || gEnvKey != value) {
    BRAID_TRY(validatePsk(value, "BRAID_TLS_PSK"));
    BRAID_TRY(makeContext(value, &gEnv).withContext("BRAID_TLS_PSK"));
    gEnvKey = value;
  }
  *out = gEnv;
  return Status::Ok();
}

Status encryptionEnabled(bool* on) {
  std::shared_ptr<const TlsContext> ctx;
  BRAID_TRY(currentTlsContext(&ctx));
  *on = ctx != nullptr;
  return Status::Ok();
}

}  // namespace braid::net
