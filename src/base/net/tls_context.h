// The process's TLS key and the OpenSSL context every session of that key shares: made by
// setEncryption or from BRAID_TLS_PSK (tls_context.cc), used by the sessions (tls.cc). Internal
// to base/net.
#pragma once

#include <openssl/ssl.h>

#include <string>

namespace braid::net {

class TlsContext {
 public:
  SSL_CTX* ctx = nullptr;
  unsigned char key[32] = {};  // the external PSK: SHA-256 of Braid's label and the user's key
  ~TlsContext();
};

// The text of OpenSSL's last error, for messages.
std::string sslErrorText();

}  // namespace braid::net
