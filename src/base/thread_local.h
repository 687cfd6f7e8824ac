// Per-thread objects on the hot path. A global-dynamic thread_local in a shared library costs a
// __tls_get_addr call on every access (about a tenth of an 8-byte AllReduce when measured), so
// each object is reached through one initial-exec pointer: 8 bytes of static TLS, which even a
// dlopen'ed libnccl.so.2 can have. A global-dynamic owner, touched once per thread, frees the
// object when the thread exits.
#pragma once

#include <memory>

namespace braid {

template <typename T>
T& perThread() {
  static thread_local T* fast __attribute__((tls_model("initial-exec"))) = nullptr;
  if (fast) return *fast;
  static thread_local std::unique_ptr<T> owner;
  owner = std::make_unique<T>();
  fast = owner.get();
  return *fast;
}

}  // namespace braid
