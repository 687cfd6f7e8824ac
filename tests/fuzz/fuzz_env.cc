// Fuzz target: every environment value Braid parses, and the call-signature records ranks send
// each other. The first byte picks:
//   0  integers (env::parseInt, behind every numeric variable) and NCCL_CONF_FILE's text
//   1  NCCL_DEBUG and NCCL_DEBUG_SUBSYS
//   2  NCCL_SOCKET_IFNAME against a synthetic interface list, and NCCL_SOCKET_FAMILY
//   3  NCCL_ALGO (a filter, then asked about every collective)
//   4  BRAID_COMPRESS (a policy that parses must pass its own check and describe itself)
//   5  BRAID_ISA and BRAID_TRANSPORTS
//   6  a call signature (64 bits from a peer) described for an error message
#include <sys/socket.h>

#include <map>
#include <string>

#include "algos/algorithm.h"
#include "algos/selector.h"
#include "base/env.h"
#include "base/log.h"
#include "base/net/socket.h"
#include "core/exec/signature.h"
#include "core/plan/compression.h"
#include "fuzz_common.h"
#include "kernels/isa.h"
#include "transport/registry.h"

namespace braid {
namespace {

using fuzz::broken;
using fuzz::Input;

void integersAndConf(Input& in) {
  std::string text(in.rest());
  int64_t v = 0;
  (void)env::parseInt(text.c_str(), &v);
  std::map<std::string, std::string> conf;
  env::parseConf(text, &conf);
  for (const auto& [name, value] : conf)
    if (name.find('\n') != std::string::npos || value.find('\n') != std::string::npos)
      broken("a conf entry spans lines");
}

void logging(Input& in) {
  std::string text(in.rest());
  (void)log::parseLevel(text.c_str());
  (void)log::parseMask(text.c_str());
}

void interfaces(Input& in) {
  const int family = in.u8() % 3;
  std::string spec(in.rest());
  static const std::vector<net::Interface> all = [] {
    std::vector<net::Interface> list;
    for (const char* name : {"lo", "eth0", "eth1", "docker0", "ib0", "enp3s0f1", "bond0.100"}) {
      net::Interface itf;
      itf.name = name;
      (void)net::SocketAddress::parse(name[0] == 'l' ? "127.0.0.1:0" : "10.1.2.3:0", &itf.address);
      list.push_back(itf);
    }
    return list;
  }();
  const int families[] = {AF_UNSPEC, AF_INET, AF_INET6};
  auto chosen = net::selectInterfaces(all, spec.c_str(), families[family]);
  if (chosen.size() > all.size()) broken("more interfaces chosen than exist");
  for (const auto& itf : all) (void)net::matchIfname(spec, itf.name);
  (void)net::parseFamily(spec.c_str());
}

void algoFilter(Input& in) {
  algos::AlgoFilter filter;
  if (!algos::AlgoFilter::parse(in.rest(), &filter).ok()) return;
  for (int c = 0; c <= static_cast<int>(algos::Collective::Recv); ++c)
    for (const char* name : {"ring", "tree", "direct", "rhd", "hier", "nosuch"})
      (void)filter.allows(static_cast<algos::Collective>(c), name);
}

void compressPolicy(Input& in) {
  CompressPolicy policy = defaultCompressPolicy();
  if (!parseCompressPolicy(in.rest(), "BRAID_COMPRESS", &policy).ok()) return;
  Status st = checkCompressPolicy(policy, "BRAID_COMPRESS");
  if (!st.ok()) broken("a parsed policy fails its check", st.message());
  (void)describeCompressPolicy(policy);
}

void isaAndTransports(Input& in) {
  const auto best = static_cast<kernels::Isa>(in.u8() % kernels::kNumIsas);
  std::string text(in.rest());
  const kernels::Isa isa = kernels::resolveIsaRequest(text.c_str(), best);
  if (static_cast<int>(isa) > static_cast<int>(best)) broken("BRAID_ISA raised the ISA");
  for (const auto* entry : transport::registered())
    (void)transport::transportListAllows(text, entry->name);
}

void signature(Input& in) {
  const std::string text = describeSignature(in.u64());
  if (text.empty() || text.back() != ')') broken("signature text", text);
}

}  // namespace

std::span<const fuzz::Decoder> fuzz::decoders() {
  static constexpr Decoder kDecoders[] = {integersAndConf, logging,          interfaces, algoFilter,
                                          compressPolicy,  isaAndTransports, signature};
  return kDecoders;
}

}  // namespace braid
