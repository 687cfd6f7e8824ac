// A first-in first-out queue over one growable circular array. Unlike std::deque, whose
// steady push_back/pop_front allocates and frees a block every few elements, it allocates only
// when it grows past its largest size so far, so queues that see a few operations per call
// cost no allocation per call. Elements move when it grows: hold no references across push_back.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace braid {

template <typename T>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
  const T& operator[](size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }

  void push_back(T value) {
    if (size_ == slots_.size()) grow();
    slots_[(head_ + size_) & (slots_.size() - 1)] = std::move(value);
    ++size_;
  }
  void pop_front() {
    slots_[head_] = T{};
    head_ = (head_ + 1) & (slots_.size() - 1);
    --size_;
  }
  void clear() {
    while (!empty()) pop_front();
  }

 private:
  // Capacity stays a power of two, so an index wraps with a mask.
  void grow() {
    std::vector<T> bigger(slots_.empty() ? 8 : slots_.size() * 2);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

}  // namespace braid
