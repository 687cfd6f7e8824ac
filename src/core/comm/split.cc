#include "core/comm/split.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "core/bootstrap/bootstrap.h"

namespace braid {
namespace {

constexpr uint64_t kTagSplitId = 0x73706c6974ull;   // "split"
constexpr uint64_t kTagShrinkId = 0x736872696eull;  // "shrin"

// The leader (a member every member names the same way) creates the child's id and sends it
// to the other members, who wait for it. Only members talk, so excluded ranks may be dead.
Status shareId(ncclComm* parent, int leader, const std::vector<int>& members, uint64_t tag,
               ncclUniqueId* id) {
  if (parent->rank == leader) {
    BRAID_TRY(createUniqueId(id));
    for (int m : members) {
      if (m == leader) continue;
      BRAID_TRY(parent->bootstrap->send(m, tag, id, sizeof(*id))
                    .withContext(strfmt("sending the new communicator's id to rank %d", m)));
    }
    return Status::Ok();
  }
  BRAID_TRY(parent->bootstrap->recv(leader, tag, id, sizeof(*id))
                .withContext(strfmt("waiting for the new communicator's id from rank %d", leader)));
  return validateUniqueId(*id).withContext(strfmt("the id rank %d sent", leader));
}

Status joinChild(ncclComm* parent, const std::vector<int>& members, int leader, uint64_t tag,
                 InitRequest request, ncclComm** out) {
  auto self = std::find(members.begin(), members.end(), parent->rank);
  if (self == members.end())
    return internalError("rank %d is not a member of its own group", parent->rank);
  BRAID_TRY(shareId(parent, leader, members, tag, &request.id));
  request.nranks = static_cast<int>(members.size());
  request.rank = static_cast<int>(self - members.begin());
  request.hostRoot = false;           // the leader's createUniqueId started the root
  request.cudaDev = parent->cudaDev;  // NCCL: the child lives on its parent's device
  request.staggered = true;
  return createComm(request, out);
}

}  // namespace

Status splitComm(ncclComm* parent, int color, int key, InitRequest request, ncclComm** out) {
  *out = nullptr;
  struct Entry {
    int32_t color, key;
  };
  std::vector<Entry> all(parent->nranks);
  all[parent->rank] = {color, key};
  BRAID_TRY(parent->bootstrap->allGather(all.data(), sizeof(Entry))
                .withContext("exchanging colors and keys"));
  if (color < 0) return Status::Ok();  // NCCL_SPLIT_NOCOLOR: took part, gets no communicator

  std::vector<int> members;
  for (int r = 0; r < parent->nranks; ++r)
    if (all[r].color == color) members.push_back(r);
  // Ties on key keep the parent's order.
  std::stable_sort(members.begin(), members.end(),
                   [&](int a, int b) { return all[a].key < all[b].key; });
  const int leader = *std::min_element(members.begin(), members.end());
  BRAID_INFO(kInit, "split: rank %d color %d key %d -> %zu ranks", parent->rank, color, key,
             members.size());
  return joinChild(parent, members, leader, kTagSplitId, std::move(request), out);
}

Status duplicateComm(ncclComm* parent, uint64_t tag, ncclComm** out) {
  *out = nullptr;
  std::vector<int> members(parent->nranks);
  for (int r = 0; r < parent->nranks; ++r) members[r] = r;
  InitRequest request;
  request.config = parent->config;
  request.config.blocking = true;
  request.twinOf = parent;
  return joinChild(parent, members, 0, tag, std::move(request), out);
}

Status shrinkComm(ncclComm* parent, std::span<const int> excluded, InitRequest request,
                  ncclComm** out) {
  *out = nullptr;
  std::vector<int> members;
  for (int r = 0; r < parent->nranks; ++r)
    if (std::find(excluded.begin(), excluded.end(), r) == excluded.end()) members.push_back(r);
  BRAID_INFO(kInit, "shrink: rank %d, %zu of %d ranks remain", parent->rank, members.size(),
             parent->nranks);
  return joinChild(parent, members, members.front(), kTagShrinkId, std::move(request), out);
}

void stopCallsInFlight(ncclComm* parent) {
  parent->revoked.store(true);
  parent->waitForCalls();
}

}  // namespace braid
