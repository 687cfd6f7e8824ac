// Prices a whole operation on a topology: every rank's schedule run together in simulated time.
// estimateMicroseconds(schedule, ...) in cost_model.h prices one rank's dependency chains on one
// link type; it cannot see that a ring step waits for the predecessor's previous step, nor
// that flows leaving a host or a rack share its uplink. Comparing algorithms across a topology
// needs both: here a message starts once its send is ready and its links are free, arrives
// alpha + bytes x beta later (the link of the lowest level both ranks share), and occupies the
// pair's link and, for every group it leaves or enters on the way (host, rack, ...), that
// group's port in that direction for bytes x beta of the level above the group; a pair sends
// one message at a time. A receive completes when it is ready and its message has arrived (plus
// bytes x gamma to reduce).
// Where the machine, not the links, is the limit: ranks that outnumber cores share the cores'
// work (Topology::alphaScale), in total and as they go (a message also waits for its bytes' CPU
// work, LinkCost::cpuUsPerByte of its link, between hosts or inside one, on the simulated ranks'
// share of the cores, which messages in flight together take in turn); and the ranks of a host
// share its memory (Topology::memoryUsPerByte): every byte a step reads or writes in the call's
// buffers (a send's source, a receive's destination, both for a reduction) goes through memory
// in the share of them the last-level cache cannot hold (1 - cacheBytes / the host's buffer
// bytes), and the host's memory moves them at its rate. Large local calls are that bound: 4
// ranks on one host, 128 MiB, measured 47-49 ms where links and reductions alone priced 17-25
// ms.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

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

// The same for callers with more ranks than they can hold schedules for (braid-sim): rank r's
// schedule comes from `source`, built into `storage` or returned from elsewhere, and is reduced
// to what the simulation reads before the next is asked for.
using ScheduleSource = std::function<const Schedule&(int rank, Schedule& storage)>;

struct OperationOptions {
  bool signaturesOnDataEdges = false;  // as estimateMicroseconds
  // Simulate one block of ranks and let it stand for the others, where that is exact: the
  // smallest period P (a divisor of nranks) such that shifting every rank by P maps each level's
  // groups onto groups of that level, and the schedule of rank r + kP is rank r's with every
  // peer shifted by kP (checked for the second and the last block: step kinds, peers,
  // dependencies, and sizes within 8 bytes or 0.1%). Rank r + kP then does at every moment what
  // rank r does, and a message between two ranks is simulated as its image from rank r's block.
  // A port that a shift maps onto itself (the top of a tree of groups) carries the messages of
  // every block: each of them books it that many times over. Where the ranks are a power of
  // two, rank r XOR kP (P a power of two) may stand in for r + kP instead, checked for XOR by
  // each bit from P's up and by all of them: recursive halving and doubling's partners are
  // r XOR 2^i. Those blocks must leave no group where it is (XOR by less than a rack's ranks
  // keeps the rack), so every port is booked once per message. At a period, a shift is tried
  // before XOR. Without such a period, or with `symmetry` off, every rank is simulated.
  bool symmetry = false;
  // With `symmetry`: where no exact period is found, accept one whose schedules match in
  // everything but their dependencies (which local step a send or a step waits for), and let
  // the block's dependencies stand for the others'. A ring's member waits for the chunk its
  // position sends first, so a ring whose chunks come from an earlier stage in one order
  // (hierarchical AllReduce's top ring) differs from block to block only there; docs/scale.md
  // says how far this moves the price.
  bool approximateSymmetry = false;
  // Where above 0: the most steps the simulated ranks may have in all (a block's, or every
  // rank's); beyond it nothing is simulated, and the report says overBudget. The selector's
  // bound on what it simulates per candidate.
  size_t maxSteps = 0;
  // `source` may be called from a second thread while it runs on the caller's: every other
  // rank's schedule is then built there (where the machine has a second core).
  bool buildAhead = false;
};

// What a simulation found besides its time.
struct OperationReport {
  double us = 0;                   // estimateMicroseconds's result
  double linksUs = 0;              // without the memory bound
  int period = 0;                  // ranks simulated as one block (nranks: all of them)
  bool approximatePeriod = false;  // the block's dependencies stand for the others'
  bool xorBlocks = false;          // blocks a power of two apart by XOR, not by a shift
  bool overBudget = false;         // OperationOptions::maxSteps stopped it (us is infinity)
  size_t steps = 0;                // steps simulated
  // Per link level (Topology::link): the bytes of every message whose ranks share no lower
  // group, summed over all ranks (0: inside hosts, 1: between hosts of a rack, ...).
  std::vector<double> levelBytes;
  // The port busy longest: the group's (level, index) way out of it or into it, and for how
  // long; level -1 where no message left a group.
  int busiestLevel = -1;
  int busiestGroup = -1;
  bool busiestIn = false;
  double busiestUs = 0;
};

double simulateOperation(int nranks, const ScheduleSource& source, size_t typeSize,
                         const Topology& topo, const OperationOptions& options,
                         OperationReport* report);

}  // namespace braid::algos
