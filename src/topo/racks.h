// Grouping hosts into racks from measurements, for clusters without a map. Hosts in one rack
// talk through one switch; between racks traffic crosses an oversubscribed uplink, so a pair's
// bandwidth says which side of that line it is on. Two parts, kept apart so each is testable:
//   clusterRacks: measurements in, racks out (pure).
//   probeRacks:   decides which few pairs to measure (about 2 per host plus one row per rack,
//                 never all n^2), calls a measure callback for each, within a time budget.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <vector>

#include "algos/cost_model.h"
#include "base/status.h"

namespace braid::topo {

struct LinkSample {
  double latencyUs = 0;
  double bandwidthGbps = 0;
  double burstBytes = 0;    // what a shaped link passed faster than its rate after idling
  double cpuUsPerByte = 0;  // CPU both ends spent per byte of the timed transfer (0: unknown)
};

struct PairSample {
  int a = 0, b = 0;  // host indices
  LinkSample link;
};

struct RackOptions {
  // Bandwidths split into "same rack" and "other rack" only across a gap at least this wide
  // (the ratio of the two sides). Below it the differences are noise and all hosts share a rack.
  double minGapRatio = 1.5;
};

struct RackClustering {
  std::vector<int> rackOfHost;  // racks numbered in order of their lowest host
  int racks = 0;
  double thresholdGbps = 0;   // pairs at or above it are in one rack (0: no split found)
  algos::LinkCost intraRack;  // median of measured pairs inside a rack
  algos::LinkCost interRack;  // median of measured pairs across racks (= intraRack if none)
  // A host alone in its rack while other hosts share one, whose fastest measured link is slower
  // by minGapRatio or more than the median link between the other racks (where there are
  // others): its own link is slow, or it is a rack of one behind a slow uplink. The others wait
  // for it in every call that crosses it, so it is named (-1: none; the slowest if several).
  int slowHost = -1;
  double slowHostGbps = 0;  // its fastest measured pair
  double othersGbps = 0;    // the median measured pair between the other hosts
};

RackClustering clusterRacks(int nhosts, std::span<const PairSample> samples,
                            const RackOptions& options = {});

// The racks that `rackOfHost` (numbered in order of their lowest host) describes, priced from
// pairs measured one at a time (`alone`): the median pair inside a rack and across racks, and the
// slow host as clusterRacks names it. What clusterRacks returns once it has found its groups.
RackClustering priceRacks(int nhosts, std::span<const PairSample> alone,
                          std::vector<int> rackOfHost, double thresholdGbps,
                          const RackOptions& options = {});

// Racks from pairs measured while every host sent at once (`loaded`: a = sender, b = receiver,
// each host sending to one and receiving from one, as a ring or a shift does): an uplink that
// carries one pair at full rate but not the flows of a whole rack shows only then. A pair's rate
// is its faster measurement; the rates split in two where that separates them best (on a log
// scale), if the two sides are minGapRatio apart. Loaded pairs are not all the evidence a lone
// pair is: a pair that crosses an uplink no other flow of its round crossed runs fast, and
// where the cores bound every flow a pair can land on the wrong side. So two hosts join one rack
// only if their pair is fast and the hosts measured with both of them agree more often than not
// on which side each of them is (hosts of one rack see every other host alike). A host slow with
// all others (its own link) is a rack of its own, and the racks among the rest are looked for
// again without it.
// Gives the rack of each host, numbered in order of their lowest host, and the split's
// threshold; empty where no split is found (rates all alike, or fast pairs outvoted into one
// rack).
std::vector<int> racksUnderLoad(int nhosts, std::span<const PairSample> loaded,
                                const RackOptions& options, double* thresholdGbps);

// Measures the link between two hosts (a short ping-pong and one timed transfer, say). The
// probe calls it from one thread, one pair at a time.
using MeasureFn = std::function<Status(int hostA, int hostB, LinkSample* out)>;

struct ProbeOptions {
  std::chrono::milliseconds budget{1000};  // no new measurement starts after this
  int maxPairs = 0;                        // measurements at most (0: 4 x hosts)
  RackOptions racks;
};

// Measures a ring (h, h+1) and a star from host 0, clusters, then lets the lowest host outside
// every known rack measure the hosts still unplaced, until every host is placed or the budget or
// maxPairs runs out (the racks are then those the measurements made so far support). Before a
// split is accepted, the fastest measured pair between each two racks (the pairs nearest the
// split) is measured again, the faster of the two counting; and a split whose fast side is a
// single pair (a shaper's burst can lift one measurement above every link) is accepted only if
// that pair measures fast again, the slower of the two counting. `samples` (optional) receives
// each measured pair once.
Status probeRacks(int nhosts, const MeasureFn& measure, const ProbeOptions& options,
                  RackClustering* out, std::vector<PairSample>* samples = nullptr);

}  // namespace braid::topo
