// braid-sim: prices collectives on a described fabric with Braid's own schedule builders and
// operation simulator (algos::simulateOperation, the model the selector uses), at any number of
// ranks. docs/scale.md says what it models and how far to trust it.
//
//   braid-sim [fabric] [call] [--csv FILE] [--plot FILE.png] [--no-symmetry | --exact-symmetry]
//             [--why] [--calls N]
// fabric, either a cluster map (the format BRAID_CLUSTER_FILE reads, every host in it used):
//   --cluster FILE --ranks-per-host K
// or a Clos of identical hosts (ranks numbered host by host, hosts rack by rack):
//   --ranks-per-host K --hosts-per-rack H [--racks-per-pod R --pods P]
//   --nic-gbps G --nic-us U            the link between two hosts of a rack (each host's NIC)
//   --rack-oversub X --rack-us U       a rack's uplink: H x G / X, U between racks
//   --pod-oversub Y --pod-us U         a pod's uplink: R x (the rack uplink) / Y, U between pods
//   --local-gbps G --local-us U        between ranks of one host (default: shared memory's)
//   --placement block|alternate        rank order over hosts (default block: host by host,
//                                      rack by rack); alternate takes a host from each rack in
//                                      turn, as tools/netcluster's: neighbours sit in
//                                      different racks, a ring that ignores the racks
//   --reduce-gbytes B                  reduction rate in GB/s (default 10)
//   --memory                           price host memory, with this machine's last-level cache
//                                      (off: an accelerator's own memory)
//   --ranks-per-core X                 ranks sharing each core (default 1): above 1, each
//                                      message's kernel work is priced on the shared cores, as
//                                      the runtime does where ranks outnumber cores
//                                      (tools/netcluster's hosts all run on this machine's),
//                                      with a map's cpu_ns_per_byte taken from them as the
//                                      messages go
//   --no-check-mismatch                leave out the mismatch check's signatures (the runtime's
//                                      BRAID_CHECK_MISMATCH=0; they cost only where X > 1)
// call (nccl-tests' flags where they have one):
//   --coll NAME -b MIN -e MAX -f FACTOR -d TYPE --algos a,b,...|auto --compress int8|topk:R
//   --chunk-bytes SIZE                 pipeline chunk (default 512K: the runtime's default
//                                      BRAID_CHUNK_BYTES; give it the job's where it sets one)
// --plot FILE.png: time and busbw against size, a line per algorithm, drawn by braid-sim-plot
// (beside this binary; matplotlib) from the CSV (--csv's, else FILE.csv).
// Symmetric ranks (docs/scale.md): one block of ranks stands for the others where shifting every
// rank by the block maps the fabric and the schedules onto themselves; the "ranks" column says
// how many were simulated, with a ~ where the blocks' schedules differ in what their steps wait
// for (approximate: off with --exact-symmetry); --no-symmetry simulates every rank.
// --why: for `auto`, the selector's price of every candidate (its TUNING log line) and the time
// it took to choose, on stderr.
// --calls N (1-1000, default 1): price a call as one of N back to back, as a benchmark's timing
// loop issues them (each rank starts a call when it has finished its last; algos::repeatSchedule):
// the time column is the N calls' time over N. A pipeline's fill and drain (a chain's, a tree's)
// then overlap the next call's start, as they do in nccl-tests' time column.
// Exit status 2 on a usage error, 1 when a call cannot be priced, with the reason on stderr.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "algos/algorithm.h"
#include "algos/operation_cost.h"
#include "algos/selector.h"
#include "compress/int8_block.h"
#include "compress/topk.h"
#include "kernels/reduce.h"
#include "topo/cluster_map.h"
#include "topo/comm_topology.h"
#include "topo/sysfs.h"
#include "transport/shm/shm_transport.h"

