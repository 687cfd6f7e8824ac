// The topology as algorithms see it: which ranks share a host, which hosts share a rack, and so
// on up the switch levels, with the cost of a link at each level. src/topo builds it (cluster
// map, probe, hwloc); algorithms only read it, so they stay pure and testable in memory.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algos/cost_model.h"

namespace braid::algos {

struct Topology {
  // groupOf[L][rank]: the rank's group at level L. Level 0 is the host (ranks that share
  // memory), level 1 the rack, level 2 a pod or spine, ... Groups are numbered 0.. within each
  // level; two ranks in the same group at level L are in the same group at every level above.
  std::vector<std::vector<int>> groupOf;
  // link[L]: the cost of a message between two ranks whose lowest common group is at level L
  // (link[0]: inside a host; link[1]: between hosts of one rack; link[2]: between racks...).
  // link.size() == groupOf.size() + 1: the last entry is the top of the tree.
  std::vector<LinkCost> link;
  double gammaUsPerByte = 1e-4;
  // Ranks per core on the most crowded machine, when more than one: every message's alpha is
  // priced this many times over. A rank that outnumbers the cores waits for a turn on one before
  // it can take a message in or pass it on, so each round costs about that many turns.
  double alphaScale = 1.0;
  // The executor checks each call's signature with every peer (BRAID_CHECK_MISMATCH): a 16-byte
  // message each way, with the first data message to that peer, or alone to a peer that gets
  // no data. Priced only where ranks outnumber cores (see alphaScale), as CPU work.
  bool signatures = false;
  // A host's memory: the reads and writes of every rank on it share one memory system, which
  // moves 1 / memoryUsPerByte bytes a microsecond (0: not priced), and what a call's buffers on
  // the host hold beyond its last-level cache (cacheBytes) goes through it; see
  // operation_cost.h.
  double memoryUsPerByte = 0;
  double cacheBytes = 0;

  int nranks() const { return groupOf.empty() ? 0 : static_cast<int>(groupOf[0].size()); }
  int levels() const { return static_cast<int>(groupOf.size()); }
  // How many groups level L has: every rank alone below level 0, one group at the top.
  int groups(int level) const;
  // The level of the cheapest group two ranks share (0: same host; levels(): only the top).
  int commonLevel(int a, int b) const;
  // Every rank on its own host, one flat network: what algorithms assume without a map.
  static Topology flat(int nranks, LinkCost link = {});
  // Ranks grouped by host (host[r]); hosts grouped by rack (rack[h]) when given.
  static Topology hostsAndRacks(const std::vector<int>& hostOfRank,
                                const std::vector<int>& rackOfHost, LinkCost intraHost,
                                LinkCost intraRack, LinkCost interRack);
  std::string describe() const;  // one line per level, for logs and braid-topo
};

}  // namespace braid::algos
