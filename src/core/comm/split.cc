#include "core/comm/split.h"

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "core/bootstrap/bootstrap.h"

namespace braid {
namespace {

constexpr uint64_t kTagSplitId = 0x73706c6974ull;   // "split"
constexpr uint64_t kTagShrinkId = 0x736872696eull;  // "shrin"
constexpr uint64_t kTagGrowId = 0x67726f77ull;      // "grow"

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

Status growComm(ncclComm* parent, int nranks, const ncclUniqueId* id, InitRequest request,
                ncclComm** out) {
  *out = nullptr;
  struct Entry {
    int32_t holdsId, nranks;
  };
  std::vector<Entry> all(parent->nranks);
  all[parent->rank] = {id != nullptr, nranks};
  BRAID_TRY(parent->bootstrap->allGather(all.data(), sizeof(Entry))
                .withContext("ncclCommGrow: exchanging who holds the id"));
  std::vector<int> holders;
  for (int r = 0; r < parent->nranks; ++r) {
    if (all[r].holdsId) holders.push_back(r);
    if (all[r].nranks != nranks)
      return invalidUsage("ncclCommGrow: rank %d grows to %d ranks, rank %d to %d", r,
                          all[r].nranks, parent->rank, nranks);
  }
  if (holders.empty())
    return invalidUsage(
        "ncclCommGrow: no existing rank passed the id (the root passes the one "
        "ncclCommGetUniqueId made, the others NULL)");
  if (holders.size() > 1) {
    std::string who;
    for (int r : holders) who += strfmt("%s%d", who.empty() ? "" : ", ", r);
    return invalidUsage("ncclCommGrow: ranks %s all passed an id; exactly one (the root) may",
                        who.c_str());
  }
  const int root = holders.front();
  if (parent->rank == root) {
    request.id = *id;
    for (int r = 0; r < parent->nranks; ++r) {
      if (r == root) continue;
      BRAID_TRY(parent->bootstrap->send(r, kTagGrowId, id, sizeof(*id))
                    .withContext(strfmt("ncclCommGrow: sending the id to rank %d", r)));
    }
  } else {
    BRAID_TRY(parent->bootstrap->recv(root, kTagGrowId, &request.id, sizeof(request.id))
                  .withContext(strfmt("ncclCommGrow: waiting for the id from rank %d", root)));
    BRAID_TRY(validateUniqueId(request.id).withContext(strfmt("the id rank %d sent", root)));
  }
  BRAID_INFO(kInit, "grow: rank %d of %d joins a communicator of %d ranks", parent->rank,
             parent->nranks, nranks);
  request.nranks = nranks;
  request.rank = parent->rank;
  request.hostRoot = false;  // ncclCommGetUniqueId started the root in the root's process
  request.cudaDev = parent->cudaDev;
  return createComm(request, out);
}

void stopCallsInFlight(ncclComm* parent) {
  parent->revoked.store(true);
  parent->waitForCalls();
}

}  // namespace braid
