#include "base/net/tls.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <sys/stat.h>
#include <sys/utsname.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/env.h"
#include "base/log.h"
#include "base/net/tls_context.h"
#include "base/variables.h"

namespace braid::net {

namespace {

constexpr size_t kRecordBytes = 16384;  // TLS's largest plaintext record
// One sendv/recvv moves at most this much, so that a caller's streams take turns.
constexpr size_t kMaxBytesPerCall = 8u << 20;
// Ciphertext queued before a send hands it to the kernel (Braid's BIO): a whole slice of the TCP
// transport (BRAID_TCP_SLICE_BYTES, 512 KiB) goes out in one system call, as in plaintext. Fewer,
// larger sends beat sending earlier: AllReduce of 1 MiB between two emulated hosts at 10 Gbit/s
// ran at 0.95 GB/s busbw with this, 0.90 with 256 KiB, 0.61 with 32 KiB (alternating runs of
// `BRAID_TLS_PSK=... NCCL_SHM_DISABLE=1 tools/netcluster --hosts 2 --racks 1 --rack-gbit 10 --
// build/release/bench/perf/all_reduce_perf -b 1M -e 1M -n 64 -w 9`).
constexpr size_t kQueueBytes = 1u << 20;
// A handshake cut short: a peer with another key, or one that does not speak TLS and refused
// the hello with it unread (which resets the connection), both end it so.
constexpr char kResetInHandshake[] =
    "the peer reset the connection during the TLS handshake (wrong pre-shared key? or is "
    "encryption off there?)";
constexpr char kClosedInHandshake[] =
    "the peer closed the connection during the TLS handshake (wrong pre-shared key? or is "
    "encryption off there?)";

// OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a connection the peer
// closed; Braid is a library and must not die of that nor change the program's handling of it.
// Where that BIO is used (kTLS), a call that may write blocks SIGPIPE on its thread and takes
// back a SIGPIPE it caused. Braid's own BIO sends with MSG_NOSIGNAL and needs no guard.
class SigpipeGuard {
 public:
  explicit SigpipeGuard(bool active) : active_(active) {
    if (!active_) return;
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    if (!active_ || sigismember(&old_, SIGPIPE)) return;  // the program blocks it: leave it so
    const int saved = errno;
    sigset_t pending;
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {}
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }

