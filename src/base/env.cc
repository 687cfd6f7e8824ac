#include "base/env.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>

#include "base/log.h"

namespace braid::env {
namespace {

// Keep sorted: NCCL_* (names NCCL users already set), then BRAID_* (Braid's own knobs).
constexpr Var kTable[] = {
    {"NCCL_ALGO", nullptr,
     "algorithms allowed: \"ring,tree\", \"^ring\" (all but), per collective "
     "\"allreduce:tree;allgather:ring\"; names are Braid's (ring, direct, hierdirect, rhd, tree, hier, "
     "hierpipe, rackring, chain, pairwise, p2p); the cost model picks among those allowed"},
    {"NCCL_COMM_ID", nullptr,
     "host:port of the bootstrap root; makes the unique id deterministic and rank 0 hosts the root"},
    {"NCCL_CONF_FILE", nullptr, "file of NAME=VALUE lines read for variables not set in the environment"},
    {"NCCL_DEBUG", nullptr, "log level: VERSION, WARN, INFO, TRACE"},
    {"NCCL_DEBUG_FILE", nullptr, "log file pattern (%h host, %p pid); default stderr"},
    {"NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP,ENV",
     "subsystems logged at INFO (INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, CALL, PROXY, "
     "BOOTSTRAP, REG, ALL); a leading ^ excludes"},
    {"NCCL_HOSTID", nullptr, "overrides the host identity (hostname + boot id) used to pick shared memory"},
    {"NCCL_NSOCKS_PERTHREAD", "4",
     "TCP streams per NCCL_SOCKET_NTHREADS to each peer (threads x socks <= 64); 4 measured fastest "
     "on loopback"},
    {"NCCL_SHM_DISABLE", "0", "1: never use shared memory between processes; use TCP"},
    {"NCCL_SOCKET_FAMILY", nullptr, "AF_INET or AF_INET6: restrict interface selection to one family"},
    {"NCCL_SOCKET_IFNAME", nullptr,
     "interfaces to use: prefix list, ^ excludes, = exact match (e.g. eth,ib or ^docker or =eth0)"},
    {"NCCL_SOCKET_NTHREADS", "1", "TCP streams per peer are NTHREADS x NSOCKS_PERTHREAD (1-16)"},
    {"NCCL_TOPO_DUMP_FILE", nullptr,
     "write the host topology Braid uses (detected or from NCCL_TOPO_FILE) to this file, in "
     "NCCL's topology XML schema"},
    {"NCCL_TOPO_FILE", nullptr,
     "host topology XML in NCCL's schema, used instead of detection; a file that is not XML is "
     "ignored with a warning, one that breaks the schema fails init (docs/topology.md)"},
    {"BRAID_ALGO", nullptr,
     "force an algorithm by name (direct, hierdirect, ring, rhd, tree, hier, hierpipe, rackring, chain, pairwise, p2p) "
     "for every collective it implements; the cost model chooses for the others"},
    {"BRAID_BOOTSTRAP_ROOT_TIMEOUT_MS", "300000",
     "the bootstrap root gives up (and its thread exits) after this long without a new rank"},
    {"BRAID_CHECK_MISMATCH", "1",
     "1: ranks exchange a signature of each call and fail mismatched calls (different collective, "
     "type, op, root or count) with ncclInvalidUsage naming both; 0: off"},
    {"BRAID_CHUNK_BYTES", "524288", "pipeline chunk size in bytes for schedules"},
    {"BRAID_CLUSTER_FILE", nullptr,
     "cluster map XML (levels, racks, hosts, link bandwidth and latency per level) that groups "
     "hosts for hierarchical algorithms; see docs/topology.md"},
    {"BRAID_COMPRESS", "none",
     "AllReduce compression of each communicator: none, int8 (INT8 blocks, two-shot, "
     "hierarchical over racks), topk or topk:<ratio> (top-k, default ratio 0.01, sparse "
     "all-gather), auto (int8 where the cost model predicts a gain; never between ranks sharing "
     "memory). Lossy; Sum and Avg on float, half and bfloat16 only, others stay exact; "
     "include/braid/braid.h sets it per communicator and per call (docs/compression.md)"},
    {"BRAID_COMPRESS_BLOCK", "64",
     "INT8 block quantisation: elements per block (one scale each), 32 to 256; smaller blocks "
     "follow outliers more closely and cost more scale bytes"},
    {"BRAID_COMPRESS_FEEDBACK", "1",
     "1: error feedback (what a compressed call did not send is added to the same buffer's next "
     "call); 0: dropped"},
    {"BRAID_COMPRESS_MIN_BYTES", "1048576", "AllReduce calls smaller than this stay exact under compression"},
    {"BRAID_COMPRESS_STATE_BYTES", "1073741824",
     "compression's error-feedback residuals (fp32, one per communicator, buffer, count and type) "
     "are kept within this many bytes; the least recently used are dropped first"},
    {"BRAID_CUDA", "1",
     "0: device-memory support off even where a CUDA driver and device are present (host memory "
     "only, no CUDA call on any collective's path); 1: on wherever the build, a driver and a "
     "device allow it"},
    {"BRAID_DIRECT_MAX_BYTES", "65536",
     "largest AllReduce (bytes per rank) the one-hop direct algorithm may take; the cost model "
     "decides below it"},
    {"BRAID_ISA", nullptr,
     "generic, avx2 or avx512: use this instruction set for host reductions instead of the best "
     "one the CPU has (only a lower one takes effect)"},
    {"BRAID_LOOPBACK_DIRECT_MIN_BYTES", "16384",
     "between threads, messages from this size are copied once, sender buffer to receiver buffer; "
     "smaller ones go through the ring (0: always the ring)"},
    {"BRAID_SHM_BUFFSIZE", "1048576", "bytes of each shared-memory ring between two local ranks"},
    {"BRAID_SHM_CMA_MIN_BYTES", "0",
     "between processes, messages from this size are read once with process_vm_readv where the "
     "kernel allows it; smaller ones go through the ring. 0 (default): always the ring, which was "
     "faster at every size where measured (bench/micro/shm_pingpong)"},
    {"BRAID_SHM_ZEROCOPY_MIN_BYTES", "262144",
     "between processes, messages from this size whose buffer lies in ncclMemAlloc memory go by "
     "reference: the receiver maps the sender's pages and copies or reduces straight out of them "
     "(0: never)"},
    {"BRAID_TCP_SLICE_BYTES", "524288",
     "TCP transport: messages larger than this are striped in slices of this size over the streams"},
    {"BRAID_TIMEOUT_MS", "0",
     "0: no timeout; otherwise a collective that makes no progress for this long fails with "
     "ncclRemoteError (peer gone) or ncclSystemError; init waits this long for the other ranks "
     "(twice as long in ncclCommSplit and ncclCommShrink)"},
    {"BRAID_TOPO_PROBE", "1000",
     "without a cluster map, spend at most this many milliseconds measuring a few host pairs to "
     "group hosts into racks by bandwidth; 0: no probe (hosts only)"},
    {"BRAID_TRANSPORTS", nullptr,
     "comma list of the transports that may be used (loopback, shm, tcp); unset: all"},
};

std::once_flag confOnce;
std::map<std::string, std::string>* confValues = nullptr;

void loadConfFile() {
  confValues = new std::map<std::string, std::string>();
  const char* path = std::getenv("NCCL_CONF_FILE");
  if (!path) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    (*confValues)[line.substr(0, eq)] = line.substr(eq + 1);
  }
}

const Var* find(const char* name) {
  for (const Var& v : kTable)
    if (!std::strcmp(v.name, name)) return &v;
  return nullptr;
}

}  // namespace

std::span<const Var> table() { return kTable; }

const char* get(const char* name) {
  const Var* var = find(name);
  if (!var) {
    // A programming error; tests catch it. Still answer from the environment.
    std::fprintf(stderr, "braid: internal: environment variable %s is not in the table\n", name);
  }
  if (const char* v = std::getenv(name)) return v;
  std::call_once(confOnce, loadConfFile);
  auto it = confValues->find(name);
  if (it != confValues->end()) return it->second.c_str();
  return var ? var->defaultValue : nullptr;
}

bool isSet(const char* name) { return std::getenv(name) != nullptr; }

int64_t getInt(const char* name) {
  const char* v = get(name);
  const Var* var = find(name);
  const char* fallback = var && var->defaultValue ? var->defaultValue : "0";
  if (!v || !*v) return std::strtoll(fallback, nullptr, 0);
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 0);
  if (end == v || *end != '\0') {
    BRAID_WARN("%s=%s is not an integer; using the default %s", name, v, fallback);
    return std::strtoll(fallback, nullptr, 0);
  }
  return x;
}

}  // namespace braid::env
