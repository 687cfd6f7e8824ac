// What every fuzz target shares: a reader over the input bytes that hands out fields and never
// reads past the end (a short input reads as zeros), the abort for a broken invariant, and the
// entry points (fuzz_common.cc), which pick one of the target's decoders by the first input byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

namespace braid::fuzz {

class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), left_(size) {}

  size_t left() const { return left_; }
  const uint8_t* data() const { return p_; }
  uint8_t u8() {
    uint8_t v = 0;
    take(&v, 1);
    return v;
  }
  uint16_t u16() {
    uint8_t b[2] = {};
    take(b, 2);
    return static_cast<uint16_t>(b[0] | b[1] << 8);
  }
  uint32_t u32() {
    uint8_t b[4] = {};
    take(b, 4);
    return b[0] | b[1] << 8 | b[2] << 16 | static_cast<uint32_t>(b[3]) << 24;
  }
  uint64_t u64() { return u32() | static_cast<uint64_t>(u32()) << 32; }
  // Up to n bytes (fewer at the end of the input).
  std::string_view bytes(size_t n) {
    n = n < left_ ? n : left_;
    std::string_view out(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    left_ -= n;
    return out;
  }
  // What is left.
  std::string_view rest() { return bytes(left_); }
  // Copies n bytes into out, zero-filling past the end of the input.
  void take(void* out, size_t n) {
    std::string_view b = bytes(n);
    if (!b.empty()) std::memcpy(out, b.data(), b.size());
    std::memset(static_cast<uint8_t*>(out) + b.size(), 0, n - b.size());
  }

 private:
  const uint8_t* p_;
  size_t left_;
};

// A property the code promises broke: print it and abort, so libFuzzer keeps the input.
[[noreturn]] inline void broken(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz invariant broken: %s %s\n", what, detail.c_str());
  std::abort();
}

// One way of reading the input; each target lists its own (decoders()). With several, the first
// input byte picks one (modulo their number); with one, every byte is its.
using Decoder = void (*)(Input& in);
std::span<const Decoder> decoders();

}  // namespace braid::fuzz
