// The topology probe across a communicator: without a cluster map, rank 0 decides which host
// pairs to measure (topo::probeRacks), the lowest rank of each host measures its pair over the
// connection the communicator already has (a short ping-pong, then a timed transfer), and rank
// 0 sends every rank the racks it found, so all ranks build the same topology.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "base/waiter.h"
#include "topo/racks.h"
#include "transport/transport.h"

namespace braid::topo {

// What the probe needs from the ranks it runs on (a communicator provides it): the connection
// to every other rank, and a side channel (the bootstrap) for rank 0's commands and the results.
class ProbeNetwork {
 public:
  virtual ~ProbeNetwork() = default;
  virtual int rank() const = 0;
  virtual int nranks() const = 0;
  // Posts one message on the connection to `peer` and gives its number among the operations
  // posted in that direction, which is what the endpoint's completion counter reaches when it is
  // done (the communicator numbers its executor's operations the same way).
  virtual Status post(int peer, bool send, void* data, size_t bytes, uint64_t* number) = 0;
  virtual transport::Endpoint& endpoint(int peer) = 0;
  virtual Status sendControl(int peer, uint64_t tag, const void* data, size_t bytes) = 0;
  virtual Status recvControl(int peer, uint64_t tag, void* data, size_t bytes) = 0;
  // What bounds each wait: the communicator's timeout (or a default) and its abort flag.
  virtual Waiter waiter() const = 0;
};

// Ok with *ran = false when there is nothing to probe (a map is set, BRAID_TOPO_PROBE is 0, or
// fewer than 3 hosts): the caller then builds the topology without racks.
// `underLoad`: after the pairs measured one at a time, rounds in which every host's leader sends
// to another at once (topo::racksUnderLoad) group the hosts, where they find racks; the pairs
// measured alone still price the links. An uplink that carries one pair at full rate but is
// shared by a rack's flows is seen only so. The rounds take up to another BRAID_TOPO_PROBE.
Status probeTopology(ProbeNetwork& net, const std::vector<std::string>& rankHosts,
                     RackClustering* racks, bool* ran, bool underLoad = false);

}  // namespace braid::topo