 private:
  bool active_;
  sigset_t pipe_, old_;
};

// Whether this kernel can take TLS over (the tls module loaded, or there to be loaded): then
// sessions use OpenSSL's socket BIO, through which OpenSSL hands the keys to the kernel (kTLS)
// after the handshake. Elsewhere they use Braid's BIO below.
bool kernelHasTls() {
  static const bool has = [] {
    std::ifstream ulp("/proc/sys/net/ipv4/tcp_available_ulp");
    std::string word;
    while (ulp >> word)
      if (word == "tls") return true;
    utsname u{};
    if (uname(&u) != 0) return false;
    struct stat st {};
    return stat((std::string("/lib/modules/") + u.release + "/kernel/net/tls").c_str(), &st) == 0;
  }();
  return has;
}

// Braid's BIO: send and recv on the session's socket, non-blocking, without SIGPIPE. Records a
// send encrypts are queued (BioState) and handed to the kernel in large writes by the send: a
// system call per 16 KiB record costs the kernel about three times plaintext's CPU per byte
// (bench/results/tls_netcluster_2hosts.md), most of it pushing small writes.
using BioState = TlsSession::BioState;

int bioWrite(BIO* b, const char* data, size_t len, size_t* written) {
  auto* st = static_cast<BioState*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  // While a send encrypts, or behind records still queued, the bytes join the queue.
  if (st->queue || st->sent < st->out.size()) {
    if (len > 0) std::memcpy(st->out.grow(len), data, len);
    *written = len;
    return 1;
  }
  const ssize_t n = ::send(st->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) {
    *written = static_cast<size_t>(n);
    return 1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(b);
  return 0;
}

int bioRead(BIO* b, char* data, size_t len, size_t* got) {
  auto* st = static_cast<BioState*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  const ssize_t n = ::recv(st->fd, data, len, MSG_DONTWAIT);
  if (n > 0) {
    *got = static_cast<size_t>(n);
    return 1;
  }
  *got = 0;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(b);
  return 0;  // 0 bytes without a retry flag: the peer closed (or errno says what broke)
}

long bioCtrl(BIO*, int cmd, long, void*) { return cmd == BIO_CTRL_FLUSH ? 1 : 0; }

int bioCreate(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* braidBio() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "braid socket");
    if (m && (!BIO_meth_set_write_ex(m, bioWrite) || !BIO_meth_set_read_ex(m, bioRead) ||
              !BIO_meth_set_ctrl(m, bioCtrl) || !BIO_meth_set_create(m, bioCreate))) {
      BIO_meth_free(m);
      m = nullptr;
    }
    return m;
  }();
  return method;
}

std::atomic<uint64_t> gRecordsPerKey{0};

// BRAID_TLS_RECORDS: whose record layer runs where the kernel has no TLS.
Status ownRecordLayer(bool* own) {
  const char* v = env::get(env::kBraidTlsRecords);
  const std::string value = v ? v : "braid";
  if (value == "braid" || value.empty()) {
    *own = true;
  } else if (value == "openssl") {
    *own = false;
  } else {
    return invalidArgument("BRAID_TLS_RECORDS is '%s': braid or openssl", value.c_str());
  }
  return Status::Ok();
}

bool wouldBlock(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

// A send's position in the caller's iovecs, and the records it cuts them into.
class IovCursor {
 public:
  IovCursor(const iovec* iov, size_t count) : iov_(iov), count_(count) { skipEmpty(); }
  bool done() const { return i_ >= count_; }
  size_t offered() const {
    size_t n = 0;
    for (size_t k = 0; k < count_; ++k) n += iov_[k].iov_len;
    return n;
  }
  void skip(size_t n) {
    while (n > 0 && i_ < count_) {
      const size_t take = std::min(n, iov_[i_].iov_len - off_);
      n -= take;
      off_ += take;
      if (off_ == iov_[i_].iov_len) {
        ++i_;
        off_ = 0;
      }
    }
    skipEmpty();
  }
  // The next record's plaintext, *bytes of it: a whole record straight from the caller's
  // buffer, or small pieces (headers, small messages) gathered into `stage` to share one.
  const uint8_t* nextRecord(uint8_t* stage, size_t* bytes) const {
    if (iov_[i_].iov_len - off_ >= kRecordBytes) {
      *bytes = kRecordBytes;
      return static_cast<const uint8_t*>(iov_[i_].iov_base) + off_;
    }
    *bytes = nextRecordBytes();
    uint8_t* to = stage;
    eachPiece(*bytes, [&](const uint8_t* data, size_t n) {
      std::memcpy(to, data, n);
      to += n;
      return true;
    });
    return stage;
  }
  // The next record's plaintext bytes, and its pieces in order: f(data, bytes) for each, false
  // as soon as one is.
  size_t nextRecordBytes() const {
    size_t n = 0;
    for (size_t k = i_, o = off_; k < count_ && n < kRecordBytes; ++k, o = 0)
      n += std::min(iov_[k].iov_len - o, kRecordBytes - n);
    return n;
  }
  template <class F>
  bool eachPiece(size_t bytes, F&& f) const {
    for (size_t k = i_, o = off_; k < count_ && bytes > 0; ++k, o = 0) {
      const size_t take = std::min(iov_[k].iov_len - o, bytes);
      if (take > 0 && !f(static_cast<const uint8_t*>(iov_[k].iov_base) + o, take)) return false;
      bytes -= take;
    }
    return true;
  }

 private:
  void skipEmpty() {
    while (i_ < count_ && iov_[i_].iov_len == 0) ++i_;
  }
  const iovec* iov_;
  size_t count_;
  size_t i_ = 0, off_ = 0;  // the next byte: iov_[i_], offset off_
};

}  // namespace

void setRecordsPerKeyForTests(uint64_t records) { gRecordsPerKey = records; }

uint8_t* TlsSession::ByteQueue::grow(size_t bytes) {
  if (size_ + bytes > capacity_) {
    const size_t capacity = std::max(size_ + bytes, 2 * capacity_);
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[capacity]);
    if (size_ > 0) std::memcpy(bigger.get(), buf_.get(), size_);
    buf_ = std::move(bigger);
    capacity_ = capacity;
  }
  uint8_t* at = buf_.get() + size_;
  size_ += bytes;
  return at;
}

void TlsSession::SslDeleter::operator()(void* ssl) const { SSL_free(static_cast<SSL*>(ssl)); }

