// What a message over one link costs, as the cost model prices it (algos/cost_model.h): each
// transport reports its own (Transport::linkCost), the cluster map and the rack probe measure
// the links between hosts (src/topo).
#pragma once

namespace braid::transport {

struct LinkCost {
  double alphaUs = 1.0;         // per message
  double betaUsPerByte = 2e-4;  // 1 / bandwidth (5 GB/s)
  // A rate-limited link's token bucket (tc tbf, a cloud NIC's shaper): after idling it passes
  // up to this many bytes at once, then its rate. 0 for a plain link.
  double burstBytes = 0;
  // CPU that a byte between two hosts costs both ends together (the kernel's network path, the
  // copies in and out), in microseconds: measured by the rack probe or declared by a cluster map.
  // Priced only where ranks outnumber cores: the cores' total work bounds the time, and messages
  // in flight together wait for the cores (algos/operation_cost.h). 0: not measured.
  double cpuUsPerByte = 0;
};

}  // namespace braid::transport
