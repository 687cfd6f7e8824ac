#include "transport/shm/segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/log.h"

namespace braid::transport {
namespace {

size_t pageRound(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// Segments hold rings, whose every page is used sooner or later: MAP_POPULATE maps them all now,
// at init, instead of one page fault at a time on the first messages through each part of the
// ring (a 16 KiB AllReduce on 2 ranks took 11-14 us instead of 2-4 for its first 50 calls after
// a sweep that had gone by reference, never touching the ring).
Status mapFd(int fd, size_t bytes, const std::string& what, void** out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED)
    return systemError("mmap of %s (%zu bytes) failed: %s", what.c_str(), bytes,
                       std::strerror(errno));
  *out = p;
  return Status::Ok();
}

}  // namespace

Segment::~Segment() { release(); }

Segment::Segment(Segment&& other) noexcept { *this = std::move(other); }

Segment& Segment::operator=(Segment&& other) noexcept {
  if (this != &other) {
    release();
    data_ = other.data_;
    size_ = other.size_;
    name_ = std::move(other.name_);
    other.data_ = nullptr;
    other.size_ = 0;
    other.name_.clear();
  }
  return *this;
}

void Segment::release() {
  unlink();
  if (data_) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

void Segment::unlink() {
  if (name_.empty()) return;
  if (shm_unlink(("/" + name_).c_str()) != 0 && errno != ENOENT)
    BRAID_WARN("shm_unlink(/dev/shm/%s) failed: %s", name_.c_str(), std::strerror(errno));
  name_.clear();
}

Status Segment::create(const std::string& name, size_t bytes, Segment* out) {
  bytes = pageRound(bytes);
  const std::string path = "/" + name;
  int fd = shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0)
    return systemError("shm_open(/dev/shm/%s) failed: %s", name.c_str(), std::strerror(errno));
  Segment seg;
  seg.name_ = name;  // from here on, seg's destructor unlinks on any failure
  // posix_fallocate, unlike ftruncate, reserves the pages now: a full /dev/shm fails here with a
  // message instead of killing the process with SIGBUS on first touch.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    return systemError("cannot reserve %zu bytes in /dev/shm for %s: %s (is /dev/shm full?)", bytes,
                       name.c_str(), std::strerror(rc));
  }
  Status st = mapFd(fd, bytes, "/dev/shm/" + name, &seg.data_);
  close(fd);
  BRAID_TRY(st);
  seg.size_ = bytes;
  *out = std::move(seg);
  return Status::Ok();
}

Status Segment::open(const std::string& name, size_t bytes, Segment* out) {
  bytes = pageRound(bytes);
  int fd = shm_open(("/" + name).c_str(), O_RDWR, 0);
  if (fd < 0)
    return systemError("shm_open(/dev/shm/%s) failed: %s", name.c_str(), std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(fd);
    return systemError("/dev/shm/%s has %lld bytes, expected %zu", name.c_str(),
                       static_cast<long long>(st.st_size), bytes);
  }
  Segment seg;
  Status s = mapFd(fd, bytes, "/dev/shm/" + name, &seg.data_);
  close(fd);
  BRAID_TRY(s);
  seg.size_ = bytes;
  *out = std::move(seg);
  return Status::Ok();
}

Status Segment::anonymous(size_t bytes, Segment* out) {
  bytes = pageRound(bytes);
  // Not populated: between threads, pages are committed as the rings first reach them (shared
  // segments are committed anyway, by posix_fallocate, so mapping them whole costs no memory).
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return systemError("mmap of %zu anonymous bytes failed: %s", bytes, std::strerror(errno));
  Segment seg;
  seg.data_ = p;
  seg.size_ = bytes;
  *out = std::move(seg);
  return Status::Ok();
}

std::string uniqueSegmentName(const char* kind) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = [] {
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v))
      v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return v;
  }();
  return strfmt("braid-%s-%d-%llu-%016llx", kind, static_cast<int>(getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)),
                static_cast<unsigned long long>(salt));
}

}  // namespace braid::transport
