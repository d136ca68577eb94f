/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's NET connections (engine/net.h).
 */
#include "engine/net.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/proxy_cpus.h"
#include "engine/rings.h"
#include "kernels/staging.h"

namespace coll_gpu {
namespace {

// A FIFO's host memory: the proxy's and the kernel's words first, each on its own 128-byte line (tail,
// head, then the step sizes), the slots after them, then its LL slots (common/ll.h), where it has them.
constexpr size_t kLine = 128;
constexpr size_t kTail = 0, kHead = kLine, kSizes = 2 * kLine, kSlots = 4 * kLine;
// The proxy polls without pause 1 ms after the last step it moved or the last launch, then sleeps in
// growing steps of at most 1 ms: a peer's late step is seen within 1 ms, an idle communicator costs
// about a thousand wake-ups a second at worst.
constexpr uint64_t kProxySpinNs = 1000000, kProxySleepNs = 1000000;

static_assert(COLL_GPU_ENGINE_MAX_PROXY_THREADS == COLL_GPU_PROXY_MAX_THREADS, "the glue's bound is the proxy's");
static_assert(COLL_GPU_ENGINE_PROXY_NET_UCX == COLL_GPU_PROXY_NET_UCX &&
                  COLL_GPU_ENGINE_PROXY_NET_SOCKETS == COLL_GPU_PROXY_NET_SOCKET,
              "the glue's names are the proxy's");

// "0-3,8,10-11" into buf.
void cpu_ranges(const int *cpus, int n, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && at < len; ++i) {
    int j = i;
    while (j + 1 < n && cpus[j + 1] == cpus[j] + 1) ++j;
    at += (size_t)snprintf(buf + at, len - at, j > i ? "%s%d-%d" : "%s%d", i > 0 ? "," : "", cpus[i], cpus[j]);
    i = j;
  }
}

// Whether this proxy's traffic may take the NIC port `name` (a topology <net name>): over its sockets one of the
// interfaces coll_gpu_socket_ifname takes; over UCX one UCX_NET_DEVICES names (its devices, "mlx5_0:1", without
// their ports), any where that is unset or "all".
struct PortFilter {
  coll_gpu_proxy_net_t kind;
  const char *ifname;
};
int takes_port(const char *name, void *ctx) {
  const PortFilter *f = (const PortFilter *)ctx;
  if (f->kind == COLL_GPU_PROXY_NET_SOCKET) return coll_gpu_proxy_takes_ifname(name, f->ifname);
  return coll_gpu_ucx_devices_take(getenv("UCX_NET_DEVICES"), name);
}

}  // namespace

coll_gpu_status_t Net::start(int rank, int nranks, int threads, int most, int here, const char *busid, bool remote,
                             coll_gpu_log_fn log, char *why, size_t len) {
  // where the threads run: near the GPU and the NIC its traffic takes, off the rank's own CPUs
  int gpu[CPU_SETSIZE], nic[CPU_SETSIZE], near[CPU_SETSIZE], mine[CPU_SETSIZE], cpus[CPU_SETSIZE];
  char port[64] = "";
  const int ngpu = coll_gpu_near_cpus(busid, gpu, CPU_SETSIZE);
  PortFilter filter{kind_, ifname_};
  const int nnic = remote ? coll_gpu_near_net(busid, takes_port, &filter, port, sizeof(port), nic, CPU_SETSIZE) : 0;
  int by_gpu = 0, by_nic = 0;
  int nnear = coll_gpu_proxy_near(gpu, ngpu, nic, nnic, near, &by_gpu, &by_nic);
  const bool placed = nnear > 0;
  if (!placed) {
    const long online = sysconf(_SC_NPROCESSORS_CONF);
    nnear = online > 0 && online < CPU_SETSIZE ? (int)online : 1;
    for (int c = 0; c < nnear; ++c) near[c] = c;
  }
  int nmine = 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) mine[nmine++] = c;
  int shared = 0;
  const int ncpus = coll_gpu_proxy_cpus(near, nnear, mine, nmine, cpus, &shared);
  if (threads <= 0) threads = coll_gpu_proxy_auto_threads(shared, here, most);
  if (log != nullptr) {
    char where[256], own[128];
    cpu_ranges(cpus, ncpus, where, sizeof(where));
    cpu_ranges(mine, nmine, own, sizeof(own));
    char at[192];
    if (!placed)
      snprintf(at, sizeof(at), "the machine's: the topology does not place GPU %s", busid);
    else if (!by_nic)
      snprintf(at, sizeof(at), "near GPU %s", busid);
    else if (by_gpu)
      snprintf(at, sizeof(at), "near GPU %s and NIC port %s", busid, port);
    else
      snprintf(at, sizeof(at), "near NIC port %s; %s GPU %s", port,
               ngpu > 0 ? "other CPUs are near" : "the topology does not place", busid);
    log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_PROXY, "proxy of rank %d: %d thread%s on CPUs %s (%s; the rank: %s)", rank,
        threads, threads > 1 ? "s" : "", where, at, own);
  }
  coll_gpu_proxy_config_t cfg{};
  cfg.rank = rank;
  cfg.nranks = nranks;
  cfg.threads = threads;
  cfg.cpus = cpus;
  cfg.ncpus = ncpus;
  cfg.log = log;
  cfg.spin_ns = kProxySpinNs;
  cfg.sleep_ns = kProxySleepNs;
  cfg.net = kind_;
  cfg.ifname = ifname_;
  return coll_gpu_proxy_create(&cfg, &proxy_, why, len);
}

