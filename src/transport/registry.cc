#include "transport/registry.h"

#include <strings.h>

#include <algorithm>
#include <string>

#include "transport/ib/ib_transport.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace braid::env {
const Var kBraidTransports = {
    "BRAID_TRANSPORTS", nullptr,
    "comma list of the transports that may be used (loopback, shm, ib, tcp); unset: all"};
}  // namespace braid::env

namespace braid::transport {
namespace {

// One line per transport, in preference order.
constexpr const TransportEntry* kRegistered[] = {&kLoopbackTransport, &kShmTransport,
#if BRAID_HAVE_IBVERBS
                                                 &kIbTransport,
#endif
                                                 &kTcpTransport};

bool sameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool allowed(std::string_view name) {
  const char* list = env::get(env::kBraidTransports);
  return !list || !*list || transportListAllows(list, name);
}

}  // namespace

bool transportListAllows(std::string_view list, std::string_view name) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (sameName(list.substr(0, comma), name)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::span<const TransportEntry* const> registered() { return kRegistered; }

const TransportEntry* find(std::string_view name) {
  for (const TransportEntry* e : kRegistered)
    if (sameName(e->name, name)) return e;
  return nullptr;
}

Status createTransports(std::vector<std::unique_ptr<Transport>>* out) {
  out->clear();
  for (const TransportEntry* e : kRegistered) {
    if (!allowed(e->name)) continue;
    std::unique_ptr<Transport> t;
    BRAID_TRY(e->create(&t));
    out->push_back(std::move(t));
  }
  return Status::Ok();
}

std::vector<const env::Var*> variables() {
  std::vector<const env::Var*> all = {&env::kBraidTransports};
  for (const TransportEntry* e : kRegistered)
    for (const env::Var* v : e->variables)
      if (std::find(all.begin(), all.end(), v) == all.end()) all.push_back(v);
  return all;
}

}  // namespace braid::transport
