#include "core/async/engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "base/futex.h"
#include "base/log.h"
#include "core/comm/comm.h"
#include "core/comm/split.h"

namespace braid::async {
struct Item;
}  // namespace braid::async

// The object behind braidHostStream_t. Its state is guarded by the engine's one mutex.
struct braidHostStream {
  int priority = 0;
  uint64_t queued = 0;     // items queued on the stream so far
  uint64_t completed = 0;  // of those, complete (items of a stream complete in order)
  braid::Status error;     // the first failure (sticky)
  std::shared_ptr<braid::async::Item> last;  // the item queued last: the next one waits for it
  struct Callback {
    uint64_t after;  // due once `completed` reaches it
    braidHostCallback_t fn;
    void* arg;
  };
  std::deque<Callback> callbacks;  // registered, not yet due, in order
  std::deque<Callback> due;        // due, not yet called, in order
  bool delivering = false;         // a thread is calling `due` (one at a time keeps the order)
  int pins = 0;                    // threads about to deliver: destroy waits for them
};

namespace braid::async {

// One call, or the host-stream calls of a group.
struct Item {
  std::vector<Plan> plans;
  std::vector<braidHostStream*> streams;     // distinct
  std::vector<struct Lane*> lanes;           // distinct; lanes[0]'s thread runs it
  std::vector<std::shared_ptr<Item>> after;  // items queued before it on its streams
  int cls = 0;           // its lanes' class (the highest when a group mixes classes)
  bool mixed = false;    // a group over lanes of several classes: it holds nothing back
  bool holding = false;  // counted in Lanes::activeAbove: lower lanes hold back
  bool done = false;
};

// A priority class of one communicator: the communicator that carries it, and its thread.
struct Lane {
  ncclComm* owner = nullptr;  // the user's communicator
  ncclComm* comm = nullptr;   // owner itself for class 0, else its twin
  int cls = 0;
  std::deque<std::shared_ptr<Item>> queue;  // queued, in call order; front: next (or running)
  std::thread thread;
  bool stop = false;
};

// What a communicator has once it has queued anything: ncclComm::async.
struct Lanes {
  std::unique_ptr<Lane> lane[kClasses];
  // activeAbove[c]: items of a class above c running now on this communicator. Lanes of class c
  // hold back their sends while it is nonzero (exec::Options::holdWhile).
  std::atomic<uint32_t> activeAbove[kClasses] = {};
};

namespace {

std::mutex mu;               // every stream, lane and item
std::condition_variable cv;  // anything above changed
std::unordered_set<braidHostStream*> live;
std::atomic<size_t> liveCount{0};

constexpr uint64_t kTagTwin = 0x7477696e00ull;  // "twin" + class

Lanes& lanesOf(ncclComm* owner) {
  if (!owner->async) owner->async = new Lanes;
  return *owner->async;
}

void runWorker(Lane* lane);

// Class `cls`'s lane of `owner`, carried by `comm` (owner itself, or its twin), made on first use.
Lane* laneSlot(ncclComm* owner, ncclComm* comm, int cls) {
  std::unique_ptr<Lane>& slot = lanesOf(owner).lane[cls];
  if (!slot) {
    slot = std::make_unique<Lane>();
    slot->owner = owner;
    slot->comm = comm;
    slot->cls = cls;
  }
  return slot.get();
}

// The lane that runs plans made on `comm` (a communicator or a twin), its thread started.
Lane* laneOfPlanComm(ncclComm* comm) {
  Lane* lane =
      comm->twinOf ? laneSlot(comm->twinOf, comm, comm->twinClass) : laneSlot(comm, comm, 0);
  if (!lane->thread.joinable()) lane->thread = std::thread(runWorker, lane);
  return lane;
}

bool runnable(const Lane* lane) {
  if (lane->queue.empty()) return false;
  const Item* item = lane->queue.front().get();
  if (item->lanes[0] != lane) return false;
  for (const Lane* l : item->lanes)
    if (l->queue.front().get() != item) return false;
  for (const auto& a : item->after)
    if (!a->done) return false;
  return true;
}

// From the moment an item of a class above 0 can run until it is complete, the lower lanes of
// its communicator hold back their sends: counted as soon as it is submitted when nothing is
// before it, so they stop before its thread is even scheduled (where ranks outnumber cores,
// that takes a while), and never earlier, since what is before it may need them.
void startHolding(Item& item) {
  if (item.holding || item.mixed || item.cls == 0) return;
  item.holding = true;
  Lanes& lanes = *item.lanes[0]->owner->async;
  for (int c = 0; c < item.cls; ++c) lanes.activeAbove[c].fetch_add(1);
}

void stopHolding(Item& item) {
  if (!item.holding) return;
  item.holding = false;
  Lanes& lanes = *item.lanes[0]->owner->async;
  for (int c = 0; c < item.cls; ++c)
    if (lanes.activeAbove[c].fetch_sub(1) == 1) futexWakeAll(&lanes.activeAbove[c]);
}

// Why an item must not run: a failed stream, an aborted or failed communicator.
Status refusal(const Item& item) {
  for (const braidHostStream* s : item.streams)
    if (!s->error.ok())
      return {s->error.code(), strfmt("not run: an earlier call on its host stream failed: %s",
                                      s->error.message().c_str())};
  for (const Lane* l : item.lanes) {
    for (ncclComm* c : {l->owner, l->comm}) {
      if (c->abortFlag.load()) return invalidUsage("not run: the communicator was aborted");
      if (c->revoked.load())
        return invalidUsage("not run: the communicator was revoked (ncclCommRevoke)");
      const ncclResult_t err = c->asyncError.load();
      if (err != ncclSuccess)
        return {err,
                strfmt("not run: the communicator failed earlier: %s", c->lastError().c_str())};
    }
  }
  return Status::Ok();
}

// Calls the stream's due callbacks in order, one thread at a time. `lock` holds mu.
void deliver(braidHostStream* s, std::unique_lock<std::mutex>& lock) {
  if (s->delivering) return;  // the thread delivering now takes ours too
  s->delivering = true;
  while (!s->due.empty()) {
    const braidHostStream::Callback cb = s->due.front();
    s->due.pop_front();
    const ncclResult_t code = s->error.code();
    const std::string text = s->error.message();
    lock.unlock();
    cb.fn(code, code == ncclSuccess ? nullptr : text.c_str(), cb.arg);
    lock.lock();
  }
  s->delivering = false;
  cv.notify_all();
}

// Marks `item` complete with `st`: off its lanes' queues, counted on its streams.
void finish(Item& item, const Status& st, std::unique_lock<std::mutex>& lock) {
  item.done = true;
  for (Lane* l : item.lanes) l->queue.pop_front();
  if (!st.ok()) {
    for (Lane* l : item.lanes) {
      l->owner->markFailed(st.code());
      l->owner->setLastError(st.message());
    }
  }
  for (braidHostStream* s : item.streams) {
    ++s->completed;
    if (!st.ok() && s->error.ok()) s->error = st;
    while (!s->callbacks.empty() && s->callbacks.front().after <= s->completed) {
      s->due.push_back(s->callbacks.front());
      s->callbacks.pop_front();
    }
  }
  item.plans.clear();  // the buffers are the caller's again; schedules go back to the cache
  item.after.clear();  // else every item would keep its predecessors alive
  cv.notify_all();
  for (braidHostStream* s : item.streams) ++s->pins;
  for (braidHostStream* s : item.streams) {
    deliver(s, lock);
    --s->pins;
  }
  cv.notify_all();
}

void runWorker(Lane* lane) {
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return runnable(lane) || (lane->stop && lane->queue.empty()); });
    if (!runnable(lane)) return;
    std::shared_ptr<Item> item = lane->queue.front();
    Status st = refusal(*item);
    if (st.ok()) {
      startHolding(*item);
      lock.unlock();
      exec::Options options;
      options.background = true;
      if (!item->mixed) options.holdWhile = &lane->owner->async->activeAbove[item->cls];
      st = execute(item->plans, options);
      lock.lock();
    }
    stopHolding(*item);
    if (!st.ok()) BRAID_WARN("host stream: %s", st.message().c_str());
    finish(*item, st, lock);
  }
}

}  // namespace