Status TlsSession::create(std::shared_ptr<const TlsContext> context, int fd, Role role,
                          const std::string& peer, std::unique_ptr<TlsSession>* out) {
  if (!context) return internalError("%s", "TLS session without a key");
  SSL* ssl = SSL_new(context->ctx);
  if (!ssl) return systemError("TLS: SSL_new: %s", sslErrorText().c_str());
  std::unique_ptr<TlsSession> s(new TlsSession());
  s->ssl_.reset(ssl);
  // Both read wherever they apply or not, so that a bad value is always an error.
  bool own = true;
  BRAID_TRY(ownRecordLayer(&own));
  BRAID_TRY(tls13::chooseGcm(&s->gcm_));
  s->context_ = std::move(context);
  s->fd_ = fd;
  s->role_ = role;
  s->peer_ = peer;
  if (kernelHasTls()) {
    if (!SSL_set_fd(ssl, fd)) return systemError("TLS: SSL_set_fd: %s", sslErrorText().c_str());
  } else {
    BIO_METHOD* method = braidBio();
    BIO* bio = method ? BIO_new(method) : nullptr;
    if (!bio) return systemError("TLS: BIO_new: %s", sslErrorText().c_str());
    s->bio_ = std::make_unique<BioState>();
    s->bio_->fd = fd;
    BIO_set_data(bio, s->bio_.get());
    SSL_set_bio(ssl, bio, bio);  // the SSL owns it
  }
  if (own) {
    // The key log hands over the traffic secrets; OpenSSL reads no byte past the handshake
    // (each record's header, then its body), so the first data record is Braid's to open.
    s->secrets_ = std::make_unique<Secrets>();
    SSL_set_app_data(ssl, s->secrets_.get());
    SSL_set_read_ahead(ssl, 0);
  }
  if (role == Role::Client)
    SSL_set_connect_state(ssl);
  else
    SSL_set_accept_state(ssl);
  *out = std::move(s);
  return Status::Ok();
}

TlsSession::~TlsSession() {
  if (writer_) {
    if (done_ && !failed_ && !closed_) sendCloseNotify();
  } else if (done_ && !failed_ && !closed_) {
    SigpipeGuard guard(!bio_);
    (void)SSL_shutdown(static_cast<SSL*>(ssl_.get()));  // close_notify, best effort
  }
  ERR_clear_error();
}

ssize_t TlsSession::fail(std::string text) {
  failed_ = true;
  error_ = strfmt("TLS with %s: %s", peer_.c_str(), text.c_str());
  ERR_clear_error();
  errno = EPROTO;
  return -1;
}

// What an OpenSSL failure means, in the words a user can act on.
ssize_t TlsSession::failFromSsl(int rc, const char* during) {
  SSL* ssl = static_cast<SSL*>(ssl_.get());
  const int kind = SSL_get_error(ssl, rc);
  const int err = errno;
  if (kind == SSL_ERROR_ZERO_RETURN || (kind == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
    if (kind == SSL_ERROR_SYSCALL && (err == ECONNRESET || err == EPIPE)) {
      if (!done_) return fail(kResetInHandshake);
      ERR_clear_error();
      errno = err;
      return -1;
    }
    if (!done_) return fail(kClosedInHandshake);
    closed_ = true;
    ERR_clear_error();
    return 0;
  }
  if (kind == SSL_ERROR_SYSCALL) return fail(strfmt("%s: %s", during, std::strerror(err)));
  const unsigned long e = ERR_peek_last_error();
  const int reason = ERR_GET_REASON(e);
  const std::string detail = sslErrorText();
  if (!done_ && reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) return fail(kClosedInHandshake);
  if (reason == SSL_R_BINDER_DOES_NOT_VERIFY ||
      reason == SSL_AD_REASON_OFFSET + SSL_AD_DECRYPT_ERROR ||
      reason == SSL_AD_REASON_OFFSET + SSL_AD_HANDSHAKE_FAILURE ||
      reason == SSL_AD_REASON_OFFSET + SSL_AD_ILLEGAL_PARAMETER || reason == SSL_R_NO_SHARED_CIPHER)
    return fail(strfmt("TLS handshake failed: wrong pre-shared key? (%s)", detail.c_str()));
  if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
      reason == SSL_R_HTTP_REQUEST || reason == SSL_R_UNKNOWN_PROTOCOL)
    return fail(
        strfmt("peer sent plaintext, not TLS (is encryption off there?) (%s)", detail.c_str()));
  return fail(strfmt("%s: %s", during, detail.c_str()));
}

