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
  std::sort(all.begin(), all.end(), [&](const env::Var* a, const env::Var* b) {
    const bool ab = std::strncmp(a->name, "NCCL_", 5) != 0,
               bb = std::strncmp(b->name, "NCCL_", 5) != 0;
    return ab != bb ? bb : std::strcmp(a->name, b->name) < 0;
  });
  return all;
}

}  // namespace braid
