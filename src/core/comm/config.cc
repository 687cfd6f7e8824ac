#include "core/comm/config.h"

#include <algorithm>
#include <climits>
#include <cstring>

namespace braid {

Status readStructHeader(const void* user, size_t minSize, const char* name, const char* type,
                        const char* initializer, size_t* size) {
  struct Header {
    size_t size;
    unsigned magic;
    unsigned version;
  };
  Header h;
  std::memcpy(&h.size, user, sizeof(h.size));  // the caller's struct may be smaller than ours
  if (h.size < std::max(minSize, sizeof(Header)))
    return invalidArgument("%s->size %zu is too small for an %s", name, h.size, type);
  std::memcpy(&h, user, sizeof(h));
  if (h.magic != kConfigMagic)
    return invalidArgument("%s->magic 0x%x is not 0xcafebeef: initialise it with %s", name,
                           h.magic, initializer);
  *size = h.size;
  return Status::Ok();
}

Status readConfig(const ncclConfig_t* user, CommConfig* out) {
  *out = CommConfig{};
  if (!user) return Status::Ok();
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  size_t size = 0;
  BRAID_TRY(readStructHeader(user, offsetof(ncclConfig_t, blocking), "config", "ncclConfig_t",
                             "NCCL_CONFIG_INITIALIZER", &size));
  std::memcpy(&cfg, user, std::min(size, sizeof(cfg)));
  const unsigned v = cfg.version;
  out->clientVersion = v;
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

Status readCollConfig(const ncclCollConfig_t* user, CollConfig* out) {
  *out = CollConfig{};
  if (!user) return Status::Ok();
  ncclCollConfig_t cfg = NCCL_COLLCONFIG_INITIALIZER;
  size_t size = 0;
  BRAID_TRY(readStructHeader(user, offsetof(ncclCollConfig_t, ext), "config", "ncclCollConfig_t",
                             "NCCL_COLLCONFIG_INITIALIZER", &size));
  std::memcpy(&cfg, user, std::min(size, sizeof(cfg)));
  if (cfg.version < 23200)
    return invalidArgument("config->version %u predates ncclCollConfig_t (NCCL 2.32)",
                           cfg.version);
  if (cfg.forceAlgSelection != 0 && cfg.forceAlgSelection != 1)
    return invalidArgument("config->forceAlgSelection %d is neither 0 nor 1",
                           cfg.forceAlgSelection);
  if (cfg.algSelection && strnlen(cfg.algSelection, 4097) > 4096)
    return invalidArgument("config->algSelection is longer than 4096 characters");
  out->algSelection = cfg.algSelection && *cfg.algSelection ? cfg.algSelection : nullptr;
  out->forceAlgSelection = cfg.forceAlgSelection == 1;
  out->launchCompletionEvent = cfg.launchCompletionEvent;
  out->userProfilerTag = cfg.userProfilerTag;
  out->clientVersion = cfg.version;
  return Status::Ok();
}

}  // namespace braid