// The peer's first bytes, looked at before OpenSSL reads them: a TLS record header (type,
// then version 3.x) or plaintext. Braid's own hellos start with a random magic or a rank, so
// this tells a plaintext peer from a TLS one, and says so, rather than leaving OpenSSL to
// name a parse error.
bool TlsSession::checkFirstBytes() {
  uint8_t b[3];
  const ssize_t n = ::recv(fd_, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) {
    if (wouldBlock(errno)) {
      readWant_ = writeWant_ = POLLIN;
      return false;
    }
    if (errno == ECONNRESET || errno == EPIPE)
      fail(kResetInHandshake);
    else
      fail(strfmt("during the TLS handshake: %s", std::strerror(errno)));
    return false;
  }
  if (n == 0) {
    fail(role_ == Role::Server
             ? "the peer closed the connection before its TLS handshake (is encryption off there?)"
             : kClosedInHandshake);
    return false;
  }
  // A client's first record is a handshake (version 3.1 to 3.4 in the record header); a
  // server's is a handshake (3.3) or an alert.
  bool tls;
  if (role_ == Role::Server) {
    tls = b[0] == 0x16 && (n < 2 || b[1] == 3) && (n < 3 || (b[2] >= 1 && b[2] <= 4));
  } else {
    tls = (b[0] == 0x16 || b[0] == 0x15) && (n < 2 || b[1] == 3) &&
          (n < 3 || (b[0] == 0x16 ? b[2] == 3 : b[2] >= 1 && b[2] <= 3));
  }
  if (!tls) {
    plaintextPeer_ = true;
    fail("peer sent plaintext, not TLS (is encryption off there?)");
    return false;
  }
  firstChecked_ = true;
  return true;
}

int TlsSession::step() {
  if (failed_) {
    errno = EPROTO;
    return -1;
  }
  if (done_) return 1;
  if ((role_ == Role::Server || started_) && !firstChecked_ && !checkFirstBytes())
    return failed_ ? -1 : 0;
  SSL* ssl = static_cast<SSL*>(ssl_.get());
  SigpipeGuard guard(!bio_);
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl);
  started_ = true;
  if (rc == 1) {
    done_ = true;
    readWant_ = POLLIN;
    writeWant_ = POLLOUT;
    ktlsSend_ = BIO_get_ktls_send(SSL_get_wbio(ssl)) != 0;
    ktlsRecv_ = BIO_get_ktls_recv(SSL_get_rbio(ssl)) != 0;
    if (secrets_ && startRecords() < 0) return -1;
    BRAID_TRACE(kNet, "TLS with %s: handshake done (%s), records sealed by %s, opened by %s",
                peer_.c_str(), SSL_get_cipher_name(ssl), whoSeals(), whoOpens());
    return 1;
  }
  const int kind = SSL_get_error(ssl, rc);
  if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) {
    readWant_ = writeWant_ = kind == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return 0;
  }
  failFromSsl(rc, "TLS handshake failed");
  return -1;
}

// Writes one record; 1 when it went out, 0 when it would block (it is then staged), -1 on
// failure.
ssize_t TlsSession::writeRecord(const uint8_t* data, size_t bytes, bool staged) {
  SSL* ssl = static_cast<SSL*>(ssl_.get());
  size_t written = 0;
  const int rc = SSL_write_ex(ssl, data, bytes, &written);
  if (rc == 1) {
    pendingBytes_ = 0;
    writeWant_ = POLLOUT;
    return 1;
  }
  const int kind = SSL_get_error(ssl, rc);
  if (kind == SSL_ERROR_WANT_WRITE || kind == SSL_ERROR_WANT_READ) {
    writeWant_ = kind == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    if (!staged) std::memcpy(stage_.get(), data, bytes);
    pendingBytes_ = bytes;
    return 0;
  }
  if (failFromSsl(rc, "TLS send") == 0) errno = EPIPE;
  return -1;
}

// A data call first finishes the handshake and refuses after a failure: false, with errno
// EAGAIN (the handshake waits) or EPROTO (error()), when it cannot move data yet.
bool TlsSession::readyForData() {
  if (!done_) {
    const int st = step();
    if (st < 0) return false;
    if (st == 0) {
      errno = EAGAIN;
      return false;
    }
  }
  if (failed_) {
    errno = EPROTO;
    return false;
  }
  return true;
}

