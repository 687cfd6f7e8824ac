// StreamOps with the CUDA runtime, for one communicator's device.
#pragma once

#include <memory>

#include "core/device/stream_ops.h"

namespace braid::cuda {

Status makeStreamOps(int device, std::unique_ptr<device::StreamOps>* out);

}  // namespace braid::cuda
