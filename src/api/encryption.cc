// ncclSetEncryption (NCCL 2.32): TLS with a pre-shared key on the library's TCP traffic.
#include <cstring>

#include "api/guard.h"
#include "core/comm/config.h"

using braid::Status;
using braid::api::guard;

BRAID_API(ncclResult_t, ncclSetEncryption, const ncclEncryptionConfig_t* config) {
  braid::api::noteClient232();
  return guard(nullptr, "ncclSetEncryption", [&]() -> Status {
    if (!config) return braid::invalidArgument("config is NULL");
    size_t size = 0;
    BRAID_TRY(braid::readStructHeader(config, sizeof(ncclEncryptionConfig_t), "config",
                                      "ncclEncryptionConfig_t",
                                      "NCCL_ENCRYPTION_CONFIG_INITIALIZER", &size));
    if (config->mode == NCCL_ENCRYPTION_MODE_NONE) return Status::Ok();
    if (config->mode != NCCL_ENCRYPTION_MODE_PSK)
      return braid::invalidArgument(
          "config->mode %d is neither NCCL_ENCRYPTION_MODE_NONE (0) nor "
          "NCCL_ENCRYPTION_MODE_PSK (1)",
          config->mode);
    return braid::invalidUsage("TLS encryption is not implemented in Braid %s yet",
                               BRAID_VERSION_STRING);
  });
}
