// The topology probe across a communicator: without a cluster map, rank 0 decides which host
// pairs to measure (topo::probeRacks), the lowest rank of each host measures its pair over the
// connection the communicator already has (a short ping-pong, then a timed transfer), and rank
// 0 sends every rank the racks it found, so all ranks build the same topology.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topo/racks.h"

struct ncclComm;

namespace braid {

// Ok with *ran = false when there is nothing to probe (a map is set, BRAID_TOPO_PROBE is 0, or
// fewer than 3 hosts): the caller then builds the topology without racks.
Status probeTopology(ncclComm& comm, const std::vector<std::string>& rankHosts, topo::RackClustering* racks,
                     bool* ran);

}  // namespace braid