ssize_t TlsSession::sendv(const iovec* iov, size_t count) {
  if (!readyForData()) return -1;
  if (ktlsSend_) {  // the kernel frames and encrypts: the bytes go out as they are
    msghdr msg{};
    msg.msg_iov = const_cast<iovec*>(iov);
    msg.msg_iovlen = count;
    return ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  if (bio_) return sendvQueued(iov, count);
  // OpenSSL's socket BIO (a kernel with TLS that did not take this session's keys): a record
  // per system call.
  if (!stage_) stage_.reset(new uint8_t[kRecordBytes]);
  SigpipeGuard guard(true);
  ERR_clear_error();  // stays clear while calls succeed: SSL_get_error reads it after a failure
  size_t total = 0;
  IovCursor at(iov, count);
  const size_t offered = at.offered();
  if (pendingBytes_ > 0) {
    // The record that would block before goes first, from the stage: TLS must be offered the
    // same bytes, which the caller offers again as the start of this call's.
    const size_t bytes = pendingBytes_;
    const ssize_t rc = writeRecord(stage_.get(), bytes, true);
    if (rc < 0) return -1;
    if (rc == 0) {
      errno = EAGAIN;
      return -1;
    }
    aheadBytes_ = bytes;
  }
  if (aheadBytes_ > 0) {
    // Bytes already out that the caller has not been told of: they are the start of what it
    // offers (it may offer fewer than a record per call).
    const size_t take = std::min(aheadBytes_, offered);
    at.skip(take);
    total += take;
    aheadBytes_ -= take;
    if (aheadBytes_ > 0) return static_cast<ssize_t>(total);
  }
  while (!at.done() && total < kMaxBytesPerCall) {
    size_t bytes;
    const uint8_t* data = at.nextRecord(stage_.get(), &bytes);
    const ssize_t rc = writeRecord(data, bytes, data == stage_.get());
    if (rc < 0) return total > 0 ? static_cast<ssize_t>(total) : -1;
    if (rc == 0) break;
    at.skip(bytes);
    total += bytes;
  }
  if (total > 0) return static_cast<ssize_t>(total);
  errno = EAGAIN;
  return -1;
}

// Sends what Braid's BIO has queued, as far as the socket takes it: 0, or -1 with errno for a
// broken connection. Records wholly sent move to sentPlain.
int TlsSession::flushQueued(bool more) {
  BioState& q = *bio_;
  while (q.sent < q.out.size()) {
    const ssize_t n = ::send(fd_, q.out.data() + q.sent, q.out.size() - q.sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT | (more ? MSG_MORE : 0));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (wouldBlock(errno)) break;
      return -1;
    }
    q.sent += static_cast<size_t>(n);
  }
  for (; q.firstRecord < q.records.size() && q.records[q.firstRecord].end <= q.sent;
       ++q.firstRecord)
    q.sentPlain += q.records[q.firstRecord].plain;
  if (q.sent == q.out.size()) {  // every record is out
    q.out.clear();
    q.sent = 0;
    q.records.clear();
    q.firstRecord = 0;
  } else {
    writeWant_ = POLLOUT;
  }
  return 0;
}

