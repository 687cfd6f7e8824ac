// Strangers at a running job's ports change nothing: while two ranks run an AllReduce loop over
// TCP, every socket they listen on (the bootstrap's, the transport's) is sent random bytes, huge
// length fields, half a hello, and connections that stay silent; every call still succeeds with
// the right values.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/ranks.h"

namespace braid {
namespace {

struct Shared {
  std::atomic<int> pid[2];
  std::atomic<int> calls[2];
  std::atomic<bool> stop;
  std::atomic<int> wrong;
  std::atomic<int> ports, rounds;
};

// Socket inodes a process holds (/proc/<pid>/fd -> "socket:[inode]").
std::set<unsigned long> socketInodes(int pid) {
  std::set<unsigned long> out;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char target[128] = {};
    const std::string path = dir + "/" + e->d_name;
    if (readlink(path.c_str(), target, sizeof target - 1) <= 0) continue;
    unsigned long inode = 0;
    if (std::sscanf(target, "socket:[%lu]", &inode) == 1) out.insert(inode);
  }
  closedir(d);
  return out;
}

// Loopback TCP ports in LISTEN state (0A) whose socket one of `pids` holds.
std::vector<int> listeningPorts(const std::vector<int>& pids) {
  std::set<unsigned long> inodes;
  for (int pid : pids)
    for (unsigned long i : socketInodes(pid)) inodes.insert(i);
  std::vector<int> ports;
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // header
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retr;
    unsigned long uid = 0, timeout = 0, inode = 0;
    in >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
    if (state != "0A" || !inodes.count(inode)) continue;
    ports.push_back(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One round of abuse at one port; silent connections are returned to be held open.
void abuse(int port, std::mt19937& rng, std::vector<int>* silent) {
  std::vector<uint8_t> junk(4096);
  for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
  if (int fd = dial(port); fd >= 0) {  // random bytes
    (void)!write(fd, junk.data(), junk.size());
    close(fd);
  }
  if (int fd = dial(port); fd >= 0) {  // a header whose length field says 2^63
    uint64_t header[4] = {rng(), uint64_t{1} << 63, ~uint64_t{0}, rng()};
    (void)!write(fd, header, sizeof header);
    close(fd);
  }
  if (int fd = dial(port); fd >= 0) {  // half a hello
    (void)!write(fd, junk.data(), 5);
    close(fd);
  }
  if (int fd = dial(port); fd >= 0) silent->push_back(fd);  // says nothing, stays open
}

TEST(Garbage, StrangersAtEveryPortDuringAnAllReduceLoopChangeNothing) {
  constexpr int kCalls = 400;
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  new (shared) Shared{};

  // The attacker is a process of its own, forked while this one has no other thread.
  const pid_t attacker = fork();
  if (attacker == 0) {
    // Once both ranks are in their loop, every port they listen on is abused a few times over.
    while (!shared->stop && (shared->calls[0] < 10 || shared->calls[1] < 10)) usleep(1000);
    const std::vector<int> ports = listeningPorts({shared->pid[0], shared->pid[1]});
    shared->ports = static_cast<int>(ports.size());
    std::mt19937 rng(21);
    std::vector<int> silent;
    for (int round = 0; round < 5; ++round, ++shared->rounds)
      for (int port : ports) abuse(port, rng, &silent);
    const int before = shared->calls[0];
    while (!shared->stop && shared->calls[0] < std::min(before + 50, kCalls))  // held open
      usleep(1000);
    for (int fd : silent) close(fd);
    shared->stop = true;
    _exit(0);
  }
  ASSERT_GT(attacker, 0);
  auto results = testing::runProcesses(
      2,
      [&](int rank, ncclComm_t comm) {
        shared->pid[rank] = getpid();
        std::vector<float> buf(1 << 16);
        for (int i = 0; i < kCalls; ++i) {  // both ranks make the same calls
          for (size_t k = 0; k < buf.size(); ++k) buf[k] = static_cast<float>(rank + k % 7 + i);
          if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm,
                            nullptr) != ncclSuccess) {
            fprintf(stderr, "rank %d call %d: %s\n", rank, i, ncclGetLastError(comm));
            return 2;
          }
          for (size_t k = 0; k < buf.size(); ++k)
            if (buf[k] != static_cast<float>(1 + 2 * (k % 7 + i))) ++shared->wrong;
          ++shared->calls[rank];
        }
        return 0;
      },
      {{"NCCL_SHM_DISABLE", "1"}}, 120);
  shared->stop = true;
  int status = 0;
  waitpid(attacker, &status, 0);
  EXPECT_GE(shared->ports.load(), 2) << "the ranks' listening sockets were found";
  EXPECT_EQ(shared->rounds.load(), 5);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r;
  EXPECT_EQ(shared->wrong.load(), 0);
  munmap(shared, sizeof(Shared));
}

}  // namespace
}  // namespace braid
