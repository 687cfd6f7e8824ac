// ncclSetEncryption (NCCL 2.32): TLS with a pre-shared key on the library's TCP traffic.
#include <cstring>

#include "api/guard.h"
#include "base/net/tls.h"
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
    // TLS 1.3 with the key on every TCP connection opened from now on (base/net/tls.h).
    return braid::net::setEncryption(config->mode, config->psk).withContext("config");
  });
}
