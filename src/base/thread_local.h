// Per-thread objects on the hot path, each reached through one thread_local pointer. Braid is
// compiled with TLS descriptors where the compiler has them (-mtls-dialect=gnu2,
// src/CMakeLists.txt): an access is an indirect call that returns the variable's offset, no
// __tls_get_addr (a global-dynamic access cost about a tenth of an 8-byte AllReduce when
// measured). Not initial-exec, although that is a few nanoseconds cheaper still: one
// initial-exec access anywhere makes the loader place the library's whole TLS block in the
// static block, and with the CUDA runtime linked in that block is 8 KiB aligned to 4 KiB, more
// than glibc keeps spare, so dlopen of libnccl.so.2 or libbraid.so (Python's ctypes, a torch
// extension) failed with "cannot allocate memory in static TLS block"
// (tests/abi/dlopen_client.c checks that both load). A global-dynamic owner, touched once per
// thread, frees the object when the thread exits.
#pragma once

#include <memory>

namespace braid {

template <typename T>
T& perThread() {
  static thread_local T* fast = nullptr;
  if (fast) return *fast;
  static thread_local std::unique_ptr<T> owner;
  owner = std::make_unique<T>();
  fast = owner.get();
  return *fast;
}

}  // namespace braid
