#include "algos/rack_ring_allreduce.h"

#include "algos/ring_allreduce.h"
#include "algos/topology_pattern.h"

namespace braid::algos {

bool RackRingAllReduce::supports(const CollArgs& args) const {
  return args.coll == Collective::AllReduce;
}

Schedule RackRingAllReduce::build(const CollArgs& a) const {
  Topology flat;
  return buildRingAllReduce("rackring", a, nestedOrder(topologyOf(a, flat)));
}

}  // namespace braid::algos
