#include "world.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace braid::perf {
namespace {

bool envInt(const char* name, int* out) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (*end) return false;
  *out = static_cast<int>(n);
  return true;
}

std::string idFilePath(int round) {
  // Round 0 keeps the plain name; later rounds must not find the id an earlier one left.
  std::string suffix = round ? "." + std::to_string(round) : "";
  if (const char* p = std::getenv("BRAID_PERF_ID_FILE")) return p + suffix;
  // Every rank of one job must arrive at the same name: the MPI job id, or Slurm's job and
  // step, when there is one, else the launcher's pid (all ranks are its children).
  std::string key;
  const char* slurmJob = std::getenv("SLURM_JOB_ID");
  const char* slurmStep = std::getenv("SLURM_STEP_ID");
  if (const char* job = std::getenv("OMPI_MCA_ess_base_jobid"))
    key = job;
  else if (slurmJob && slurmStep)
    key = std::string("slurm.") + slurmJob + "." + slurmStep;
  else
    key = std::to_string(getppid());
  return "/tmp/braid_perf_id." + key + suffix;
}

}  // namespace

World discoverWorld(const Options& o) {
  World w;
  w.nThreads = o.nThreads;
  if (o.mode == Mode::Thread) return w;
  static const char* const kVars[][2] = {{"RANK", "WORLD_SIZE"},
                                         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                         {"SLURM_PROCID", "SLURM_NTASKS"},
                                         {"PMI_RANK", "PMI_SIZE"}};
  for (const auto& v : kVars) {
    int r, n;
    if (envInt(v[0], &r) && envInt(v[1], &n) && n > 0 && r >= 0 && r < n) {
      w.procRank = r;
      w.nProcs = n;
      break;
    }
  }
  return w;
}

bool obtainUniqueId(const World& w, int round, ncclUniqueId* id) {
  // torchrun-style launches across hosts name the rendezvous in MASTER_ADDR/MASTER_PORT; with
  // no torch store in this program, that address can serve as NCCL_COMM_ID (rank 0 hosts it).
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (!std::getenv("NCCL_COMM_ID") && addr && port && w.nProcs > 1) {
    std::string commId = std::string(addr) + ":" + port;
    setenv("NCCL_COMM_ID", commId.c_str(), 1);
  }
  if (w.nProcs == 1 || std::getenv("NCCL_COMM_ID")) {
    ncclResult_t r = ncclGetUniqueId(id);
    if (r != ncclSuccess)
      std::fprintf(stderr, "rank %d: ncclGetUniqueId failed: %s (%s)\n", w.firstRank(),
                   ncclGetErrorString(r), ncclGetLastError(nullptr));
    return r == ncclSuccess;
  }
  std::string path = idFilePath(round);
  if (w.procRank == 0) {
    ncclResult_t r = ncclGetUniqueId(id);
    if (r != ncclSuccess) {
      std::fprintf(stderr, "rank 0: ncclGetUniqueId failed: %s (%s)\n", ncclGetErrorString(r),
                   ncclGetLastError(nullptr));
      return false;
    }
    // Written aside and renamed, so a reader never sees half an id.
    std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    bool ok = f && std::fwrite(id, sizeof *id, 1, f) == 1;
    if (f) ok = std::fclose(f) == 0 && ok;
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "rank 0: cannot write the unique id to %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return false;
    }
    return true;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      bool ok = std::fread(id, sizeof *id, 1, f) == 1;
      std::fclose(f);
      if (ok) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(
      stderr,
      "rank %d: no unique id appeared in %s within 60 s (set NCCL_COMM_ID, or BRAID_PERF_ID_FILE "
      "to a path all ranks share)\n",
      w.firstRank(), path.c_str());
  return false;
}

void releaseUniqueId(const World& w, int round) {
  if (w.procRank == 0 && w.nProcs > 1 && !std::getenv("NCCL_COMM_ID"))
    std::remove(idFilePath(round).c_str());
}

}  // namespace braid::perf
