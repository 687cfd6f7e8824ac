// A page-aligned memory region for rings: either a named POSIX shared-memory segment (between
// processes) or anonymous memory (between threads). Unmaps on destruction, and unlinks a name
// it still owns, so an error path never leaves a file in /dev/shm.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace braid::transport {

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Creates /dev/shm/<name> (name without the leading '/'), zero-filled; fails if it exists.
  static Status create(const std::string& name, size_t bytes, Segment* out);
  // Maps an existing segment; `bytes` must equal its size (guards against a forged blob).
  static Status open(const std::string& name, size_t bytes, Segment* out);
  // Anonymous, zero-filled, for rings inside one process.
  static Status anonymous(size_t bytes, Segment* out);

  // Removes the name (mapping stays valid). Idempotent; a name already gone is not an error.
  void unlink();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void release();

  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;  // non-empty while this object still has to unlink it
};

// A name unique on this host and hard to guess: braid-<pid>-<counter>-<random>.
std::string uniqueSegmentName(const char* kind);

}  // namespace braid::transport
