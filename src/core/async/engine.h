// Asynchronous host collectives: host streams (include/braid/braid.h) and the progress threads
// that run what is queued on them. docs/architecture.md ("Host streams") explains the design.
//
// What is queued is an Item: the plans of one call, or of the host-stream calls of a group. An
// item runs once it is first in the queue of every lane it uses and the items queued before it
// on each of its streams are complete. A lane is a communicator that runs one priority class's
// calls: the communicator itself for the normal class, a twin with connections of its own for
// each higher class, made at that class's first call (every rank makes that call, so every rank
// makes the twin there). Each lane has one progress thread that runs its items one at a time
// with the ordinary executor, so the k-th call of a lane meets the k-th call of every peer's,
// as blocking calls do; lanes, and so communicators and priority classes, run concurrently.
// While a lane of a higher class runs an item, the lower lanes of its communicator move nothing
// (exec::Options::holdWhile): their runs sleep, their chunks wait where they are.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "braid/braid.h"
#include "core/exec/executor.h"

struct ncclComm;

namespace braid::async {

// Priority classes: 0 normal, then more urgent (braidHostStreamCreate's priorities 0 .. -3).
constexpr int kClasses = 4;
int priorityClass(int priority);

// The stream behind `stream` when it is a live host stream, else null. One relaxed load when
// the process has none, so calls on CUDA streams (or none) pay nothing else.
braidHostStream* hostStream(cudaStream_t stream);

Status createStream(int priority, braidHostStream** out);
// `name`: the argument's name in error messages.
Status checkStream(const braidHostStream* stream, const char* name);
int streamPriority(const braidHostStream* stream);
// Waits for the stream's work, then frees it.
Status destroyStream(braidHostStream* stream);
// Ok when all queued work is complete, ncclInProgress while some is not, else the stream's error.
Status query(braidHostStream* stream);
Status synchronize(braidHostStream* stream);
Status addCallback(braidHostStream* stream, braidHostCallback_t callback, void* arg);

// The communicator that carries calls of `stream`'s class on `comm` (comm itself for class 0).
// A class's first call makes it: collective over comm's ranks, on the calling thread.
Status laneFor(ncclComm* comm, const braidHostStream* stream, ncclComm** lane);

// Queues plans (each with Plan::hostStream set, made on its lane) as one item; returns at once.
Status submit(std::vector<Plan> plans);

// Until everything queued on comm (every lane of it) has run: a blocking call on comm, or
// ncclCommFinalize, waits here first. Cheap when nothing was ever queued.
Status drain(ncclComm* comm);

// Destroy and abort (after comm->abortFlag is set): ends comm's progress threads and frees its
// twins. Queued items run first, or fail after an abort.
void shutdown(ncclComm* comm);

// Settings made through the API after init (timeout, compression policy) reach the twins too.
// The twins comm has made so far.
std::vector<ncclComm*> twins(ncclComm* comm);

}  // namespace braid::async
