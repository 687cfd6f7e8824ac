#include "transport/ib/verbs.h"

#include <dlfcn.h>

#include <mutex>

namespace braid::transport::ib {
namespace {

struct Loaded {
  Verbs verbs{};
  bool ok = false;
  std::string why;
};

template <typename Fn>
bool bind(void* lib, const char* name, Fn* out, std::string* why) {
  void* sym = dlsym(lib, name);
  if (!sym) {
    *why = std::string("libibverbs.so.1 has no ") + name;
    return false;
  }
  *out = reinterpret_cast<Fn>(sym);
  return true;
}

Loaded load() {
  Loaded l;
  // Kept open for the life of the process: providers and device contexts point into it.
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    l.why = err ? err : "dlopen(libibverbs.so.1) failed";
    return l;
  }
  Verbs& v = l.verbs;
  l.ok = bind(lib, "ibv_get_device_list", &v.getDeviceList, &l.why) &&
         bind(lib, "ibv_free_device_list", &v.freeDeviceList, &l.why) &&
         bind(lib, "ibv_get_device_name", &v.getDeviceName, &l.why) &&
         bind(lib, "ibv_open_device", &v.openDevice, &l.why) &&
         bind(lib, "ibv_close_device", &v.closeDevice, &l.why) &&
         bind(lib, "ibv_query_device", &v.queryDevice, &l.why) &&
         bind(lib, "ibv_query_port", &v.queryPort, &l.why) &&
         bind(lib, "ibv_query_gid", &v.queryGid, &l.why) &&
         bind(lib, "ibv_alloc_pd", &v.allocPd, &l.why) &&
         bind(lib, "ibv_dealloc_pd", &v.deallocPd, &l.why) &&
         bind(lib, "ibv_reg_mr", &v.regMr, &l.why) &&
         bind(lib, "ibv_dereg_mr", &v.deregMr, &l.why) &&
         bind(lib, "ibv_create_comp_channel", &v.createCompChannel, &l.why) &&
         bind(lib, "ibv_destroy_comp_channel", &v.destroyCompChannel, &l.why) &&
         bind(lib, "ibv_create_cq", &v.createCq, &l.why) &&
         bind(lib, "ibv_destroy_cq", &v.destroyCq, &l.why) &&
         bind(lib, "ibv_create_qp", &v.createQp, &l.why) &&
         bind(lib, "ibv_modify_qp", &v.modifyQp, &l.why) &&
         bind(lib, "ibv_destroy_qp", &v.destroyQp, &l.why) &&
         bind(lib, "ibv_get_cq_event", &v.getCqEvent, &l.why) &&
         bind(lib, "ibv_ack_cq_events", &v.ackCqEvents, &l.why) &&
         bind(lib, "ibv_wc_status_str", &v.wcStatusStr, &l.why);
  return l;
}

}  // namespace

const Verbs* verbs(std::string* why) {
  static const Loaded loaded = load();
  if (!loaded.ok && why) *why = loaded.why;
  return loaded.ok ? &loaded.verbs : nullptr;
}

}  // namespace braid::transport::ib
