// The Python module braid_torch._C: the backend's constructor (which braid_torch/__init__.py
// registers with torch.distributed) and what the package reads back from a group.
#include <torch/csrc/utils/pybind.h>

#include "process_group.h"

namespace py = pybind11;

namespace {

braid_torch::ProcessGroupBraid& asBraid(braid_torch::BackendBase* group) {
  auto* braid = dynamic_cast<braid_torch::ProcessGroupBraid*>(group);
  if (!braid) throw std::invalid_argument("braid: not a process group of the braid backend");
  return *braid;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  // torch's bindings register ProcessGroup/Backend, Store and Work with pybind11 first.
  py::module_::import("torch.distributed");
  // A group's destructor waits for its completion thread, which may need the GIL.
  braid_torch::ProcessGroupBraid::setWithoutGil([](const std::function<void()>& fn) {
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      fn();
    } else {
      fn();
    }
  });

  m.def(
      "_create",
      [](c10d::Store& store, int rank, int size, int64_t timeoutMs, std::string compression,
         int64_t compressMinBytes, int priority) -> c10::intrusive_ptr<braid_torch::BackendBase> {
        braid_torch::Config config;
        config.timeout = std::chrono::milliseconds(timeoutMs);
        config.compression = std::move(compression);
        config.compressMinBytes = compressMinBytes;
        config.priority = priority;
        return c10::make_intrusive<braid_torch::ProcessGroupBraid>(store, rank, size,
                                                                   std::move(config));
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"),
      py::arg("compression"), py::arg("compress_min_bytes"), py::arg("priority"),
      py::call_guard<py::gil_scoped_release>());

  m.def(
      "_compression_stats",
      [](braid_torch::BackendBase* group) {
        braidCompressStats_t s = asBraid(group).compressionStats();
        py::dict d;
        d["compressed_calls"] = s.compressedCalls;
        d["exact_calls"] = s.exactCalls;
        d["residual_bytes"] = s.residualBytes;
        d["residual_entries"] = s.residualEntries;
        return d;
      },
      py::arg("group"));

  m.attr("torch_version_major") = TORCH_VERSION_MAJOR;
}