int priorityClass(int priority) { return std::clamp(-priority, 0, kClasses - 1); }

braidHostStream* hostStream(cudaStream_t stream) {
  if (!stream || liveCount.load(std::memory_order_relaxed) == 0) return nullptr;
  auto* s = reinterpret_cast<braidHostStream*>(stream);
  std::lock_guard<std::mutex> lock(mu);
  return live.count(s) ? s : nullptr;
}

Status createStream(int priority, braidHostStream** out) {
  auto s = std::make_unique<braidHostStream>();
  s->priority = -priorityClass(priority);
  std::lock_guard<std::mutex> lock(mu);
  live.insert(s.get());
  liveCount.store(live.size());
  *out = s.release();
  return Status::Ok();
}

Status checkStream(const braidHostStream* stream, const char* name) {
  if (!stream) return invalidArgument("%s is NULL", name);
  std::lock_guard<std::mutex> lock(mu);
  if (!live.count(const_cast<braidHostStream*>(stream)))
    return invalidArgument("%s %p is not a host stream (destroyed, or never created)", name,
                           static_cast<const void*>(stream));
  return Status::Ok();
}

int streamPriority(const braidHostStream* stream) { return stream->priority; }

Status destroyStream(braidHostStream* stream) {
  std::unique_lock<std::mutex> lock(mu);
  const uint64_t target = stream->queued;
  cv.wait(lock, [&] {
    return stream->completed >= target && stream->due.empty() && !stream->delivering &&
           stream->pins == 0;
  });
  // Every callback has run: each was due once the calls before it completed, all of them now.
  live.erase(stream);
  liveCount.store(live.size());
  const Status error = stream->error;
  delete stream;
  return error;
}

