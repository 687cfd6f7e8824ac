// Call signatures: every rank sends each peer it talks to in an operation a 64-bit summary of
// the call it made (collective, type, op, root, count) plus the operation's number on that pair,
// and checks what it receives against what the peer should have called. A mismatch (the classic
// bug that makes NCCL hang or corrupt memory) becomes ncclInvalidUsage naming both calls.
#pragma once

#include <cstdint>
#include <string>

namespace braid {

struct Plan;

// Layout: collective 4 bits | type 4 | op 4 (0-4 built-in, 5 PreMulSum, 15 none) |
//         root 12 (0xfff none) | count 40.
// A compressed AllReduce puts 0x800 | Plan::compressTag (codec id << 8 | a hash of its
// parameters) in the root field.
uint64_t signatureOf(const Plan& plan);
// What a matching peer sends: the same call, except that a Send meets a Recv naming us.
uint64_t expectedSignature(const Plan& plan, int myRank);
// "ncclAllReduce(count=16, float, sum)", "ncclSend(count=4, int32, peer=3)".
std::string describeSignature(uint64_t signature);

}  // namespace braid
