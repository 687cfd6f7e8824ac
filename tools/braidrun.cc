// braidrun: launch N local ranks of one command, the way mpirun or torchrun would, for tests,
// examples and benchmarks on one machine.
//
//   braidrun -np N [--timeout SECONDS] [--grace SECONDS] [--no-prefix] [--] cmd args...
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NCCL_COMM_ID (so NCCL-style
// programs need not exchange a unique id) and MASTER_ADDR/MASTER_PORT (torch.distributed's
// env:// rendezvous). The first rank that fails brings the job down: a stuck collective on the
// surviving ranks would otherwise wait forever for the dead peer.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int np = 0;
  double timeoutSec = 0;  // 0: no timeout
  double graceSec = 3;    // between SIGTERM and SIGKILL
  bool prefix = true;
  std::vector<char*> cmd;
};

// One child's output stream, re-emitted line by line with the rank prefix so that lines of
// different ranks never interleave mid-line.
struct Stream {
  int fd = -1;
  int outFd = STDOUT_FILENO;
  std::string pending;
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  Stream out, err;
};

int gSignalPipe[2] = {-1, -1};

void onSignal(int sig) {
  int saved = errno;
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(gSignalPipe[1], &b, 1);
  errno = saved;
}

[[noreturn]] void usage(const char* why) {
  if (why) std::fprintf(stderr, "braidrun: %s\n", why);
  std::fprintf(stderr,
               "usage: braidrun -np N [--timeout SECONDS] [--grace SECONDS] [--no-prefix] [--] cmd "
               "args...\n");
  std::exit(2);
}

double parseSeconds(const char* flag, const char* v) {
  char* end = nullptr;
  double d = v ? std::strtod(v, &end) : -1;
  if (!v || *end || d < 0)
    usage((std::string(flag) + " needs a non-negative number of seconds").c_str());
  return d;
}

Options parseArgs(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-np" || a == "-n" || a == "--np") {
      char* end = nullptr;
      long n = next ? std::strtol(next, &end, 10) : 0;
      if (!next || *end || n < 1 || n > 4096) usage("-np needs a rank count between 1 and 4096");
      o.np = static_cast<int>(n);
      ++i;
    } else if (a == "--timeout") {
      o.timeoutSec = parseSeconds("--timeout", next);
      ++i;
    } else if (a == "--grace") {
      o.graceSec = parseSeconds("--grace", next);
      ++i;
    } else if (a == "--no-prefix") {
      o.prefix = false;
    } else if (a == "-h" || a == "--help") {
      usage(nullptr);
    } else if (!a.empty() && a[0] == '-') {
      usage(("unknown option " + a).c_str());
    } else {
      break;
    }
  }
  if (o.np == 0) usage("-np is required");
  for (; i < argc; ++i) o.cmd.push_back(argv[i]);
  if (o.cmd.empty()) usage("no command given");
  o.cmd.push_back(nullptr);
  return o;
}

// Ask the kernel for an unused port. Another process could take it before rank 0 binds it,
// but on a test machine that window is harmless in practice and mpirun-style tools accept it.
int freePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(s);
  return port;
}

void writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our own output is gone (closed pipe): nothing better to do
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Emit every complete line in s.pending (all of it when flushAll), each with its prefix, in one
// write so that a reader sees whole lines.
void emitLines(Stream& s, const std::string& prefix, bool flushAll) {
  constexpr size_t kMaxLine = 64 * 1024;  // a child that never prints '\n' still gets through
  std::string out;
  size_t start = 0;
  while (start < s.pending.size()) {
    size_t nl = s.pending.find('\n', start);
    if (nl == std::string::npos) {
      if (!flushAll && s.pending.size() - start < kMaxLine) break;
      nl = s.pending.size();
      out += prefix;
      out.append(s.pending, start, nl - start);
      out += '\n';
      start = nl;
      break;
    }
    out += prefix;
    out.append(s.pending, start, nl + 1 - start);
    start = nl + 1;
  }
  s.pending.erase(0, start);
  if (!out.empty()) writeAll(s.outFd, out.data(), out.size());
}

