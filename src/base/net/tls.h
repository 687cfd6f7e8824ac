// TLS 1.3 with a pre-shared key on Braid's TCP connections (the bootstrap's and the TCP
// transport's), through OpenSSL. The setting is process-wide: ncclSetEncryption
// (setEncryption below) or, where the program cannot call it (LD_PRELOAD), BRAID_TLS_PSK.
// net::Socket (socket.h) is the one place that reads or writes through a TlsSession; nothing
// else in Braid knows whether a connection is encrypted.
//
// The key: a string of kMinPskBytes to kMaxPskBytes bytes, the same on every process of a job
// (NCCL's rule: a NUL-terminated string of at least 32 bytes; `openssl rand -hex 32` makes
// one). Its SHA-256, under a label of Braid's, is the TLS 1.3 external PSK (identity
// "braid-psk-1", cipher TLS_AES_128_GCM_SHA256, with an ECDHE exchange, so every connection has
// fresh traffic keys). A peer with another key fails the binder check of the handshake; a peer
// that speaks plaintext fails before any of its bytes reach the caller.
//
// After the handshake the records are sealed and opened by the kernel (kTLS) where it has TLS,
// else by Braid's own record layer (tls_records.h: no copies beyond the kernel's), or, with
// BRAID_TLS_RECORDS=openssl, by OpenSSL's.
#pragma once

#include <poll.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/net/tls_records.h"
#include "base/status.h"

namespace braid::net {

// ncclEncryptionConfig_t's modes (NCCL_ENCRYPTION_MODE_NONE, NCCL_ENCRYPTION_MODE_PSK).
constexpr int kEncryptionNone = 0;
constexpr int kEncryptionPsk = 1;
constexpr size_t kMinPskBytes = 32;
constexpr size_t kMaxPskBytes = 4096;

// Sets the process-wide encryption of every TCP connection opened from now on (connections
// already open keep theirs): kEncryptionNone, or kEncryptionPsk with `psk`, a NUL-terminated
// key as above. Overrides BRAID_TLS_PSK. Errors name the argument ("mode", "psk").
Status setEncryption(int mode, const char* psk);
// Checks a key as setEncryption does; `what` names it in the error ("psk", "BRAID_TLS_PSK").
Status validatePsk(const char* psk, const char* what);
// Whether new connections are encrypted; an invalid BRAID_TLS_PSK is the error.
Status encryptionEnabled(bool* on);
// Tests only: the records Braid's record layer seals under one key before a KeyUpdate, for
// sessions created from now on (0: tls13::kRecordsPerKey).
void setRecordsPerKeyForTests(uint64_t records);

class TlsContext;
// The key new connections use (null: plaintext), from setEncryption, else BRAID_TLS_PSK.
Status currentTlsContext(std::shared_ptr<const TlsContext>* out);

// One TLS connection over a connected non-blocking socket, which the caller owns. Its calls
// look like the system calls they replace: bytes moved, 0 for a peer that closed (receives),
// or -1 with errno: EAGAIN (would block: poll for pollEvents()), EPIPE or ECONNRESET, or
// EPROTO for a TLS failure, which error() describes (sticky: every later call fails alike).
// The handshake runs inside the first calls, or in step(); no application byte moves before
// it is complete.
class TlsSession {
 public:
  enum class Role { Client, Server };
  // Bytes appended without the zero fill of std::vector's resize.
  class ByteQueue {
   public:
    uint8_t* data() { return buf_.get(); }
    size_t size() const { return size_; }
    // Room for `bytes` more at the end, counted in size(): the caller fills it.
    uint8_t* grow(size_t bytes);
    void shrink(size_t bytes) { size_ -= bytes; }
    void clear() { size_ = 0; }