namespace {

using braid::algos::Collective;

// --calls: enough for a benchmark's timing loop (nccl-tests' -n), few enough that pricing stays
// quick (the simulation grows with them).
constexpr int kMaxCalls = 1000;

int usage(const char* why) {
  std::fprintf(stderr, "braid-sim: %s (see the comment at the top of tools/braid_sim.cc)\n", why);
  return 2;
}

struct CollInfo {
  const char* name;
  Collective coll;
  bool blocks;                     // nccl-tests' size is the whole buffer of nranks blocks
  double busFactor(int n) const {  // nccl-tests' busbw / algbw
    const double r = static_cast<double>(n);
    switch (coll) {
      case Collective::AllReduce: return 2 * (r - 1) / r;
      case Collective::AllGather:
      case Collective::ReduceScatter:
      case Collective::AlltoAll:
      case Collective::Gather:
      case Collective::Scatter: return (r - 1) / r;
      default: return 1;
    }
  }
};

constexpr CollInfo kColls[] = {
    {"allreduce", Collective::AllReduce, false},
    {"broadcast", Collective::Broadcast, false},
    {"reduce", Collective::Reduce, false},
    {"allgather", Collective::AllGather, true},
    {"reducescatter", Collective::ReduceScatter, true},
    {"alltoall", Collective::AlltoAll, true},
    {"gather", Collective::Gather, true},
    {"scatter", Collective::Scatter, true},
};

struct TypeInfo {
  const char* name;
  ncclDataType_t type;
};
constexpr TypeInfo kTypes[] = {{"float", ncclFloat32},     {"half", ncclFloat16},
                               {"bfloat16", ncclBfloat16}, {"double", ncclFloat64},
                               {"int32", ncclInt32},       {"int8", ncclInt8}};

// nccl-tests' size syntax: a number with an optional K, M or G (powers of 1024).
bool parseSize(const char* s, size_t* out) {
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || v < 0) return false;
  double scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = 1024.0, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = 1024.0 * 1024, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = 1024.0 * 1024 * 1024, ++end;
  if (*end == 'B') ++end;
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v * scale);
  return true;
}

bool parseNumber(const char* s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s, &end);
  return end != s && *end == '\0' && std::isfinite(*out);
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (comma > pos) out.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

struct Fabric {
  std::string cluster;
  int ranksPerHost = 1, hostsPerRack = 0, racksPerPod = 0, pods = 1;
  double nicGbps = 100, nicUs = 2, rackOversub = 1, rackUs = 4, podOversub = 1, podUs = 6;
  double localGbps = 0, localUs = -1, reduceGBytes = 10, ranksPerCore = 1;
  bool memory = false, checkMismatch = true, alternate = false;
};

braid::algos::LinkCost linkOf(double gbps, double us) { return {us, 8e-3 / gbps}; }

