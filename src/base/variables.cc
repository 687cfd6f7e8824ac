#include "base/variables.h"

namespace braid::env {

const Var kNcclConfFile = {
    "NCCL_CONF_FILE", nullptr,
    "file of NAME=VALUE lines read for variables not set in the environment"};
const Var kNcclDebug = {"NCCL_DEBUG", nullptr, "log level: VERSION, WARN, INFO, TRACE"};
const Var kNcclDebugFile = {"NCCL_DEBUG_FILE", nullptr,
                            "log file pattern (%h host, %p pid); default stderr"};
const Var kNcclDebugSubsys = {
    "NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP,ENV",
    "subsystems logged at INFO (INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, CALL, PROXY, "
    "BOOTSTRAP, REG, ALL); a leading ^ excludes"};
const Var kNcclSocketFamily = {"NCCL_SOCKET_FAMILY", nullptr,
                               "AF_INET or AF_INET6: restrict interface selection to one family"};
const Var kNcclSocketIfname = {
    "NCCL_SOCKET_IFNAME", nullptr,
    "interfaces to use: prefix list, ^ excludes, = exact match (e.g. eth,ib or ^docker or =eth0)"};

const Var kBraidTlsPsk = {
    "BRAID_TLS_PSK", nullptr,
    "TLS 1.3 with this pre-shared key (a string of at least 32 bytes, the same on every process) "
    "on every TCP connection: bootstrap and TCP transport; a peer with another key or none is "
    "refused. Unset: plaintext. ncclSetEncryption overrides it (docs/net.md)",
    /*secret=*/true};

const Var kBraidTlsRecords = {
    "BRAID_TLS_RECORDS", "braid",
    "with BRAID_TLS_PSK, where the kernel has no TLS (kTLS): braid seals and opens the records "
    "in Braid's record layer, straight between the caller's buffers and the socket's; openssl "
    "in OpenSSL's, one copy more each way (docs/net.md)"};

const Var kBraidTlsGcm = {
    "BRAID_TLS_GCM", "auto",
    "the AES-128-GCM of Braid's TLS record layer: ipsec-mb (Intel's libIPSec_MB.so.1, loaded at "
    "run time; 2-3 times OpenSSL 3.0's speed on CPUs with VAES), openssl, or auto: ipsec-mb "
    "where it loads (docs/net.md)"};

List baseVariables() {
  static const Var* const kList[] = {&kNcclConfFile,    &kNcclDebug,        &kNcclDebugFile,
                                     &kNcclDebugSubsys, &kNcclSocketFamily, &kNcclSocketIfname,
                                     &kBraidTlsPsk,     &kBraidTlsRecords,  &kBraidTlsGcm};
  return kList;
}

}  // namespace braid::env
