// libibverbs, loaded at run time (dlopen of libibverbs.so.1) so that Braid links no RDMA
// library and loads where rdma-core is absent. The header's inline calls (ibv_post_send,
// ibv_poll_cq, ibv_req_notify_cq ...) go through the device's own function table and need no
// symbol; every exported function Braid calls is taken from the library here, by name.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace braid::transport::ib {

struct Verbs {
  ibv_device** (*getDeviceList)(int* count);
  void (*freeDeviceList)(ibv_device** list);
  const char* (*getDeviceName)(ibv_device* device);
  ibv_context* (*openDevice)(ibv_device* device);
  int (*closeDevice)(ibv_context* context);
  int (*queryDevice)(ibv_context* context, ibv_device_attr* attr);
  // The library's exported ibv_query_port takes the struct without the fields newer headers
  // append; the header's inline wrapper would call it by symbol, so it is called directly.
  int (*queryPort)(ibv_context* context, uint8_t port, ibv_port_attr* attr);
  int (*queryGid)(ibv_context* context, uint8_t port, int index, ibv_gid* gid);
  ibv_pd* (*allocPd)(ibv_context* context);
  int (*deallocPd)(ibv_pd* pd);
  ibv_mr* (*regMr)(ibv_pd* pd, void* addr, size_t length, int access);
  int (*deregMr)(ibv_mr* mr);
  ibv_comp_channel* (*createCompChannel)(ibv_context* context);
  int (*destroyCompChannel)(ibv_comp_channel* channel);
  ibv_cq* (*createCq)(ibv_context* context, int cqe, void* cqContext, ibv_comp_channel* channel,
                      int vector);
  int (*destroyCq)(ibv_cq* cq);
  ibv_qp* (*createQp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*modifyQp)(ibv_qp* qp, ibv_qp_attr* attr, int mask);
  int (*destroyQp)(ibv_qp* qp);
  int (*getCqEvent)(ibv_comp_channel* channel, ibv_cq** cq, void** cqContext);
  void (*ackCqEvents)(ibv_cq* cq, unsigned int events);
  const char* (*wcStatusStr)(ibv_wc_status status);
};

// The library's functions, or null when it cannot be loaded (`why` then says why: the
// dlopen or dlsym error). Loaded once per process.
const Verbs* verbs(std::string* why = nullptr);

}  // namespace braid::transport::ib
