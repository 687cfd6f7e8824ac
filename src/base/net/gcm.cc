#include "base/net/gcm.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstring>
#include <mutex>
#include <new>

#include "base/env.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "base/variables.h"

#if BRAID_HAVE_IPSEC_MB
// The header aligns its key structure to 64 bytes only where LINUX is defined (its own build
// defines it); the library's code relies on that alignment.
#ifndef LINUX
#define LINUX 1
#endif
#include <intel-ipsec-mb.h>
#endif

namespace braid::net::tls13 {

namespace {

const EVP_CIPHER* opensslAes128Gcm() {
  // Fetched once: an implicit fetch per key would look the algorithm up by name each time.
  static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);
  return cipher;
}

#if BRAID_HAVE_IPSEC_MB
// The process's ipsec-mb manager, or null with the reason: loaded once, never unloaded.
struct IpsecMb {
  IMB_MGR* mgr = nullptr;
  std::string why;
};

const IpsecMb& ipsecMb() {
  static const IpsecMb loaded = [] {
    IpsecMb r;
    void* lib = dlopen("libIPSec_MB.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = dlerror();
      r.why = strfmt("libIPSec_MB.so.1 does not load (%s)", err ? err : "not found");
      return r;
    }
    auto version = reinterpret_cast<unsigned (*)()>(dlsym(lib, "imb_get_version"));
    auto alloc = reinterpret_cast<IMB_MGR* (*)(uint64_t)>(dlsym(lib, "alloc_mb_mgr"));
    auto initAuto = reinterpret_cast<void (*)(IMB_MGR*, IMB_ARCH*)>(dlsym(lib, "init_mb_mgr_auto"));
    if (!version || !alloc || !initAuto) {
      r.why = "libIPSec_MB.so.1 lacks imb_get_version, alloc_mb_mgr or init_mb_mgr_auto";
      return r;
    }
    const unsigned v = version();
    if ((v >> 8) != (IMB_VERSION_NUM >> 8)) {
      r.why =
          strfmt("libIPSec_MB.so.1 is version %u.%u, Braid was built with %u.%u's header", v >> 16,
                 (v >> 8) & 0xff, IMB_VERSION_NUM >> 16, (IMB_VERSION_NUM >> 8) & 0xff);
      return r;
    }
    IMB_MGR* mgr = alloc(0);
    if (!mgr) {
      r.why = "ipsec-mb's alloc_mb_mgr failed";
      return r;
    }
    IMB_ARCH arch = IMB_ARCH_NONE;
    initAuto(mgr, &arch);
    if (arch == IMB_ARCH_NONE || arch == IMB_ARCH_NOAESNI) {
      r.why = "this CPU has no AES-NI, which ipsec-mb's GCM is used for";
      return r;  // the manager stays allocated: one, for the process's life
    }
    r.mgr = mgr;
    return r;
  }();
  return loaded;
}
#endif

}  // namespace

const char* gcmImplName(GcmImpl impl) { return impl == GcmImpl::IpsecMb ? "ipsec-mb" : "openssl"; }

bool ipsecMbGcmAvailable(std::string* why) {
#if BRAID_HAVE_IPSEC_MB
  const IpsecMb& lib = ipsecMb();
  if (!lib.mgr) *why = lib.why;
  return lib.mgr != nullptr;
#else
  *why = "Braid was built without ipsec-mb's header (Debian's libipsec-mb-dev)";
  return false;
#endif
}

Status chooseGcm(GcmImpl* impl) {
  const char* v = env::get(env::kBraidTlsGcm);
  const std::string value = v && *v ? v : "auto";
  std::string why;
  if (value == "openssl") {
    *impl = GcmImpl::OpenSsl;
  } else if (value == "auto") {
    *impl = ipsecMbGcmAvailable(&why) ? GcmImpl::IpsecMb : GcmImpl::OpenSsl;
  } else if (value == "ipsec-mb") {
    if (!ipsecMbGcmAvailable(&why))
      return invalidArgument("BRAID_TLS_GCM is 'ipsec-mb', which cannot be used here: %s",
                             why.c_str());
    *impl = GcmImpl::IpsecMb;
  } else {
    return invalidArgument("BRAID_TLS_GCM is '%s': auto, ipsec-mb or openssl", value.c_str());
  }
  static std::once_flag logged;
  std::call_once(logged, [&] {
    BRAID_INFO(kNet, "TLS records: AES-128-GCM by %s%s%s", gcmImplName(*impl),
               why.empty() ? "" : "; ipsec-mb not used: ", why.c_str());
  });
  return Status::Ok();
}