// The fabric as algorithms see it, with the names of its levels.
braid::Status buildTopology(const Fabric& f, braid::algos::Topology* out,
                            std::vector<std::string>* levelNames) {
  braid::algos::LinkCost local = braid::transport::kShmLinkCost;
  if (f.localGbps > 0) local.betaUsPerByte = 8e-3 / f.localGbps;
  if (f.localUs >= 0) local.alphaUs = f.localUs;
  if (!f.cluster.empty()) {
    if (f.alternate)
      return braid::invalidUsage(
          "--placement alternate: for the Clos flags (a cluster map's "
          "ranks go host by host in the map's order)");
    braid::topo::ClusterMap map;
    BRAID_TRY(braid::topo::loadClusterMap(f.cluster, &map));
    std::vector<std::string> rankHosts;
    for (const auto& host : map.groups[0])
      for (int k = 0; k < f.ranksPerHost; ++k) rankHosts.push_back(host.name);
    braid::topo::CommTopology comm;
    BRAID_TRY(braid::topo::topologyFromClusterMap(map, rankHosts, local, &comm));
    *out = std::move(comm.topology);
    *levelNames = comm.levelNames;
  } else {
    if (f.hostsPerRack <= 0)
      return braid::invalidUsage("--hosts-per-rack (or --cluster) is needed");
    const int racksPerPod = f.racksPerPod > 0 ? f.racksPerPod : 1;
    const int hosts = f.hostsPerRack * racksPerPod * f.pods;
    const long long n = 1LL * hosts * f.ranksPerHost;
    if (n > (1 << 20)) return braid::invalidUsage("%lld ranks: at most 2^20", n);
    braid::algos::Topology t;
    std::vector<int> host(static_cast<size_t>(n)), rack(host.size()), pod(host.size());
    const int racks = racksPerPod * f.pods;
    for (size_t r = 0; r < host.size(); ++r) {
      const int slot = static_cast<int>(r) / f.ranksPerHost;  // the rank's host in rank order
      host[r] = f.alternate ? slot % racks * f.hostsPerRack + slot / racks : slot;
      rack[r] = host[r] / f.hostsPerRack;
      pod[r] = rack[r] / racksPerPod;
    }
    const double rackUplink = f.hostsPerRack * f.nicGbps / f.rackOversub;
    t.groupOf = {host, rack};
    t.link = {local, linkOf(f.nicGbps, f.nicUs), linkOf(rackUplink, f.rackUs)};
    *levelNames = {"host", "rack"};
    if (f.racksPerPod > 0) {
      t.groupOf.push_back(pod);
      t.link.push_back(linkOf(racksPerPod * rackUplink / f.podOversub, f.podUs));
      levelNames->push_back("pod");
    }
    *out = std::move(t);
  }
  out->gammaUsPerByte = 1.0 / (f.reduceGBytes * 1e3);
  // As ncclComm::measureTopology sets them, so that a cluster map priced here and by a
  // communicator on it come out the same.
  out->alphaScale = std::max(1.0, f.ranksPerCore);
  out->signatures = f.checkMismatch;
  if (f.memory) {
    const size_t cache = braid::topo::sysfs::lastLevelCacheBytes();
    out->memoryUsPerByte = braid::algos::kHostMemoryUsPerByte;
    out->cacheBytes = cache ? static_cast<double>(cache) : braid::algos::kDefaultCacheBytes;
  }
  return braid::Status::Ok();
}

// The column name of link level l: between two members of level l - 1's groups, inside one of
// level l's ("host": inside a host; "rack": between hosts of a rack; ... "top").
std::string tierName(const std::vector<std::string>& levels, int l) {
  return l < static_cast<int>(levels.size()) ? "in-" + levels[static_cast<size_t>(l)] : "top";
}

