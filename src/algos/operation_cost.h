// Prices a whole operation on a topology: every rank's schedule run together in simulated time.
// estimateMicroseconds(schedule, ...) in cost_model.h prices one rank's dependency chains on one
// link type; it cannot see that a ring step waits for the predecessor's previous step, nor
// that flows leaving a host or a rack share its uplink. Comparing algorithms across a topology
// needs both: here a message starts once its send is ready and its links are free, arrives
// alpha + bytes x beta later (the link of the lowest level both ranks share), and occupies the
// pair's link and, for every group it leaves or enters on the way (host, rack, ...), that
// group's port in that direction for bytes x beta of the level above the group. A receive
// completes when it is ready and its message has arrived (plus bytes x gamma to reduce).
// Two bounds from below where the machine, not the links, is the limit: ranks that outnumber
// cores share the cores' work (Topology::alphaScale), and the ranks of a host share its memory
// (Topology::memoryUsPerByte): every byte a step reads or writes in the call's buffers (a send's
// source, a receive's destination, both for a reduction) goes through memory in the share of
// them the last-level cache cannot hold (1 - cacheBytes / the host's buffer bytes), and the
// host's memory moves them at its rate. Large local calls are that bound: 4 ranks on one host,
// 128 MiB, measured 47-49 ms where links and reductions alone priced 17-25 ms.
#pragma once

#include <cstddef>
#include <span>

#include "algos/schedule.h"
#include "algos/topology.h"

namespace braid::algos {

// `schedules[r]` is rank r's schedule of one operation (the topology's nranks of them).
// Returns the time the last step of any rank completes, in microseconds; infinity when the
// schedules cannot complete (a message without its match, or a cycle). `signaturesOnDataEdges`:
// the mismatch check's signatures go only to the peers each schedule talks to (a collective
// that needs every input, algos::needsEveryInput), not to every rank.
// `linksUs`, when given: the price without the memory bound (links, reductions and cores),
// which tells apart algorithms that host memory alone would price alike.
double estimateMicroseconds(std::span<const Schedule> schedules, size_t typeSize,
                            const Topology& topo, bool signaturesOnDataEdges = false,
                            double* linksUs = nullptr);

}  // namespace braid::algos
