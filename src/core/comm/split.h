// Communicators made from an existing one. Both find their members, let one member create a
// fresh unique id and hand it to the others over the parent's bootstrap, and then initialise
// an ordinary communicator (createComm), so a child is as independent of its parent as any
// communicator: destroying the parent does not affect it.
#pragma once

#include <span>

#include "core/comm/comm_init.h"

namespace braid {

// ncclCommSplit. Collective over the parent (an allGather of (color, key)). `request` carries
// the config and failure hook; split fills in the id, rank and size. color < 0 (NOCOLOR):
// takes part and gets *out = nullptr.
Status splitComm(ncclComm* parent, int color, int key, InitRequest request, ncclComm** out);

// ncclCommShrink. Only the survivors (ranks not in `excluded`, validated by the caller) call
// it, and they use point-to-point bootstrap messages among themselves only, so it works after
// an excluded rank died. New ranks follow old-rank order.
Status shrinkComm(ncclComm* parent, std::span<const int> excluded, InitRequest request,
                  ncclComm** out);

// ncclCommGrow on an existing rank. Collective over the parent: exactly one rank (the root)
// passes the id it made with ncclCommGetUniqueId, the others null, and all the same nranks
// (an allGather checks both, naming the ranks that disagree); the root sends the id to the
// others over the parent's bootstrap, and each joins the grown communicator with the rank it
// had. New ranks call createComm with the id and their new rank themselves.
Status growComm(ncclComm* parent, int nranks, const ncclUniqueId* id, InitRequest request,
                ncclComm** out);

// A twin of `parent`: the same ranks in the same order, connections of its own (a host
// stream's priority class, core/async/engine.h), the parent's topology (no second probe), and
// (*out)->twinOf = parent. Collective over the parent; `tag` tells concurrent duplications
// apart. Always a blocking init.
Status duplicateComm(ncclComm* parent, uint64_t tag, ncclComm** out);

// NCCL_SHRINK_ABORT: fails the collectives in flight on the parent (it is left revoked) and
// waits for them to leave. The caller must not hold a CallScope on it.
void stopCallsInFlight(ncclComm* parent);

}  // namespace braid