// Returns false at end of file.
bool drain(Stream& s, const std::string& prefix) {
  char buf[16384];
  for (;;) {
    ssize_t n = read(s.fd, buf, sizeof buf);
    if (n > 0) {
      s.pending.append(buf, static_cast<size_t>(n));
      emitLines(s, prefix, false);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    emitLines(s, prefix, true);
    close(s.fd);
    s.fd = -1;
    return false;
  }
}

std::string describe(int status) {
  char buf[128];
  if (WIFEXITED(status))
    std::snprintf(buf, sizeof buf, "exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    std::snprintf(buf, sizeof buf, "was killed by signal %d (%s)%s", WTERMSIG(status),
                  strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
  else
    std::snprintf(buf, sizeof buf, "ended with wait status %d", status);
  return buf;
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

// Exit code of the job when this status ended it (shell convention for signals).
int exitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

pid_t spawn(const Options& o, int rank, int commPort, int masterPort, Rank& r) {
  int outPipe[2] = {-1, -1}, errPipe[2] = {-1, -1};
  if (o.prefix && (pipe2(outPipe, O_CLOEXEC) || pipe2(errPipe, O_CLOEXEC))) return -1;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    // Own process group, so that killing a rank also kills what it started (a shell's children).
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (o.prefix) {
      dup2(outPipe[1], STDOUT_FILENO);
      dup2(errPipe[1], STDERR_FILENO);
    }
    auto set = [](const char* k, const std::string& v) { setenv(k, v.c_str(), 1); };
    set("RANK", std::to_string(rank));
    set("WORLD_SIZE", std::to_string(o.np));
    set("LOCAL_RANK", std::to_string(rank));
    set("LOCAL_WORLD_SIZE", std::to_string(o.np));
    set("NCCL_COMM_ID", "127.0.0.1:" + std::to_string(commPort));
    set("MASTER_ADDR", "127.0.0.1");
    set("MASTER_PORT", std::to_string(masterPort));
    execvp(o.cmd[0], o.cmd.data());
    std::fprintf(stderr, "braidrun: cannot run %s: %s\n", o.cmd[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so a kill right after fork cannot miss the group
  if (o.prefix) {
    close(outPipe[1]);
    close(errPipe[1]);
    r.out.fd = outPipe[0];
    r.err.fd = errPipe[0];
    r.err.outFd = STDERR_FILENO;
    fcntl(r.out.fd, F_SETFL, O_NONBLOCK);
    fcntl(r.err.fd, F_SETFL, O_NONBLOCK);
  }
  return pid;
}

class Job {
 public:
  explicit Job(Options o) : o_(std::move(o)), ranks_(o_.np) {}

  int run() {
    int commPort = freePort(), masterPort = freePort();
    if (commPort < 0 || masterPort < 0) {
      std::fprintf(stderr, "braidrun: cannot find a free port on 127.0.0.1: %s\n",
                   std::strerror(errno));
      return 1;
    }
    for (int i = 0; i < o_.np; ++i) {
      // Built piecewise: GCC 12 warns (-Wrestrict, falsely) on "[" + std::to_string(i).
      std::string prefix;
      if (o_.prefix) prefix.append("[").append(std::to_string(i)).append("] ");
      prefixes_.push_back(prefix);
      pid_t pid = spawn(o_, i, commPort, masterPort, ranks_[i]);
      if (pid < 0) {
        std::fprintf(stderr, "braidrun: cannot start rank %d: %s\n", i, std::strerror(errno));
        exitCode_ = 1;
        abort(SIGTERM);
        break;
      }
      ranks_[i].pid = pid;
      ranks_[i].running = true;
    }
    if (o_.timeoutSec > 0)
      timeoutAt_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(o_.timeoutSec));
    loop();
    // A rank's leftover background children would outlive the job otherwise.
    for (auto& r : ranks_)
      if (r.pid > 0) kill(-r.pid, SIGTERM);
    return exitCode_;
  }

 private:
  void loop() {
    for (;;) {
      reap();
      bool anyRunning = false, anyOpen = false;
      for (auto& r : ranks_) {
        anyRunning |= r.running;
        anyOpen |= r.out.fd >= 0 || r.err.fd >= 0;
      }
      // Output still open once every rank is gone belongs to a leftover grandchild; do not
      // wait on it past the grace period.
      if (!anyRunning && !anyOpen) return;
      if (!anyRunning && !allGoneAt_) allGoneAt_ = Clock::now();
      if (allGoneAt_ && Clock::now() - *allGoneAt_ > grace()) return flushAll();
      checkDeadlines();

      std::vector<pollfd> fds{{gSignalPipe[0], POLLIN, 0}};
      std::vector<Stream*> streams{nullptr};
      for (size_t i = 0; i < ranks_.size(); ++i)
        for (Stream* s : {&ranks_[i].out, &ranks_[i].err})
          if (s->fd >= 0) {
            fds.push_back({s->fd, POLLIN, 0});
            streams.push_back(s);
          }
      int n = poll(fds.data(), fds.size(), 50);
      if (n < 0 && errno != EINTR) return;
      if (n <= 0) continue;
      if (fds[0].revents & POLLIN) handleSignals();
      for (size_t k = 1; k < fds.size(); ++k)
        if (fds[k].revents) drain(*streams[k], prefixFor(streams[k]));
    }
  }

  const std::string& prefixFor(const Stream* s) const {
    for (size_t i = 0; i < ranks_.size(); ++i)
      if (s == &ranks_[i].out || s == &ranks_[i].err) return prefixes_[i];
    return prefixes_[0];
  }

  void flushAll() {
    for (size_t i = 0; i < ranks_.size(); ++i)
      for (Stream* s : {&ranks_[i].out, &ranks_[i].err})
        if (s->fd >= 0) {
          drain(*s, prefixes_[i]);
          if (s->fd >= 0) emitLines(*s, prefixes_[i], true);
        }
  }

  Clock::duration grace() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.graceSec));
  }

  void reap() {
    for (;;) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return;
      for (size_t i = 0; i < ranks_.size(); ++i) {
        Rank& r = ranks_[i];
        if (r.pid != pid) continue;
        r.running = false;
        r.status = status;
        // Drain what it wrote before it died, so its last words precede our verdict.
        for (Stream* s : {&r.out, &r.err})
          if (s->fd >= 0) drain(*s, prefixes_[i]);
        // Ranks we killed are collateral; only the first genuine failure is the verdict.
        if (failed(status) && !aborting_) {
          std::fprintf(stderr, "braidrun: rank %zu (pid %d) %s; terminating the other ranks\n", i,
                       static_cast<int>(pid), describe(status).c_str());
          exitCode_ = exitCodeOf(status);
          if (exitCode_ == 0) exitCode_ = 1;
          abort(SIGTERM);
        }
      }
    }
  }

  void abort(int sig) {
    aborting_ = true;
    for (auto& r : ranks_)
      if (r.running) kill(-r.pid, sig);
    if (!killAt_) killAt_ = Clock::now() + grace();
  }

  void checkDeadlines() {
    auto now = Clock::now();
    if (timeoutAt_ && now >= *timeoutAt_) {
      timeoutAt_.reset();
      std::fprintf(stderr, "braidrun: timeout after %g s; terminating all ranks\n", o_.timeoutSec);
      if (!aborting_) exitCode_ = 124;
      abort(SIGTERM);
    }
    if (killAt_ && now >= *killAt_) {
      killAt_.reset();
      for (size_t i = 0; i < ranks_.size(); ++i)
        if (ranks_[i].running) {
          std::fprintf(stderr,
                       "braidrun: rank %zu did not exit %g s after SIGTERM; sending SIGKILL\n", i,
                       o_.graceSec);
          kill(-ranks_[i].pid, SIGKILL);
        }
    }
  }

  void handleSignals() {
    unsigned char sigs[64];
    ssize_t n = read(gSignalPipe[0], sigs, sizeof sigs);
    for (ssize_t k = 0; k < n; ++k) {
      int sig = sigs[k];
      if (sig == SIGCHLD) continue;  // reap() runs every turn of the loop
      if (interrupted_) {
        // A second interrupt means "now": do not wait for the grace period.
        for (auto& r : ranks_)
          if (r.running) kill(-r.pid, SIGKILL);
        continue;
      }
      interrupted_ = true;
      std::fprintf(stderr, "braidrun: got %s; forwarding it to all ranks\n", strsignal(sig));
      if (!aborting_) exitCode_ = 128 + sig;
      abort(sig);
    }
  }

  Options o_;
  std::vector<Rank> ranks_;
  std::vector<std::string> prefixes_;
  int exitCode_ = 0;
  bool aborting_ = false;
  bool interrupted_ = false;
  std::optional<Clock::time_point> timeoutAt_, killAt_, allGoneAt_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o = parseArgs(argc, argv);
  if (pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK)) {
    std::perror("braidrun: pipe");
    return 1;
  }
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return Job(std::move(o)).run();
}
