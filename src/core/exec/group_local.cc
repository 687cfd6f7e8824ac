// What a group needs before anything moves: PreMulSum's scaled input, snapshots of sends that a
// receive of the same group overwrites, and sends to self (run.h says how Run's members are laid
// out).
#include <cstring>

#include "core/comm/comm.h"
#include "core/exec/run.h"
#include "kernels/reduce.h"

namespace braid::exec {

// PreMulSum: the input, times the scalar, into a buffer of the plan's own.
void Run::scaleInput(Plan& plan) {
  plan.privateInput.resize(plan.inputCount * kernels::typeSize(plan.type));
  const void* scalar = plan.scalarPtr ? plan.scalarPtr : &plan.scalarBits;
  kernels::scale(plan.privateInput.data(), plan.sendbuff, plan.inputCount, plan.type, scalar);
  plan.sendbuff = plan.privateInput.data();
}

// Operations of a group run concurrently, so a send whose buffer a receive of the same group
// overwrites (in-place send/recv, as nccl-tests' sendrecv does) sends a snapshot instead.
void Run::snapshotOverlappingSends() {
  auto range = [](const Plan& p, const void* base) {
    const char* b = static_cast<const char*>(base);
    return std::make_pair(b, b + p.count * kernels::typeSize(p.type));
  };
  for (Plan& send : plans_) {
    if (send.coll != algos::Collective::Send) continue;
    auto [s0, s1] = range(send, send.sendbuff);
    for (const Plan& recv : plans_) {
      if (recv.coll != algos::Collective::Recv || recv.comm != send.comm) continue;
      auto [r0, r1] = range(recv, recv.recvbuff);
      if (s0 < r1 && r0 < s1) {
        send.privateInput.assign(s0, s1);
        send.sendbuff = send.privateInput.data();
        break;
      }
    }
  }
}

// NCCL lets a rank send to itself (a ring of pairs on one rank, an all-to-all made of Send/Recv
// pairs): there is no connection to itself, so the k-th self Send of a communicator is copied
// into its k-th self Recv here. Sends were snapshotted already where a Recv overwrites them.
Status Run::sendToSelf() {
  // Other ranks of the group may be waiting on this one: they hear of the mismatch as of any
  // other (the loop below never runs to tell them).
  auto mismatch = [&](const Plan& plan, const Status& st) {
    if (plan.comm->checkMismatch)
      plan.comm->broadcastFailure(strfmt("rank %d: %s", plan.comm->rank, st.message().c_str()));
    return failed(plan, st);
  };
  for (uint32_t r = 0; r < plans_.size(); ++r) {
    Plan& recv = plans_[r];
    if (recv.coll != algos::Collective::Recv || recv.root != recv.comm->rank) continue;
    uint32_t s = 0;
    for (; s < plans_.size(); ++s) {
      const Plan& send = plans_[s];
      if (send.coll == algos::Collective::Send && send.comm == recv.comm &&
          send.root == send.comm->rank && !state_[s].done)
        break;
    }
    if (s == plans_.size())
      return mismatch(recv,
                      invalidUsage("a receive from this rank itself needs a matching ncclSend "
                                   "to itself in the same group"));
    const Plan& send = plans_[s];
    if (send.count != recv.count || send.type != recv.type)
      return mismatch(recv, invalidUsage("%s from itself meets %s", describe(recv).c_str(),
                                         describe(send).c_str()));
    std::memmove(recv.recvbuff, send.sendbuff, recv.count * kernels::typeSize(recv.type));
    state_[r].done = state_[s].done = true;
  }
  for (uint32_t s = 0; s < plans_.size(); ++s) {
    const Plan& send = plans_[s];
    if (send.coll == algos::Collective::Send && send.root == send.comm->rank && !state_[s].done)
      return mismatch(send,
                      invalidUsage("a send to this rank itself needs a matching ncclRecv from "
                                   "itself in the same group"));
  }
  return Status::Ok();
}

}  // namespace braid::exec
