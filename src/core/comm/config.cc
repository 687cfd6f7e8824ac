#include "core/comm/config.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace braid {

Status readConfig(const ncclConfig_t* user, CommConfig* out) {
  *out = CommConfig{};
  if (!user) return Status::Ok();
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  size_t size = 0;
  std::memcpy(&size, &user->size, sizeof(size));  // the caller's struct may be smaller than ours
  if (size < offsetof(ncclConfig_t, blocking))
    return invalidArgument("config->size %zu is too small for an ncclConfig_t", size);
  if (user->magic != kConfigMagic)
    return invalidArgument(
        "config->magic 0x%x is not 0xcafebeef: initialise the config with "
        "NCCL_CONFIG_INITIALIZER",
        user->magic);
  std::memcpy(&cfg, user, std::min(size, sizeof(cfg)));
  const unsigned v = cfg.version;
  // Fields newer than the caller's header are undefined, whatever bytes follow.
  if (v < 21400) cfg.blocking = NCCL_CONFIG_UNDEF_INT;
  if (v < 21700) cfg.netName = nullptr;
  if (v < 21900) cfg.commName = nullptr;

  if (cfg.blocking != NCCL_CONFIG_UNDEF_INT) {
    if (cfg.blocking != 0 && cfg.blocking != 1)
      return invalidArgument("config->blocking %d is neither 0 nor 1", cfg.blocking);
    out->blocking = cfg.blocking == 1;
  }
  if (cfg.commName) out->name = cfg.commName;
  return Status::Ok();
}

}  // namespace braid
