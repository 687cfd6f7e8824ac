#include "core/plan/schedule_cache.h"

#include <functional>

namespace braid {
namespace {

size_t stepsOf(const ScheduleCache::Entry& e) { return e.schedule ? e.schedule->steps.size() : 0; }

}  // namespace

ScheduleCache::Key ScheduleCache::keyOf(const algos::CollArgs& a, bool inPlace) {
  const bool codec = a.codec != nullptr;
  return Key{
      a.coll,    a.count, a.typeSize,          a.chunkCount, a.root,
      a.average, inPlace, codec && a.feedback, a.codec,      codec ? static_cast<int>(a.type) : 0};
}

size_t ScheduleCache::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<size_t>()(k.count);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<size_t>(k.coll));
  mix(k.typeSize);
  mix(k.chunkCount);
  mix(static_cast<size_t>(k.root));
  mix(size_t{k.average} | size_t{k.inPlace} << 1 | size_t{k.feedback} << 2);
  mix(std::hash<const void*>()(k.codec));
  mix(static_cast<size_t>(k.type));
  return h;
}

const ScheduleCache::Entry* ScheduleCache::find(const algos::CollArgs& args) {
  auto it = index_.find(keyOf(args, args.inPlace));
  if (it == index_.end()) return nullptr;
  if (it->second != lru_.begin()) lru_.splice(lru_.begin(), lru_, it->second);
  return &lru_.front();
}

const ScheduleCache::Entry* ScheduleCache::sibling(const algos::CollArgs& args) const {
  auto it = index_.find(keyOf(args, !args.inPlace));
  return it == index_.end() ? nullptr : &*it->second;
}

const ScheduleCache::Entry& ScheduleCache::insert(Entry entry) {
  const Key key = keyOf(entry.args, entry.args.inPlace);
  steps_ += stepsOf(entry);
  lru_.push_front(std::move(entry));
  index_[key] = lru_.begin();
  while (lru_.size() > 1 && (lru_.size() > maxEntries_ || steps_ > maxSteps_)) {
    const Entry& last = lru_.back();
    steps_ -= stepsOf(last);
    index_.erase(keyOf(last.args, last.args.inPlace));
    lru_.pop_back();
  }
  return lru_.front();
}

}  // namespace braid
