// AES-128-GCM for Braid's TLS record layer (tls_records.h), from one of two implementations:
// OpenSSL's (EVP), always there, or Intel's ipsec-mb (libIPSec_MB.so.1), loaded at run time
// where it is installed. On a CPU with VAES and VPCLMULQDQ ipsec-mb seals and opens records 2-3
// times as fast as OpenSSL 3.0, which has no VAES code (`build/release/bench/micro/tls_gcm_bench`),
// and where the cores both encrypt and move TCP's bytes that is CPU the transfer gets back.
// BRAID_TLS_GCM chooses: auto (ipsec-mb where it loads, else OpenSSL), ipsec-mb (an error where it
// does not load) or openssl. Both produce the same bytes: a record sealed by one opens under the
// other.
//
// ipsec-mb is reached through the function table of one process-wide manager (its "direct
// API"): those functions keep no state in the manager, so every thread shares it. The manager's
// layout is the header's, so a library of another major.minor version than the header Braid
// was built with is not used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace braid::net::tls13 {

enum class GcmImpl { OpenSsl, IpsecMb };
const char* gcmImplName(GcmImpl impl);

// The implementation BRAID_TLS_GCM asks for, on this machine: an error naming the variable for
// a value other than auto, ipsec-mb or openssl, or for ipsec-mb where it cannot be used (why).
Status chooseGcm(GcmImpl* impl);
// Whether ipsec-mb can be used here; if not, *why says what is missing.
bool ipsecMbGcmAvailable(std::string* why);

// One key in one direction: a record begins with its nonce and additional data, its bytes are
// crypted in pieces of any length in order, and it finishes with its tag (sealing writes it,
// opening checks it). The key material is wiped on destruction.
class Aes128Gcm {
 public:
  static constexpr size_t kKeyBytes = 16;
  static constexpr size_t kNonceBytes = 12;
  static constexpr size_t kTagBytes = 16;

  Aes128Gcm() = default;
  ~Aes128Gcm();
  Aes128Gcm(const Aes128Gcm&) = delete;
  Aes128Gcm& operator=(const Aes128Gcm&) = delete;

  // A new key; false where the implementation cannot be used (*why).
  bool init(GcmImpl impl, const uint8_t* key, bool seal, std::string* why);
  GcmImpl impl() const { return impl_; }
  bool sealing() const { return seal_; }
  bool begin(const uint8_t* nonce, const uint8_t* aad, size_t aadBytes);
  bool crypt(const uint8_t* in, uint8_t* out, size_t bytes);
  // Sealing: writes the tag. Opening: false when `tag` is not the record's.
  bool finish(uint8_t* tag);

 private:
  void release();
  GcmImpl impl_ = GcmImpl::OpenSsl;
  bool seal_ = true;
  void* evp_ = nullptr;  // EVP_CIPHER_CTX* (OpenSSL)
  struct Ipsec;          // ipsec-mb's manager, expanded key and running context
  Ipsec* ipsec_ = nullptr;
};

}  // namespace braid::net::tls13