Status query(braidHostStream* stream) {
  std::lock_guard<std::mutex> lock(mu);
  if (!stream->error.ok()) return stream->error;
  if (stream->completed < stream->queued)
    return {ncclInProgress,
            strfmt("%llu of %llu calls on the host stream still queued or running",
                   static_cast<unsigned long long>(stream->queued - stream->completed),
                   static_cast<unsigned long long>(stream->queued))};
  return Status::Ok();
}

Status synchronize(braidHostStream* stream) {
  std::unique_lock<std::mutex> lock(mu);
  const uint64_t target = stream->queued;
  cv.wait(lock, [&] { return stream->completed >= target; });
  return stream->error;
}

Status addCallback(braidHostStream* stream, braidHostCallback_t callback, void* arg) {
  if (!callback) return invalidArgument("callback is NULL");
  std::unique_lock<std::mutex> lock(mu);
  const braidHostStream::Callback cb{stream->queued, callback, arg};
  if (stream->completed < stream->queued) {
    stream->callbacks.push_back(cb);
    return Status::Ok();
  }
  stream->due.push_back(cb);  // idle: now, after any callbacks still being delivered
  deliver(stream, lock);
  return Status::Ok();
}

Status laneFor(ncclComm* comm, const braidHostStream* stream, ncclComm** lane) {
  const int cls = priorityClass(stream->priority);
  *lane = comm;
  if (cls == 0) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(mu);
    Lanes& lanes = lanesOf(comm);
    if (lanes.lane[cls]) {
      *lane = lanes.lane[cls]->comm;
      return Status::Ok();
    }
  }
  // The class's first call on this communicator, on every rank: make its twin. Outside the lock:
  // it waits for the other ranks.
  ncclComm* twin = nullptr;
  BRAID_TRY(duplicateComm(comm, kTagTwin + static_cast<uint64_t>(cls), &twin)
                .withContext(strfmt("connecting priority class %d", cls)));
  twin->twinClass = cls;
  twin->timeoutMs = comm->timeoutMs;
  twin->compression.setDefaultPolicy(comm->compression.defaultPolicy());
  BRAID_INFO(kInit, "rank %d: priority class %d has its own connections now", comm->rank, cls);
  std::lock_guard<std::mutex> lock(mu);
  laneSlot(comm, twin, cls);
  *lane = twin;
  return Status::Ok();
}

Status submit(std::vector<Plan> plans) {
  auto item = std::make_shared<Item>();
  item->plans = std::move(plans);
  std::lock_guard<std::mutex> lock(mu);
  for (const Plan& p : item->plans) {
    braidHostStream* s = p.hostStream;
    if (std::find(item->streams.begin(), item->streams.end(), s) == item->streams.end())
      item->streams.push_back(s);
    Lane* l = laneOfPlanComm(p.comm);
    if (std::find(item->lanes.begin(), item->lanes.end(), l) == item->lanes.end())
      item->lanes.push_back(l);
  }
  item->cls = 0;
  for (const Lane* l : item->lanes) item->cls = std::max(item->cls, l->cls);
  for (const Lane* l : item->lanes) item->mixed |= l->cls != item->cls;
  for (braidHostStream* s : item->streams) {
    if (s->last && !s->last->done) item->after.push_back(s->last);
    s->last = item;
    ++s->queued;
  }
  for (Lane* l : item->lanes) l->queue.push_back(item);
  if (runnable(item->lanes[0])) startHolding(*item);
  cv.notify_all();
  return Status::Ok();
}

Status drain(ncclComm* comm) {
  if (!comm->async) return Status::Ok();
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] {
    for (const auto& l : comm->async->lane)
      if (l && !l->queue.empty()) return false;
    return true;
  });
  return Status::Ok();
}

void shutdown(ncclComm* comm) {
  if (!comm->async) return;
  Lanes* lanes = comm->async;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& l : lanes->lane) {
      if (!l) continue;
      l->stop = true;
      if (comm->abortFlag.load() && l->comm != comm) {
        l->comm->abortFlag.store(true);
        if (l->comm->bootstrap) l->comm->bootstrap->abort();
      }
    }
    cv.notify_all();
  }
  for (auto& l : lanes->lane)
    if (l && l->thread.joinable()) l->thread.join();
  for (auto& l : lanes->lane) {
    if (!l || l->comm == comm) continue;
    l->comm->magic = 0;
    delete l->comm;
  }
  comm->async = nullptr;
  delete lanes;
}

std::vector<ncclComm*> twins(ncclComm* comm) {
  std::vector<ncclComm*> out;
  if (!comm->async) return out;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& l : comm->async->lane)
    if (l && l->comm != comm) out.push_back(l->comm);
  return out;
}

}  // namespace braid::async