// Braid's BIO: records are encrypted into the queue and sent kQueueBytes at a time. The caller
// is told of bytes only once their records are out, so while any wait it offers them again (and
// calls again): those are skipped, not encrypted twice.
ssize_t TlsSession::sendvQueued(const iovec* iov, size_t count) {
  BioState& q = *bio_;
  SSL* ssl = static_cast<SSL*>(ssl_.get());
  IovCursor at(iov, count);
  const size_t offered = at.offered();
  if (offered == 0) return 0;
  if (flushQueued(false) < 0) return -1;
  // What went out since the last call starts what the caller offers.
  size_t total = std::min(q.sentPlain, offered);
  q.sentPlain -= total;
  unreported_ -= total;
  if (unreported_ > 0) {  // bytes TLS has taken are still queued, or beyond this offer
    if (total > 0) return static_cast<ssize_t>(total);
    errno = EAGAIN;
    return -1;
  }
  at.skip(total);
  if (!writer_ && !stage_) stage_.reset(new uint8_t[kRecordBytes]);
  ERR_clear_error();  // stays clear while calls succeed: SSL_get_error reads it after a failure
  bool blocked = false;
  while (!at.done() && !blocked && total + unreported_ < kMaxBytesPerCall) {
    size_t bytes;
    if (writer_) {
      // Sealed from the caller's buffers straight into the queue.
      bytes = at.nextRecordBytes();
      const size_t room = writer_->bytesFor(bytes);
      uint8_t* out = q.out.grow(room);
      std::string why;
      const size_t used = writer_->seal(
          bytes, tls13::kApplicationData, out,
          [&](tls13::RecordKey& key, uint8_t* body) {
            return at.eachPiece(bytes, [&](const uint8_t* data, size_t n) {
              const bool ok = key.crypt(data, body, n);
              body += n;
              return ok;
            });
          },
          &why);
      if (used != room) {
        q.out.shrink(room);
        return fail(why);
      }
    } else {
      size_t written = 0;
      const uint8_t* data = at.nextRecord(stage_.get(), &bytes);
      q.queue = true;
      const int rc = SSL_write_ex(ssl, data, bytes, &written);
      q.queue = false;
      if (rc != 1 || written != bytes) {  // the queue never blocks: this is a failure
        if (failFromSsl(rc, "TLS send") == 0) errno = EPIPE;
        return -1;
      }
    }
    q.records.push_back({q.out.size(), bytes});
    unreported_ += bytes;
    at.skip(bytes);
    if (q.out.size() - q.sent >= kQueueBytes) {
      if (flushQueued(!at.done()) < 0) return -1;
      blocked = q.sent < q.out.size();
    }
  }
  if (flushQueued(false) < 0) return -1;
  const size_t out = std::min(q.sentPlain, unreported_);
  q.sentPlain -= out;
  unreported_ -= out;
  total += out;
  if (total > 0) return static_cast<ssize_t>(total);
  errno = EAGAIN;
  return -1;
}

ssize_t TlsSession::recvv(const iovec* iov, size_t count) {
  if (!readyForData()) return -1;
  if (closed_) return 0;
  if (reader_) return recvvRecords(iov, count);
  SSL* ssl = static_cast<SSL*>(ssl_.get());
  if (!buffered_ && SSL_has_pending(ssl) == 0) {
    // Nothing held here: ask the kernel first, so that an idle poll costs one system call.
    uint8_t b;
    const ssize_t n = ::recv(fd_, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && wouldBlock(errno)) {
      readWant_ = POLLIN;
      errno = EAGAIN;
      return -1;
    }
  }
  SigpipeGuard guard(!bio_);  // a failing read may send an alert
  size_t total = 0;
  buffered_ = false;
  ERR_clear_error();  // stays clear while calls succeed: SSL_get_error reads it after a failure
  for (size_t k = 0; k < count && total < kMaxBytesPerCall; ++k) {
    auto* p = static_cast<uint8_t*>(iov[k].iov_base);
    size_t left = iov[k].iov_len;
    while (left > 0) {
      size_t got = 0;
      const int rc = SSL_read_ex(ssl, p, left, &got);
      if (rc == 1) {
        readWant_ = POLLIN;
        p += got;
        left -= got;
        total += got;
        continue;
      }
      const int kind = SSL_get_error(ssl, rc);
      if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE) {
        readWant_ = kind == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        if (total > 0) return static_cast<ssize_t>(total);
        errno = EAGAIN;
        return -1;
      }
      const int saved = errno;
      const ssize_t r = failFromSsl(rc, "TLS receive");
      if (total > 0) return static_cast<ssize_t>(total);  // the failure shows on the next call
      errno = r == 0 ? 0 : (failed_ ? EPROTO : saved);
      return r;
    }
  }
  // The caller's buffers filled: is a whole record's plaintext (or a close, a failure) held
  // here? A part of a record is not: the socket announces the rest.
  buffered_ = false;
  if (SSL_pending(ssl) > 0) {
    buffered_ = true;
  } else if (SSL_has_pending(ssl)) {
    uint8_t b;
    size_t peeked = 0;
    ERR_clear_error();
    const int rc = SSL_peek_ex(ssl, &b, 1, &peeked);
    const int kind = rc == 1 ? SSL_ERROR_NONE : SSL_get_error(ssl, rc);
    buffered_ = kind != SSL_ERROR_WANT_READ && kind != SSL_ERROR_WANT_WRITE;
    ERR_clear_error();
  }
  return static_cast<ssize_t>(total);
}