coll_gpu_status_t Net::setup(const coll_gpu_bootstrap_t *b, const uint16_t *node, const uint8_t *linked,
                             const coll_gpu_peer_t *peers, int threads, int most, int here, coll_gpu_log_fn log,
                             char *why, size_t len) {
  const size_t abytes = COLL_GPU_PROXY_ADDRESS_BYTES;
  HostPtr<char[]> addresses = make_host_array<char>((size_t)b->size * abytes);
  int bad = -1;
  if (!coll_gpu_all_ok(b, addresses != nullptr ? 0 : 1, &bad)) {
    coll_gpu_say(why, len, "rank %d is out of host memory for the network proxies' addresses", bad);
    return COLL_GPU_SYSTEM_ERROR;
  }
  const int me = b->rank;
  bool remote = false;  // whether some connection leaves this machine (through a NIC)
  for (int r = 0; r < b->size; ++r) remote |= node[r] != node[me] && linked[r] && peers[r].host != peers[me].host;
  const bool started =
      start(me, b->size, threads, most, here, peers[me].busid, remote, log, why, len) == COLL_GPU_SUCCESS;
  char *mine = addresses.get() + (size_t)me * abytes;
  if (started) coll_gpu_proxy_address(proxy_, mine);  // zeros otherwise: refused by every peer
  if (b->allgather(b->ctx, mine, addresses.get(), abytes) != 0) {
    coll_gpu_say(why, len, "the network proxy address allgather failed");
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  coll_gpu_status_t s = started ? COLL_GPU_SUCCESS : COLL_GPU_SYSTEM_ERROR;
  for (int r = 0; r < b->size && s == COLL_GPU_SUCCESS; ++r) {
    if (node[r] == node[me] || !linked[r]) continue;
    const char *theirs = addresses.get() + (size_t)r * abytes;
    uint32_t magic;
    memcpy(&magic, theirs, sizeof(magic));
    if (magic == 0) {  // the zeros of a rank whose proxy did not start
      coll_gpu_say(why, len, "rank %d could not start its network proxy", r);
      s = COLL_GPU_SYSTEM_ERROR;
    } else {
      s = coll_gpu_proxy_connect(proxy_, r, theirs, peers[r].host == peers[me].host, why, len);
    }
  }
  if (!coll_gpu_all_ok(b, s == COLL_GPU_SUCCESS ? 0 : 1, &bad)) {
    if (s == COLL_GPU_SUCCESS) coll_gpu_say(why, len, "rank %d could not start or connect its network proxy", bad);
    return s == COLL_GPU_SUCCESS ? COLL_GPU_SYSTEM_ERROR : s;
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t Net::fifo(coll_gpu_proxy_dir_t dir, int peer, int id, size_t slot_bytes, coll_gpu_conn_t *conn,
                            char *why, size_t len) {
  if (nmem_ == kMaxFifos) {
    coll_gpu_say(why, len, "more than %d NET FIFOs", kMaxFifos);
    return COLL_GPU_INTERNAL_ERROR;
  }
  void *dev = nullptr;
  const size_t ll_bytes = (ll_bytes_ < slot_bytes ? ll_bytes_ : slot_bytes) & ~(size_t)(COLL_GPU_LL_LINE - 1);
  const size_t ll_at = (kSlots + COLL_GPU_RING_SLOTS * slot_bytes + kLine - 1) & ~(kLine - 1);
  const size_t bytes = ll_at + (ll_bytes > 0 ? COLL_GPU_RING_SLOTS * coll_gpu_ll_stride(ll_bytes) : 0);
  const coll_gpu_status_t rc = coll_gpu_host_mapped_alloc(mem_[nmem_].out(), &dev, bytes);
  if (rc != COLL_GPU_SUCCESS) {
    coll_gpu_say(why, len, "cannot allocate a NET FIFO of %d x %zu bytes in mapped host memory: %s",
                 COLL_GPU_RING_SLOTS, slot_bytes, coll_gpu_kernels_error());
    return rc;
  }
  char *host = (char *)mem_[nmem_++].get();
  const coll_gpu_proxy_fifo_t f{dir,
                                peer,
                                id,
                                host + kSlots,
                                slot_bytes,
                                COLL_GPU_RING_SLOTS,
                                (volatile uint64_t *)(host + kTail),
                                (volatile uint64_t *)(host + kHead),
                                (volatile uint64_t *)(host + kSizes),
                                ll_bytes > 0 ? host + ll_at : nullptr,
                                ll_bytes};
  COLL_GPU_CHECK(coll_gpu_proxy_add(proxy_, &f, why, len));
  char *d = (char *)dev;
  *conn = coll_gpu_conn_t{d + kSlots,
                          (uint64_t *)(d + kTail),
                          (uint64_t *)(d + kHead),
                          (uint64_t *)(d + kSizes),
                          ll_bytes > 0 ? d + ll_at : nullptr,
                          ll_bytes};
  return COLL_GPU_SUCCESS;
}

int Net::threads() const { return proxy_ != nullptr ? coll_gpu_proxy_threads(proxy_) : 0; }

void Net::wake(int first_id, int count) const {
  if (proxy_ != nullptr) coll_gpu_proxy_wake(proxy_, first_id, count);
}

coll_gpu_status_t Net::failed(int *peer, char *why, size_t len) const {
  return proxy_ != nullptr ? coll_gpu_proxy_failed(proxy_, peer, why, len) : COLL_GPU_SUCCESS;
}

void Net::reset() {
  coll_gpu_proxy_destroy(proxy_);
  proxy_ = nullptr;
  for (int i = 0; i < nmem_; ++i) mem_[i].reset();
  nmem_ = 0;
}

}  // namespace coll_gpu
