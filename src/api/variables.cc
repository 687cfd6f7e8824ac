#include "api/variables.h"

#include <algorithm>
#include <cstring>

#include "base/variables.h"
#include "compress/variables.h"
#include "core/variables.h"
#include "kernels/variables.h"
#include "topo/variables.h"
#include "transport/registry.h"

namespace braid {

std::vector<const env::Var*> allVariables() {
  std::vector<const env::Var*> all;
  for (env::List list : {env::baseVariables(), env::kernelsVariables(), env::compressVariables(),
                         env::topoVariables(), env::coreVariables()})
    all.insert(all.end(), list.begin(), list.end());
  for (const env::Var* v : transport::variables()) all.push_back(v);
  auto braidOwn = [](const env::Var* v) { return std::strncmp(v->name, "NCCL_", 5) != 0; };
  std::sort(all.begin(), all.end(), [&](const env::Var* a, const env::Var* b) {
    return braidOwn(a) != braidOwn(b) ? braidOwn(b) : std::strcmp(a->name, b->name) < 0;
  });
  return all;
}

}  // namespace braid
