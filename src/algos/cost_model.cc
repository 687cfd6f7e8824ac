#include "algos/cost_model.h"

#include <algorithm>
#include <vector>

namespace braid::algos {

CostParams sharedMemoryCost() {
  CostParams p;
  p.link = {0.5, 1.0 / 8e3};  // ~0.5 us per message, ~8 GB/s through a ring
  p.gammaUsPerByte = 1.0 / 12e3;
  p.copyUsPerByte = 1.0 / 12e3;
  return p;
}

CostParams tcpCost() {
  CostParams p;
  p.link = {20.0, 1.0 / 2e3};  // loopback TCP: ~20 us per message, ~2 GB/s
  p.gammaUsPerByte = 1.0 / 12e3;
  p.copyUsPerByte = 1.0 / 12e3;
  return p;
}

double estimateMicroseconds(const Schedule& s, size_t typeSize, const CostParams& c) {
  std::vector<double> finish(s.steps.size(), 0.0);
  double end = 0.0;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& st = s.steps[i];
    double start = 0.0;
    for (uint32_t k = 0; k < st.depCount; ++k) start = std::max(start, finish[s.deps[st.depBegin + k]]);
    const double bytes = static_cast<double>(std::max(st.src.count, st.dst.count) * typeSize);
    double cost = 0.0;
    switch (st.kind) {
      case StepKind::Send:
      case StepKind::Recv: cost = c.link.alphaUs + bytes * c.link.betaUsPerByte; break;
      case StepKind::RecvReduce:
        cost = c.link.alphaUs + bytes * (c.link.betaUsPerByte + c.gammaUsPerByte);
        break;
      case StepKind::Reduce:
      case StepKind::FinishAvg: cost = bytes * c.gammaUsPerByte; break;
      case StepKind::Copy: cost = bytes * c.copyUsPerByte; break;
    }
    finish[i] = start + cost;
    end = std::max(end, finish[i]);
  }
  return end;
}

}  // namespace braid::algos