// Runs braid-sim-plot from this binary's folder on the CSV; false (having said why) where it
// cannot or fails.
bool plot(const std::string& csvPath, const std::string& pngPath, int nranks,
          const std::string& coll) {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) {
    std::fprintf(stderr, "braid-sim: --plot: cannot find this binary's folder: %s\n",
                 error.message().c_str());
    return false;
  }
  const std::string script = (self.parent_path() / "braid-sim-plot").string();
  const std::string title = "braid-sim: " + coll + ", " + std::to_string(nranks) + " ranks";
  std::vector<const char*> argv = {script.c_str(), pngPath.c_str(), csvPath.c_str(),
                                   "--title",      title.c_str(),   nullptr};
  std::fflush(stdout);
  pid_t pid = 0;
  if (int e = posix_spawn(&pid, script.c_str(), nullptr, nullptr, const_cast<char**>(argv.data()),
                          environ);
      e != 0) {
    std::fprintf(stderr, "braid-sim: --plot: cannot run %s: %s\n", script.c_str(),
                 std::strerror(e));
    return false;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  std::fprintf(stderr, "braid-sim: --plot: %s failed (the CSV is %s)\n", script.c_str(),
               csvPath.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  Fabric fabric;
  std::string collName = "allreduce", typeName = "float", algoList = "auto", compress, csvPath,
              plotPath;
  size_t minBytes = 1 << 20, maxBytes = 1 << 20, chunkBytes = 512 * 1024;
  double factor = 2;
  bool symmetry = true, exactSymmetry = false;
  bool why = false;
  int calls = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto number = [&](double* out) {
      const char* v = value();
      return v && parseNumber(v, out);
    };
    auto integer = [&](int* out) {
      double d = 0;
      if (!number(&d) || d < 1 || d > (1 << 20) || d != std::floor(d)) return false;
      *out = static_cast<int>(d);
      return true;
    };
    bool ok = true;
    if (a == "--cluster") {
      const char* v = value();
      ok = v != nullptr;
      if (ok) fabric.cluster = v;
    } else if (a == "--ranks-per-host")
      ok = integer(&fabric.ranksPerHost);
    else if (a == "--hosts-per-rack")
      ok = integer(&fabric.hostsPerRack);
    else if (a == "--racks-per-pod")
      ok = integer(&fabric.racksPerPod);
    else if (a == "--pods")
      ok = integer(&fabric.pods);
    else if (a == "--nic-gbps")
      ok = number(&fabric.nicGbps) && fabric.nicGbps > 0;
    else if (a == "--nic-us")
      ok = number(&fabric.nicUs) && fabric.nicUs >= 0;
    else if (a == "--rack-oversub")
      ok = number(&fabric.rackOversub) && fabric.rackOversub > 0;
    else if (a == "--rack-us")
      ok = number(&fabric.rackUs) && fabric.rackUs >= 0;
    else if (a == "--pod-oversub")
      ok = number(&fabric.podOversub) && fabric.podOversub > 0;
    else if (a == "--pod-us")
      ok = number(&fabric.podUs) && fabric.podUs >= 0;
    else if (a == "--local-gbps")
      ok = number(&fabric.localGbps) && fabric.localGbps > 0;
    else if (a == "--local-us")
      ok = number(&fabric.localUs) && fabric.localUs >= 0;
    else if (a == "--reduce-gbytes")
      ok = number(&fabric.reduceGBytes) && fabric.reduceGBytes > 0;
    else if (a == "--ranks-per-core")
      ok = number(&fabric.ranksPerCore) && fabric.ranksPerCore > 0;
    else if (a == "--memory")
      fabric.memory = true;
    else if (a == "--no-check-mismatch")
      fabric.checkMismatch = false;
    else if (a == "--placement") {
      const char* v = value();
      ok = v && (std::strcmp(v, "block") == 0 || std::strcmp(v, "alternate") == 0);
      if (ok) fabric.alternate = std::strcmp(v, "alternate") == 0;
    } else if (a == "--no-symmetry")
      symmetry = false;
    else if (a == "--exact-symmetry")
      exactSymmetry = true;
    else if (a == "--why")
      why = true;
    else if (a == "--calls")
      ok = integer(&calls) && calls <= kMaxCalls;
    else if (a == "--coll" || a == "-d" || a == "--algos" || a == "--compress" || a == "--csv" ||
             a == "--plot") {
      const char* v = value();
      ok = v != nullptr && *v;
      if (ok) {
        (a == "--coll"       ? collName
         : a == "-d"         ? typeName
         : a == "--algos"    ? algoList
         : a == "--compress" ? compress
         : a == "--csv"      ? csvPath
                             : plotPath) = v;
      }
    } else if (a == "-b" || a == "-e") {
      const char* v = value();
      ok = v && parseSize(v, a == "-b" ? &minBytes : &maxBytes);
    } else if (a == "--chunk-bytes") {
      const char* v = value();
      ok = v && parseSize(v, &chunkBytes) && chunkBytes > 0;
    } else if (a == "-f")
      ok = number(&factor) && factor > 1;
    else
      return usage(("unknown argument " + a).c_str());
    if (!ok) return usage(("bad or missing value for " + a).c_str());
  }
  if (minBytes > maxBytes) return usage("-b is above -e");
  if (!plotPath.empty() && csvPath.empty())
    csvPath = std::filesystem::path(plotPath).replace_extension(".csv").string();

  const CollInfo* coll = nullptr;
  for (const CollInfo& c : kColls)
    if (collName == c.name) coll = &c;
  if (!coll) return usage(("--coll: unknown collective " + collName).c_str());
  const TypeInfo* type = nullptr;
  for (const TypeInfo& t : kTypes)
    if (typeName == t.name) type = &t;
  if (!type) return usage(("-d: unknown type " + typeName).c_str());
  const size_t typeSize = braid::kernels::typeSize(type->type);

  braid::algos::Topology topo;
  std::vector<std::string> levelNames;
  if (braid::Status s = buildTopology(fabric, &topo, &levelNames); !s.ok()) {
    std::fprintf(stderr, "braid-sim: %s\n", s.message().c_str());
    return 1;
  }
  const int n = topo.nranks();

  std::unique_ptr<braid::compress::Codec> codec;
  if (compress == "int8") {
    std::unique_ptr<braid::compress::Int8BlockCodec> int8;
    if (braid::Status s = braid::compress::Int8BlockCodec::create({}, &int8); !s.ok())
      return usage(s.message().c_str());
    codec = std::move(int8);
  } else if (compress.rfind("topk:", 0) == 0) {
    braid::compress::TopKOptions options;
    if (!parseNumber(compress.c_str() + 5, &options.ratio))
      return usage("--compress topk:R needs a ratio");
    std::unique_ptr<braid::compress::TopKCodec> topk;
    if (braid::Status s = braid::compress::TopKCodec::create(options, &topk); !s.ok())
      return usage(s.message().c_str());
    codec = std::move(topk);
  } else if (!compress.empty()) {
    return usage("--compress: int8 or topk:R");
  }
  if (codec && coll->coll != Collective::AllReduce) return usage("--compress is for allreduce");

  FILE* csv = nullptr;
  if (!csvPath.empty() && !(csv = std::fopen(csvPath.c_str(), "w"))) {
    std::fprintf(stderr, "braid-sim: cannot write %s: %s\n", csvPath.c_str(), std::strerror(errno));
    return 1;
  }
  std::string header = "size,count,type,redop,root,time_us,algbw_GBs,busbw_GBs,algo";
  for (int l = 0; l <= topo.levels(); ++l) header += ",bytes_" + tierName(levelNames, l);
  header += ",busiest_port,busiest_busy_us,simulated_ranks,sim_seconds";
  if (csv) std::fprintf(csv, "%s\n", header.c_str());

  std::printf("# braid-sim: %d ranks, %s\n# %s", n, collName.c_str(), topo.describe().c_str());
  std::printf("# %12s %12s %8s %6s %4s %12s %8s %8s  %-12s", "size", "count", "type", "redop",
              "root", "time(us)", "algbw", "busbw", "algo");
  for (int l = 0; l <= topo.levels(); ++l)
    std::printf(" %12s", ("B " + tierName(levelNames, l)).c_str());
  std::printf("  %-22s %8s %7s\n", "busiest port", "ranks", "sim(s)");

  int status = 0;
  const double growth = factor;
  for (double size = static_cast<double>(minBytes); size <= static_cast<double>(maxBytes) * 1.0001;
       size = std::max(size * growth, size + 1)) {
    const size_t bytes = static_cast<size_t>(size);
    const size_t count = bytes / typeSize / (coll->blocks ? static_cast<size_t>(n) : 1);
    if (count == 0) continue;
    braid::algos::CollArgs args;
    args.coll = coll->coll;
    args.count = count;
    args.nranks = n;
    args.typeSize = typeSize;
    args.type = type->type;
    args.chunkCount = braid::algos::pipelineChunk(coll->coll, count, n, typeSize, chunkBytes);
    args.directMaxBytes = 65536;
    args.topology = &topo;
    args.codec = codec.get();
    args.feedback = codec != nullptr;
    std::vector<const braid::algos::Algorithm*> chosen;
    for (const std::string& name : split(algoList)) {
      const braid::algos::Algorithm* algo = nullptr;
      if (name == "auto") {
        braid::algos::Choice choice;
        const auto choosing = std::chrono::steady_clock::now();
        if (braid::Status s = braid::algos::chooseAlgorithm(args, {}, "", &choice); !s.ok()) {
          std::fprintf(stderr, "braid-sim: %s\n", s.message().c_str());
          return 1;
        }
        const double chose =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - choosing).count();
        algo = choice.algorithm;
        if (why)
          std::fprintf(stderr, "# auto, %zu bytes, chosen in %.2f s: %s\n", bytes, chose,
                       choice.reason.c_str());
      } else {
        for (const braid::algos::Algorithm* a : braid::algos::algorithms())
          if (a->name() == name && a->compressed() == (codec != nullptr) && a->supports(args))
            algo = a;
        if (!algo) {
          std::fprintf(stderr, "braid-sim: %s does not serve %s of %zu bytes on %d ranks\n",
                       name.c_str(), collName.c_str(), bytes, n);
          status = 1;
          continue;
        }
      }
      chosen.push_back(algo);
    }
    for (const braid::algos::Algorithm* algo : chosen) {
      braid::algos::OperationOptions options;
      options.signaturesOnDataEdges = braid::algos::needsEveryInput(coll->coll);
      options.symmetry = symmetry;
      options.approximateSymmetry = symmetry && !exactSymmetry;
      options.buildAhead = true;  // the source below builds from `args` and `algo` alone
      braid::algos::OperationReport report;
      const auto started = std::chrono::steady_clock::now();
      double us = braid::algos::simulateOperation(
          n,
          [&](int r, braid::algos::Schedule& storage) -> const braid::algos::Schedule& {
            braid::algos::CollArgs v = args;
            v.rank = r;
            storage = algo->build(v);
            if (calls > 1) storage = braid::algos::repeatSchedule(storage, calls);
            return storage;
          },
          typeSize, topo, options, &report);
      us /= calls;  // and a call's share of the bytes and the busiest port's time
      for (double& b : report.levelBytes) b /= calls;
      report.busiestUs /= calls;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (!std::isfinite(us)) {
        std::fprintf(stderr, "braid-sim: %.*s's schedules do not complete\n",
                     static_cast<int>(algo->name().size()), algo->name().data());
        status = 1;
        continue;
      }
      const double algbw = static_cast<double>(bytes) / us / 1e3;  // GB/s
      const double busbw = algbw * coll->busFactor(n);
      std::string busiest = "-";
      if (report.busiestLevel >= 0)
        busiest = levelNames[static_cast<size_t>(report.busiestLevel)] + " " +
                  std::to_string(report.busiestGroup) + (report.busiestIn ? " in" : " out");
      const std::string name(algo->name());
      const char* redop = coll->coll == Collective::AllReduce || coll->coll == Collective::Reduce ||
                                  coll->coll == Collective::ReduceScatter
                              ? "sum"
                              : "none";
      std::printf("  %12zu %12zu %8s %6s %4d %12.1f %8.2f %8.2f  %-12s", bytes, count, type->name,
                  redop, 0, us, algbw, busbw, name.c_str());
      for (double b : report.levelBytes) std::printf(" %12.4g", b);
      const std::string ranks =
          (report.approximatePeriod ? "~" : "") + std::to_string(report.period);
      std::printf("  %-22s %8s %7.2f\n", busiest.c_str(), ranks.c_str(), seconds);
      if (csv) {
        std::fprintf(csv, "%zu,%zu,%s,%s,0,%.3f,%.4f,%.4f,%s", bytes, count, type->name, redop, us,
                     algbw, busbw, name.c_str());
        for (double b : report.levelBytes) std::fprintf(csv, ",%.0f", b);
        std::fprintf(csv, ",%s,%.3f,%d,%.3f\n", busiest.c_str(), report.busiestUs, report.period,
                     seconds);
        std::fflush(csv);  // rows priced so far survive a run cut off by a time limit
      }
      std::fflush(stdout);
    }
  }
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  std::printf("# peak memory %.0f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  if (csv) std::fclose(csv);
  if (!plotPath.empty() && !plot(csvPath, plotPath, n, collName)) return 1;
  return status;
}
