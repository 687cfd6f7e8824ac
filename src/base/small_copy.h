// memcpy for the few bytes of a small message (a signature, an 8-byte AllReduce), inlined: a
// call into the C library's memcpy costs as much as copying them, and a small collective makes
// several such copies per call. Overlapping loads and stores of fixed sizes (no byte loop, no
// read or write outside [src, src + n) and [dst, dst + n)); up to 64 bytes every load comes
// before the first store, so overlapping buffers are fine (memmove). Larger: std::memcpy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace braid {

inline void smallCopy(void* dst, const void* src, size_t n) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  auto move = [&](auto word) {  // the first and the last sizeof(word) bytes, which may overlap
    using W = decltype(word);
    W head, tail;
    __builtin_memcpy(&head, s, sizeof(W));
    __builtin_memcpy(&tail, s + n - sizeof(W), sizeof(W));
    __builtin_memcpy(d, &head, sizeof(W));
    __builtin_memcpy(d + n - sizeof(W), &tail, sizeof(W));
  };
  struct Bytes16 {
    unsigned char b[16];
  };
  if (n >= 16) {
    if (n > 64) {
      std::memcpy(d, s, n);
      return;
    }
    if (n > 32) {  // 33-64: the first 32 and the last 32
      Bytes16 a, b, c, e;
      __builtin_memcpy(&a, s, 16);
      __builtin_memcpy(&b, s + 16, 16);
      __builtin_memcpy(&c, s + n - 32, 16);
      __builtin_memcpy(&e, s + n - 16, 16);
      __builtin_memcpy(d, &a, 16);
      __builtin_memcpy(d + 16, &b, 16);
      __builtin_memcpy(d + n - 32, &c, 16);
      __builtin_memcpy(d + n - 16, &e, 16);
      return;
    }
    move(Bytes16{});
  } else if (n >= 8) {
    move(uint64_t{});
  } else if (n >= 4) {
    move(uint32_t{});
  } else if (n >= 2) {
    move(uint16_t{});
  } else if (n == 1) {
    *d = *s;
  }
}

}  // namespace braid
