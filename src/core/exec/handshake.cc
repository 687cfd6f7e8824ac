// Which peers each plan exchanges signatures with, and the slots that carry them (set up once
// per execution; handshake.h has what runs per message).
#include "core/exec/handshake.h"

namespace braid::exec {

// A collective checks its signature with other ranks, so that each of them sees a mismatch
// (a rank that only talks to ranks that agree with it would otherwise finish happily).
// Broadcast, Reduce, Gather and Scatter check with every rank: a rank there may finish without
// anything from the rank whose call differs. A call whose every output needs every input
// (algos::needsEveryInput) checks only with the peers it exchanges data with, in both
// directions: the rank whose call differs, or the first rank on each side of a group of ranks
// that differ from the rest, is then checked by a peer that stops, and tells every rank
// (broadcastFailure); a rank no such peer checks waits for data that passes one and hears it.
// A schedule with no peers checks with every rank. Point-to-point operations check only
// their peer. (A ring of 8: 16 signatures a call instead of 56; on the emulated cluster that
// was most of a small call's time, bench/results/netcluster_small_messages.md.)
Status Run::addSignatures(uint32_t plan) {
  const Plan& p = plans_[plan];
  const bool p2p = p.coll == algos::Collective::Send || p.coll == algos::Collective::Recv;
  auto check = [&](int peer) {
    ChannelQueue* q = queueFor(p.comm, peer);
    if (!q) return failed(p, internalError("no connection to rank %d", peer));
    addSignature(*q, plan, p.coll != algos::Collective::Recv, p.coll != algos::Collective::Send);
    return Status::Ok();
  };
  if (algos::needsEveryInput(p.coll) && !p.schedule->peers.empty()) {
    for (int peer : p.schedule->peers) BRAID_TRY(check(peer));
    return Status::Ok();
  }
  for (int peer = 0; peer < p.comm->nranks; ++peer)
    if (peer != p.comm->rank && (!p2p || peer == p.root)) BRAID_TRY(check(peer));
  return Status::Ok();
}

// Every Recv's announcement to its sender, and every Send's wait for one, ahead of everything
// else of this execution on their channels.
Status Run::announceReceives() {
  for (uint32_t p = 0; p < plans_.size(); ++p) {
    const Plan& plan = plans_[p];
    const bool send = plan.coll == algos::Collective::Send,
               recv = plan.coll == algos::Collective::Recv;
    if (!plan.comm->checkMismatch || state_[p].done || !(send || recv)) continue;
    ChannelQueue* q = queueFor(plan.comm, plan.root);
    if (!q) return failed(plan, internalError("no connection to rank %d", plan.root));
    addSignature(*q, p, recv, send, true);
  }
  return Status::Ok();
}

void Run::addSignature(ChannelQueue& q, uint32_t plan, bool sends, bool receives,
                       bool announcement) {
  const Plan& p = plans_[plan];
  PeerChannel& ch = p.comm->channels[q.peer];
  SignatureSlot slot{};
  slot.plan = plan;
  slot.sends = sends;
  slot.receives = receives;
  slot.announcement = announcement;
  StepRef ref{plan, kSignature + static_cast<uint32_t>(q.signatures.size())};
  if (sends) {
    slot.out[0] = signatureOf(p);
    slot.out[1] = announcement ? ++ch.announcementsSent : ++ch.signaturesSent;
    q.sends.push_back(ref);
    ++pending_;
  }
  if (receives) {
    slot.expected[0] = expectedSignature(p, p.comm->rank);
    slot.expected[1] = announcement ? ++ch.announcementsReceived : ++ch.signaturesReceived;
    q.recvs.push_back(ref);
    ++pending_;
  }
  q.signatures.push_back(slot);
}

}  // namespace braid::exec