   private:
    std::unique_ptr<uint8_t[]> buf_;
    size_t size_ = 0, capacity_ = 0;
  };
  // What Braid's own BIO (tls.cc) needs of its session. A send's records go into `out`, sealed
  // there by Braid's record layer or, while `queue` is set, written there by OpenSSL's instead of
  // being sent one by one; the send hands the kernel up to kQueueBytes at once. Anything TLS
  // writes while records wait joins the queue, so that records stay in order.
  struct BioState {
    int fd = -1;
    bool queue = false;
    ByteQueue out;  // ciphertext not yet sent, from `sent` on
    size_t sent = 0;
    // The records in `out` from `firstRecord` on: where each one's ciphertext ends, and its
    // plaintext bytes (kept with their storage until `out` empties).
    struct Record {
      size_t end, plain;
    };
    std::vector<Record> records;
    size_t firstRecord = 0;
    size_t sentPlain = 0;  // plaintext of records wholly sent, not yet reported to the caller
  };
  // A session with `context`'s key; `peer` names the other end in errors.
  static Status create(std::shared_ptr<const TlsContext> context, int fd, Role role,
                       const std::string& peer, std::unique_ptr<TlsSession>* out);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Advances the handshake: 1 done, 0 waiting (pollEvents), -1 failed (error()).
  int step();
  bool handshakeDone() const { return done_; }
  ssize_t sendv(const iovec* iov, size_t count);
  ssize_t recvv(const iovec* iov, size_t count);
  // Plaintext may be buffered here that a poll on the socket would not announce: true after a
  // receive that filled the caller's buffers rather than running out of bytes.
  bool pending() const;
  // What to poll the socket for when a caller waits for `events` (POLLIN to receive, POLLOUT
  // to send) after a call that would block: TLS may need to write to read, or the reverse.
  short pollEvents(short events) const;
  const std::string& error() const { return error_; }
  // The failure was a peer that spoke plaintext; none of its bytes were consumed.
  bool peerSentPlaintext() const { return plaintextPeer_; }
  // Whether the kernel encrypts (kTLS) each direction.
  bool kernelSend() const { return ktlsSend_; }
  bool kernelRecv() const { return ktlsRecv_; }
  // Whether Braid's record layer opens the records received after the handshake (and seals
  // those sent, where the kernel does not).
  bool ownRecords() const { return reader_ != nullptr; }
  // Who seals and who opens the records after the handshake: "the kernel", "Braid" or "OpenSSL".
  const char* whoSeals() const { return ktlsSend_ ? "the kernel" : writer_ ? "Braid" : "OpenSSL"; }
  const char* whoOpens() const { return ktlsRecv_ ? "the kernel" : reader_ ? "Braid" : "OpenSSL"; }
  // The traffic secrets OpenSSL's key log hands a session that will run Braid's record layer.
  struct Secrets {
    tls13::Secret client, server;
    bool malformed = false;
  };

 private:
  bool readyForData();
  TlsSession() = default;
  ssize_t fail(std::string text);
  ssize_t failFromSsl(int rc, const char* during);
  bool checkFirstBytes();
  ssize_t writeRecord(const uint8_t* data, size_t bytes, bool staged);
  ssize_t sendvQueued(const iovec* iov, size_t count);
  int flushQueued(bool more);
  int startRecords();
  ssize_t recvvRecords(const iovec* iov, size_t count);
  void sendCloseNotify();

  struct SslDeleter {
    void operator()(void* ssl) const;
  };
  std::shared_ptr<const TlsContext> context_;
  std::unique_ptr<BioState> bio_;  // null where OpenSSL's socket BIO is used (kTLS)
  // Braid's record layer: the secrets until the handshake ends, then the two directions' keys.
  std::unique_ptr<Secrets> secrets_;
  std::unique_ptr<tls13::RecordWriter> writer_;
  std::unique_ptr<tls13::RecordReader> reader_;
  tls13::GcmImpl gcm_ = tls13::GcmImpl::OpenSsl;  // the AES-GCM of Braid's record layer
  std::unique_ptr<void, SslDeleter> ssl_;         // SSL*, freed before bio_
  int fd_ = -1;
  Role role_ = Role::Client;
  std::string peer_;
  bool done_ = false;
  bool started_ = false;       // a client has sent its ClientHello
  bool firstChecked_ = false;  // the peer's first bytes looked like TLS
  bool failed_ = false, closed_ = false;
  bool buffered_ = false;
  bool plaintextPeer_ = false;
  bool ktlsSend_ = false, ktlsRecv_ = false;
  short readWant_ = POLLIN, writeWant_ = POLLOUT;  // what a blocked receive / send waits for
  std::string error_;
  // A record whose write would block: TLS must be offered the same bytes again, so they wait
  // here (at most one record) and the caller's next bytes start after them.
  std::unique_ptr<uint8_t[]> stage_;
  size_t pendingBytes_ = 0;
  size_t aheadBytes_ = 0;  // of that record, sent but not yet counted in a return value
  // Braid's BIO: plaintext TLS has taken (its records queued or sent) that no return value has
  // counted yet. The caller offers these bytes again first; they are counted once their
  // records are out.
  size_t unreported_ = 0;
};

}  // namespace braid::net