#if BRAID_HAVE_IPSEC_MB
struct Aes128Gcm::Ipsec {
  gcm_key_data key;  // 64-byte aligned: operator new honours the type's alignment
  gcm_context_data ctx;
  const IMB_MGR* mgr;  // the process's (ipsecMb()), whose function table the calls go through
};
#else
struct Aes128Gcm::Ipsec {};
#endif

Aes128Gcm::~Aes128Gcm() { release(); }

void Aes128Gcm::release() {
  EVP_CIPHER_CTX_free(static_cast<EVP_CIPHER_CTX*>(evp_));
  evp_ = nullptr;
  if (ipsec_) {
    OPENSSL_cleanse(ipsec_, sizeof(*ipsec_));
    delete ipsec_;
    ipsec_ = nullptr;
  }
}

bool Aes128Gcm::init(GcmImpl impl, const uint8_t* key, bool seal, std::string* why) {
  release();
  impl_ = impl;
  seal_ = seal;
  if (impl == GcmImpl::IpsecMb) {
#if BRAID_HAVE_IPSEC_MB
    if (!ipsecMbGcmAvailable(why)) return false;
    ipsec_ = new (std::nothrow) Ipsec();
    if (!ipsec_) {
      *why = "no memory for an AES-GCM key";
      return false;
    }
    ipsec_->mgr = ipsecMb().mgr;
    IMB_AES128_GCM_PRE(ipsec_->mgr, key, &ipsec_->key);
    return true;
#else
    return ipsecMbGcmAvailable(why);
#endif
  }
  evp_ = EVP_CIPHER_CTX_new();
  if (!evp_ || !opensslAes128Gcm()) {
    *why = "OpenSSL has no AES-128-GCM";
    return false;
  }
  if (EVP_CipherInit_ex(static_cast<EVP_CIPHER_CTX*>(evp_), opensslAes128Gcm(), nullptr, key,
                        nullptr, seal ? 1 : 0) != 1) {
    *why = "OpenSSL's AES-128-GCM refused the key";
    return false;
  }
  return true;
}

bool Aes128Gcm::begin(const uint8_t* nonce, const uint8_t* aad, size_t aadBytes) {
#if BRAID_HAVE_IPSEC_MB
  if (ipsec_) {
    IMB_AES128_GCM_INIT(ipsec_->mgr, &ipsec_->key, &ipsec_->ctx, nonce, aad, aadBytes);
    return true;
  }
#endif
  auto* ctx = static_cast<EVP_CIPHER_CTX*>(evp_);
  int outl = 0;
  return ctx && EVP_CipherInit_ex(ctx, nullptr, nullptr, nullptr, nonce, -1) == 1 &&
         EVP_CipherUpdate(ctx, nullptr, &outl, aad, static_cast<int>(aadBytes)) == 1;
}

bool Aes128Gcm::crypt(const uint8_t* in, uint8_t* out, size_t bytes) {
  if (bytes == 0) return true;
#if BRAID_HAVE_IPSEC_MB
  if (ipsec_) {
    if (seal_)
      IMB_AES128_GCM_ENC_UPDATE(ipsec_->mgr, &ipsec_->key, &ipsec_->ctx, out, in, bytes);
    else
      IMB_AES128_GCM_DEC_UPDATE(ipsec_->mgr, &ipsec_->key, &ipsec_->ctx, out, in, bytes);
    return true;
  }
#endif
  int outl = 0;
  return evp_ &&
         EVP_CipherUpdate(static_cast<EVP_CIPHER_CTX*>(evp_), out, &outl, in,
                          static_cast<int>(bytes)) == 1 &&
         static_cast<size_t>(outl) == bytes;
}

bool Aes128Gcm::finish(uint8_t* tag) {
#if BRAID_HAVE_IPSEC_MB
  if (ipsec_) {
    if (seal_) {
      IMB_AES128_GCM_ENC_FINALIZE(ipsec_->mgr, &ipsec_->key, &ipsec_->ctx, tag, kTagBytes);
      return true;
    }
    uint8_t expected[kTagBytes];
    IMB_AES128_GCM_DEC_FINALIZE(ipsec_->mgr, &ipsec_->key, &ipsec_->ctx, expected, kTagBytes);
    return CRYPTO_memcmp(expected, tag, kTagBytes) == 0;
  }
#endif
  auto* ctx = static_cast<EVP_CIPHER_CTX*>(evp_);
  if (!ctx) return false;
  uint8_t none[16];
  int outl = 0;
  return seal_ ? EVP_CipherFinal_ex(ctx, none, &outl) == 1 &&
                     EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, kTagBytes, tag) == 1
               : EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, kTagBytes, tag) == 1 &&
                     EVP_CipherFinal_ex(ctx, none, &outl) == 1;
}

}  // namespace braid::net::tls13
