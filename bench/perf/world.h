// Where this process sits among the ranks, and how it gets the communicator's unique id,
// without MPI: launchers (braidrun, torchrun, mpirun) already say who is who in the environment.
#pragma once

#include "nccl.h"
#include "options.h"

namespace braid::perf {

struct World {
  int procRank = 0;
  int nProcs = 1;
  int nThreads = 1;
  int nRanks() const { return nProcs * nThreads; }
  int firstRank() const { return procRank * nThreads; }
};

// Reads RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/PMI_SIZE (process mode).
World discoverWorld(const Options&);

// NCCL_COMM_ID (or a single process): each process asks ncclGetUniqueId itself. Otherwise
// process 0 creates the id and publishes it in a file the others poll (BRAID_PERF_ID_FILE, or
// a name derived from the MPI job id or the launcher's pid). Each round (one communicator per
// -A name, one after another) has an id of its own, in a file of its own. Returns false after
// printing why.
bool obtainUniqueId(const World&, int round, ncclUniqueId* id);
// Removes the round's id file once every rank has joined (process 0; harmless elsewhere).
void releaseUniqueId(const World&, int round);

}  // namespace braid::perf
