// The transports Braid has, in preference order: for each peer, the first whose canConnect()
// accepts it serves that peer. Each transport registers itself with one entry (its folder's
// header declares it, the list in registry.cc names it): how it is called in BRAID_TRANSPORTS,
// how to make it, and the environment variables it reads. Adding a transport touches its
// folder, one line here, its line in the endpoint contract tests and its README row.
#pragma once

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/env.h"
#include "transport/transport.h"

namespace braid::env {
extern const Var kBraidTransports;
}  // namespace braid::env

namespace braid::transport {

struct TransportEntry {
  std::string_view name;  // as BRAID_TRANSPORTS spells it (case does not matter)
  // Makes the transport, configured by the environment; fails naming a variable set wrongly.
  Status (*create)(std::unique_ptr<Transport>* out);
  env::List variables;
};

// BRAID_TRANSPORTS: a comma list of transport names (any case) restricting which transports
// may be used (tests use it to run threads as ranks over TCP, say); unset or empty: all of them.
// Whether a non-empty `list` names `name`.
bool transportListAllows(std::string_view list, std::string_view name);

// Every registered transport, in preference order.
std::span<const TransportEntry* const> registered();
// The entry called `name` (case does not matter), or null.
const TransportEntry* find(std::string_view name);
// The transports BRAID_TRANSPORTS allows (all when unset), in preference order.
Status createTransports(std::vector<std::unique_ptr<Transport>>* out);
// BRAID_TRANSPORTS and every registered transport's variables.
std::vector<const env::Var*> variables();

}  // namespace braid::transport
