#include "options.h"

#include <getopt.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "accuracy.h"

namespace braid::perf {
namespace {

void usage(const char* program) {
  std::fprintf(
      stderr,
      "usage: %s [flags]\n"
      "  -b,--minbytes N       smallest size (K/M/G suffixes, powers of 1024); default 32M\n"
      "  -e,--maxbytes N       largest size; default 32M\n"
      "  -i,--stepbytes N      additive step between sizes; default 1M\n"
      "  -f,--stepfactor F     multiplicative step between sizes (overrides -i)\n"
      "  -n,--iters N          timed iterations per size; default 20\n"
      "  -w,--warmup_iters N   untimed iterations before the sweep; default 5\n"
      "  -m,--agg_iters N      operations grouped per iteration; default 1\n"
      "  -c,--check N          checked iterations per size (0: no check); default 1\n"
      "  -o,--op OP            sum, prod, max, min, avg or all; default sum\n"
      "  -d,--datatype T       int8 uint8 int32 uint32 int64 uint64 half float double\n"
      "                        bfloat16 f8e4m3 f8e5m2, or all; default float\n"
      "  -r,--root R           root rank, or all; default 0\n"
      "  -z,--blocking 0|1     wait for each collective; default 0\n"
      "  -R,--local_register 0|1  buffers from ncclMemAlloc, registered; default 0\n"
      "  -G,--device_buffers 0|1|2  1: CUDA device buffers on a stream; 2: pinned host buffers on\n"
      "                        a CUDA stream; default 0 (host memory, no stream)\n"
      "  -t,--nthreads N       ranks (threads) per process; default 1\n"
      "  -g,--ngpus N          devices per thread (only 1)\n"
      "  -a,--average 0-3      report rank 0's time, or the mean/min/max across ranks; default 1\n"
      "  -p,--mode MODE        process (default; ranks from RANK/WORLD_SIZE, OMPI_COMM_WORLD_*\n"
      "                        or SLURM_PROCID/SLURM_NTASKS) or thread (one process, -t ranks)\n"
      "  -A,--algo NAME[,NAME] force Braid's algorithm (BRAID_ALGO) per communicator; a list runs\n"
      "                        one round per name; auto (default): Braid chooses\n"
      "  -P,--predict 0|1      1: also print ncclGroupSimulateEnd's predicted time next to the\n"
      "                        measured one, per algorithm; default 0\n"
      "  -Z,--compress MODE[,MODE]  AllReduce compression (BRAID_COMPRESS): none, int8, topk,\n"
      "                        topk:RATIO, auto; a list runs one round per mode. Inputs become\n"
      "                        gradient-like and each size prints its accuracy against an exact\n"
      "                        fp64 AllReduce; BRAID_COMPRESS_MIN_BYTES defaults to 0 here; one\n"
      "                        untimed call per size and placement allocates residuals\n",
      program);
}

bool parseSize(const char* s, size_t* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s || errno || v < 0) return false;
  double mult = 1;
  switch (*end) {
    case 'k':
    case 'K':
      mult = 1ull << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mult = 1ull << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mult = 1ull << 30;
      ++end;
      break;
    default: break;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end) return false;
  *out = static_cast<size_t>(std::llround(v * mult));
  return true;
}

bool parseInt(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

// "ring,direct": non-empty names of letters, digits, '_' and '-' (they go into BRAID_ALGO and
// into table headers), each once.
bool parseNames(const char* s, std::vector<std::string>* out) {
  out->clear();
  std::string cur;
  for (const char* p = s;; ++p) {
    if (*p == ',' || !*p) {
      if (cur.empty() || std::find(out->begin(), out->end(), cur) != out->end()) return false;
      out->push_back(cur);
      cur.clear();
      if (!*p) return true;
    } else if (std::isalnum(static_cast<unsigned char>(*p)) || *p == '_' || *p == '-') {
      cur += *p;
    } else {
      return false;
    }
  }
}

}  // namespace

std::vector<size_t> Options::sizes() const {
  std::vector<size_t> out;
  for (size_t s = minBytes; s <= maxBytes;) {
    out.push_back(s);
    size_t next =
        stepFactor > 1 ? static_cast<size_t>(static_cast<double>(s) * stepFactor) : s + stepBytes;
    if (next <= s) break;  // -f 1.0001 on tiny sizes, or -i 0: do not loop forever
    s = next;
  }
  return out;
}

bool parseOptions(int argc, char** argv, const char* program, Options* o) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"agg_iters", required_argument, nullptr, 'm'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"blocking", required_argument, nullptr, 'z'},
                                 {"local_register", required_argument, nullptr, 'R'},
                                 {"device_buffers", required_argument, nullptr, 'G'},
                                 {"nthreads", required_argument, nullptr, 't'},
                                 {"ngpus", required_argument, nullptr, 'g'},
                                 {"average", required_argument, nullptr, 'a'},
                                 {"mode", required_argument, nullptr, 'p'},
                                 {"algo", required_argument, nullptr, 'A'},
                                 {"predict", required_argument, nullptr, 'P'},
                                 {"compress", required_argument, nullptr, 'Z'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  auto bad = [&](const char* flag, const char* value) {
    std::fprintf(stderr, "%s: bad value '%s' for %s\n", program, value ? value : "", flag);
    usage(program);
    return false;
  };
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:m:c:o:d:r:z:R:G:t:g:a:p:A:P:Z:h", kLong,
                          nullptr)) != -1) {
    const char* v = optarg;
    int n = 0;
    switch (c) {
      case 'b':
        if (!parseSize(v, &o->minBytes)) return bad("-b", v);
        break;
      case 'e':
        if (!parseSize(v, &o->maxBytes)) return bad("-e", v);
        break;
      case 'i':
        if (!parseSize(v, &o->stepBytes)) return bad("-i", v);
        break;
      case 'f': {
        char* end = nullptr;
        o->stepFactor = std::strtod(v, &end);
        if (*end || o->stepFactor <= 1) return bad("-f", v);
        break;
      }
      case 'n':
        if (!parseInt(v, 0, 1 << 30, &o->iters)) return bad("-n", v);
        break;
      case 'w':
        if (!parseInt(v, 0, 1 << 30, &o->warmup)) return bad("-w", v);
        break;
      case 'm':
        if (!parseInt(v, 1, 1 << 20, &o->aggIters)) return bad("-m", v);
        break;
      case 'c':
        if (!parseInt(v, 0, 1 << 20, &o->check)) return bad("-c", v);
        break;
      case 'z':
        if (!parseInt(v, 0, 1, &o->blocking)) return bad("-z", v);
        break;
      case 'R':
        if (!parseInt(v, 0, 1, &o->registerBuffers)) return bad("-R", v);
        break;
      case 'G':
        if (!parseInt(v, 0, 2, &o->deviceBuffers)) return bad("-G", v);
        break;
      case 't':
        if (!parseInt(v, 1, 1024, &o->nThreads)) return bad("-t", v);
        break;
      case 'g':
        if (!parseInt(v, 1, 1, &n)) {
          std::fprintf(
              stderr,
              "%s: -g %s: host-memory ranks have no devices; only -g 1 is supported (use -t)\n",
              program, v);
          return false;
        }
        break;
      case 'a':
        if (!parseInt(v, 0, 3, &n)) return bad("-a", v);
        o->average = static_cast<Average>(n);
        break;
      case 'o':
        o->ops.clear();
        if (!std::strcmp(v, "all")) {
          for (const auto& op : allOps()) o->ops.push_back(op.op);
        } else if (const OpInfo* op = findOp(v)) {
          o->ops.push_back(op->op);
        } else {
          return bad("-o", v);
        }
        break;
      case 'd':
        o->types.clear();
        if (!std::strcmp(v, "all")) {
          for (const auto& t : allTypes()) o->types.push_back(t.type);
        } else if (const TypeInfo* t = findType(v)) {
          o->types.push_back(t->type);
        } else {
          return bad("-d", v);
        }
        break;
      case 'r':
        if (!std::strcmp(v, "all"))
          o->allRoots = true;
        else if (!parseInt(v, 0, 1 << 30, &o->root))
          return bad("-r", v);
        break;
      case 'p':
        // nccl-tests' -p is "parallel init 0/1"; accepting its values keeps their scripts working.
        if (!std::strcmp(v, "process") || !std::strcmp(v, "0") || !std::strcmp(v, "1"))
          o->mode = Mode::Process;
        else if (!std::strcmp(v, "thread"))
          o->mode = Mode::Thread;
        else
          return bad("-p", v);
        break;
      case 'A':
        if (!parseNames(v, &o->algos)) return bad("-A", v);
        break;
      case 'P':
        if (!parseInt(v, 0, 1, &n)) return bad("-P", v);
        o->predict = n == 1;
        break;
      case 'Z': {
        // Values hold ':' and '.', which parseNames refuses: split on commas here.
        o->compress.clear();
        std::string all(v), cur;
        for (size_t i = 0; i <= all.size(); ++i) {
          if (i == all.size() || all[i] == ',') {
            if (!validCompressLabel(cur) ||
                std::find(o->compress.begin(), o->compress.end(), cur) != o->compress.end())
              return bad("-Z", v);
            o->compress.push_back(cur);
            cur.clear();
          } else {
            cur += all[i];
          }
        }
        break;
      }
      case 'h': usage(program); std::exit(0);
      default: usage(program); return false;
    }
  }
  if (optind < argc) return bad("arguments", argv[optind]);
  if (o->algos.size() > 1 && o->compress.size() > 1) {
    std::fprintf(stderr, "%s: -A and -Z both list several values; rounds run over one list only\n",
                 program);
    return false;
  }
  if (o->maxBytes < o->minBytes) {
    std::fprintf(stderr, "%s: -e %zu is smaller than -b %zu\n", program, o->maxBytes, o->minBytes);
    return false;
  }
  return true;
}

}  // namespace braid::perf
