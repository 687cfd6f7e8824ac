#include "transport/tcp/tcp_info.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>

namespace braid::transport {

bool readTcpInfo(int fd, TcpInfo* out) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  out->retransmits = info.tcpi_total_retrans;
  out->rttUs = info.tcpi_rtt;
  out->cwnd = info.tcpi_snd_cwnd;
  // Kernels before 4.10 end the struct before the chrono fields.
  if (len >= offsetof(tcp_info, tcpi_rwnd_limited) + sizeof info.tcpi_rwnd_limited) {
    out->bytesAcked = info.tcpi_bytes_acked;
    out->sendingUs = info.tcpi_busy_time - std::min(info.tcpi_rwnd_limited, info.tcpi_busy_time);
  }
  return true;
}

}  // namespace braid::transport
