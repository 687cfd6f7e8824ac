#include "transport/registry.h"

#include <cstring>
#include <string>

#include "base/env.h"
#include "base/log.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace braid::transport {
namespace {

// BRAID_TRANSPORTS: a comma list restricting which transports may be used (tests use it to run
// threads as ranks over TCP, say). Unset: all of them.
bool allowed(std::string_view name) {
  const char* list = env::get("BRAID_TRANSPORTS");
  if (!list || !*list) return true;
  std::string s(list);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (strcasecmp(tok.c_str(), std::string(name).c_str()) == 0) return true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return false;
}

}  // namespace

Status createTransports(std::vector<std::unique_ptr<Transport>>* out) {
  std::vector<std::unique_ptr<Transport>> all;
  all.push_back(makeLoopbackTransport());
  all.push_back(makeShmTransport());
  std::unique_ptr<Transport> tcp;
  BRAID_TRY(createTcpTransport(&tcp));
  all.push_back(std::move(tcp));
  out->clear();
  for (auto& t : all)
    if (allowed(t->name())) out->push_back(std::move(t));
  return Status::Ok();
}

}  // namespace braid::transport
