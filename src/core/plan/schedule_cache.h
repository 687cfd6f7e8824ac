// A communicator's cache of chosen algorithms and built schedules, one entry per call shape
// (collective, count, type size, root, placement, ...). Choosing prices every candidate with the
// cost model and building emits every step, about 10 us for a small AllReduce; a hit costs a
// hash lookup. Least recently used entries go first once the cache holds kMaxEntries, or more
// than kMaxSteps schedule steps in all (a 256 MiB ring AllReduce on 2 ranks is about a thousand;
// a step and its dependency lists take about 100 bytes, so the cache stays under ~26 MB).
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <unordered_map>

#include "algos/algorithm.h"
#include "algos/schedule.h"

namespace braid {

class ScheduleCache {
 public:
  static constexpr size_t kMaxEntries = 1024;
  static constexpr size_t kMaxSteps = size_t{1} << 18;

  struct Entry {
    algos::CollArgs args;
    const algos::Algorithm* algorithm = nullptr;
    double estimateUs = 0;
    std::shared_ptr<const algos::Schedule> schedule;
  };

  explicit ScheduleCache(size_t maxEntries = kMaxEntries, size_t maxSteps = kMaxSteps)
      : maxEntries_(maxEntries), maxSteps_(maxSteps) {}

  // The entry for a call of exactly this shape, now the most recently used; null if none.
  const Entry* find(const algos::CollArgs& args);
  // The entry for the same call in the other placement (in place for out of place, and the
  // reverse), or null. Its recency is left alone.
  const Entry* sibling(const algos::CollArgs& args) const;
  // Adds an entry for a shape not cached yet, then evicts beyond the limits (never the new one).
  const Entry& insert(Entry entry);

  size_t size() const { return lru_.size(); }
  void clear() {
    lru_.clear();
    index_.clear();
    steps_ = 0;
  }
  size_t steps() const { return steps_; }

 private:
  // What selection and building read from the arguments; rank, nranks, the size thresholds and
  // the topology are the communicator's own.
  struct Key {
    algos::Collective coll;
    size_t count, typeSize, chunkCount;
    int root;
    bool average, inPlace, feedback;
    const void* codec;
    int type;  // only with a codec: message sizes may depend on it
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  static Key keyOf(const algos::CollArgs& args, bool inPlace);

  size_t maxEntries_, maxSteps_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index_;
  size_t steps_ = 0;
};

}  // namespace braid