// Braid's record layer takes over from OpenSSL once the handshake is done: OpenSSL has read
// nothing past it and its key log has handed over both traffic secrets. It opens what arrives
// unless the kernel does, and seals what goes out over Braid's BIO (where the kernel has TLS,
// the kernel seals, or OpenSSL where the kernel refused the keys).
int TlsSession::startRecords() {
  SSL* ssl = static_cast<SSL*>(ssl_.get());
  std::string why;
  if (SSL_has_pending(ssl)) {
    why = "OpenSSL read past the handshake";
  } else if (secrets_->malformed || !secrets_->client.set || !secrets_->server.set) {
    why = "OpenSSL's key log gave no traffic secrets";
  } else {
    const bool client = role_ == Role::Client;
    const uint64_t perKey = gRecordsPerKey.load();
    if (bio_)
      writer_ = std::make_unique<tls13::RecordWriter>(perKey ? perKey : tls13::kRecordsPerKey);
    if (!ktlsRecv_) reader_ = std::make_unique<tls13::RecordReader>();
    if ((writer_ &&
         !writer_->init((client ? secrets_->client : secrets_->server).bytes, &why, gcm_)) ||
        (reader_ &&
         !reader_->init((client ? secrets_->server : secrets_->client).bytes, &why, gcm_))) {
      writer_.reset();
      reader_.reset();
      if (why.empty()) why = "no record keys";
    }
  }
  SSL_set_app_data(ssl, nullptr);
  secrets_.reset();
  if (!why.empty()) return static_cast<int>(fail("starting Braid's record layer: " + why));
  return 1;
}

// Receives through Braid's record layer: plaintext held or whole records buffered first, then
// as much as the socket has, decrypted straight into the caller's buffers.
ssize_t TlsSession::recvvRecords(const iovec* iov, size_t count) {
  tls13::IovSink sink(iov, count);
  bool drained = false;  // the last read took less than it had room for
  for (;;) {
    std::string why;
    const auto r = reader_->open(sink, kMaxBytesPerCall, &why);
    if (r == tls13::RecordReader::Result::Failed) return fail("TLS receive: " + why);
    if (r == tls13::RecordReader::Result::Closed) {
      closed_ = true;
      return 0;
    }
    const size_t got = sink.written();
    if (sink.room() == 0 || got >= kMaxBytesPerCall) return static_cast<ssize_t>(got);
    if (drained) break;
    size_t room = 0;
    uint8_t* space = reader_->space(&room);
    const ssize_t n = ::recv(fd_, space, room, MSG_DONTWAIT);
    if (n > 0) {
      reader_->received(static_cast<size_t>(n));
      drained = static_cast<size_t>(n) < room;
      continue;
    }
    if (got > 0) return static_cast<ssize_t>(got);  // a close or failure shows on the next call
    if (n == 0) {  // the peer closed; a record cut short reads as a close too, as under OpenSSL
      closed_ = true;
      return 0;
    }
    if (!wouldBlock(errno)) return -1;
    break;
  }
  if (sink.written() > 0) return static_cast<ssize_t>(sink.written());
  readWant_ = POLLIN;
  errno = EAGAIN;
  return -1;
}

// A close_notify alert behind whatever the queue still holds, sent as far as the socket takes
// it now (best effort: the peer reads a close without one as closed too).
void TlsSession::sendCloseNotify() {
  static const uint8_t kCloseNotify[] = {1, 0};  // warning, close_notify
  const size_t room = writer_->bytesFor(sizeof(kCloseNotify));
  uint8_t* out = bio_->out.grow(room);
  std::string why;
  const size_t used = writer_->seal(
      sizeof(kCloseNotify), tls13::kAlert, out,
      [](tls13::RecordKey& key, uint8_t* body) {
        return key.crypt(kCloseNotify, body, sizeof(kCloseNotify));
      },
      &why);
  if (used != room) return;
  bio_->records.push_back({bio_->out.size(), 0});
  (void)flushQueued(false);
}

short TlsSession::pollEvents(short events) const {
  short out = 0;
  if (events & POLLIN) out |= readWant_;
  if (events & POLLOUT) out |= writeWant_;
  return out;
}

bool TlsSession::pending() const {
  if (reader_) return reader_->ready();
  return buffered_ || SSL_pending(static_cast<SSL*>(ssl_.get())) > 0;
}

}  // namespace braid::net
