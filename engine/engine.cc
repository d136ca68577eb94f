/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The communicator engine (engine/engine.h).
 *
 * Creation, on every rank, in the same order (every bootstrap call is made even after a local failure,
 * so the collective calls always match):
 *   0. allgather of the offers: an engine of this process the communicator could share (engine.h), or
 *      none; when every rank offers the same one, the communicator takes it and creation ends here;
 *   1. local set-up on the buffer's device: scratch, status words, streams, the scratch's IPC handle;
 *   2. allgather of peer info: at most COLL_GPU_MAX_COMM_RANKS ranks, equal parameters, every rank set up;
 *      otherwise every rank reaches the same "unavailable". The ranks' nodes: their hosts, or with virtual
 *      nodes blocks of consecutive ranks of a host;
 *   3. nodes and channels: the rings (every rank's view of the node, merged, and the ring search,
 *      engine/rings.h; with several nodes each ring visits them one after another, and the rings take turns
 *      at which of a node's ranks start and end its run), and the ranks this rank's kernels have
 *      connections with. With several nodes, or more than COLL_GPU_MAX_DIRECT ranks,
 *      only ring algorithms run, and a rank connects to its rings' neighbours only (to every rank of
 *      another node too for the pairwise alltoall, which runs up to COLL_GPU_MAX_DIRECT ranks);
 *   4. the transports (engine/transport.h), each connecting the peers it reaches: with several nodes NET
 *      (the network proxies start, their addresses are allgathered, each connects to the ranks of other
 *      nodes it has connections with, and everyone says whether it could), then IPC (allgather of the
 *      IPC handles; each rank opens those of the peers on its node it has connections with) or, where the
 *      node's GPUs lack peer access (choose_node_transport, at the end of step 3), SHM (the scratch in pinned
 *      shared host memory: allgather of the segments' names, each rank maps and pins its node peers');
 *   5. the layout: the kernels' view of the communicator (kernels/allreduce.h), each transport's
 *      connections in it (the peers' scratch on this node, NET FIFOs moved by the proxy to other nodes),
 *      uploaded into the scratch;
 *   6. allgather of the results of 4 and 5;
 *   7. on one node of at most COLL_GPU_MAX_DIRECT ranks, the node's mailbox of the zero-copy alltoall
 *      (engine/mailbox.h; without it the alltoall goes through the FIFOs).
 * Per rank, the device memory (the scratch) grows with the ring orders' 2 bytes a rank only, the IPC
 * mappings and NET connections with the rings' neighbours; host bookkeeping keeps a few bytes a rank
 * (processes, nodes).
 */
#include "engine/engine.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "common/hash.h"
#include "engine/ipc_cache.h"
#include "engine/mailbox.h"
#include "engine/net.h"
#include "engine/nodes.h"
#include "engine/owning.h"
#include "engine/stage.h"
#include "engine/zero_copy.h"
#include "kernels/staging.h"
#include "proxy/trace.h"

using coll_gpu::ContextScope;
using coll_gpu::entered;

namespace {

constexpr uint64_t kReportGraceNs = 1000000000ULL;  // the host reports a wait 1 s after the kernels flag it
constexpr uint64_t kAbortGraceNs = 10000000000ULL;  // aborted kernels stop within microseconds: 10 s is a broken GPU
constexpr uint64_t kCheckNs = 100000000ULL;         // a call tested without waiting checks its peers every 100 ms
// Ring channels of a communicator that spans nodes: each hop between nodes holds 2 x 8 slots of pinned host
// memory per channel, and the network proxy moves each channel on one of its threads (a thread per channel
// at most), about one core's worth a thread over TCP. 16 channels on the 8 threads the proxy starts by
// default (kAutoProxyThreads) carried the large calls across 2 hosts x 2 H100 faster than 8 channels, and
// no size slower (docs/benchmarks.md); 16 threads, where the parameter asks for them and the CPUs are there,
// a channel each. Allreduce, allgather and reduce-scatter take a channel per thread while their steps are
// small (engine/tune.cc, net_ring_bound).
constexpr int kNetChannels = 16;
// With several ranks a node the rings take turns at which of a node's ranks start and end its run
// (coll_gpu_rings_rotate_nodes): kNetChannels channels a turn, a run of them on each turn's ring, and
// kNetMaxChannels in all, so 2 turns (a bcast from or a reduce to rank 0 finds its rings; a turn per rank
// would leave 8 ranks a node 4 channels a turn). A call takes at most kNetChannels of them: a bcast or
// reduce those of the rings whose chain crosses between nodes once per node, the others every ring's, taking
// turns (kernels/partition.h): allgather and reduce-scatter then move each rank's block on the ring where it
// starts or ends its node's run, where every rank has one (coll_gpu_rings_run_turns). Across 2 hosts x 2 H100,
// a bcast on the 8 channels of one turn, where 16 had taken turns channel by channel, took 1.17-1.76x the
// time of 16 from 512 KiB, a reduce up to 1.48x from 16 MiB (docs/benchmarks.md).
constexpr int kNetMaxChannels = 32;
// The proxy threads a rank starts unless coll_gpu_proxy_threads says: its share of the CPUs near its GPU,
// less one, and at most 8. Every thread polls while its channels move: 4 ranks of 16 threads on 64 cores
// (the mini-cluster's 2 hosts x 2 H100 on one machine) took bcast of 64 MiB from 4,917 to 3,334 us, but
// mid sizes up to twice as long (1 MiB 152 -> 322 us), the CPUs full; on 4 H200 every bcast from 64 KiB to
// 4 MiB took 2-3.5 ms, 64 threads polling on 64 cores beside the ranks (docs/benchmarks.md).
constexpr int kAutoProxyThreads = 8;

// A failed call of the kernels' C API (a cudaError_t or CUresult): the reason, then a breadcrumb.
#define CUDA_CHECK(call, why, len)                                                        \
  do {                                                                                    \
    const int rc_ = (call);                                                               \
    if (rc_ != 0) {                                                                       \
      coll_gpu_say(why, len, "%s failed: %s", #call, coll_gpu_staging_error_string(rc_)); \
      coll_gpu::breadcrumb(__FILE__, __LINE__, COLL_GPU_CUDA_ERROR);                      \
      return COLL_GPU_CUDA_ERROR;                                                         \
    }                                                                                     \
  } while (0)

uint64_t config_hash(const coll_gpu_engine_config_t &c) {
  const uint64_t v[] = {(uint64_t)c.tune.algorithm,
                        (uint64_t)c.tune.protocol,
                        (uint64_t)c.tune.nchannels,
                        (uint64_t)c.tune.max_channels,
                        c.tune.oneshot_max_bytes,
                        c.tune.twoshot_max_bytes,
                        c.tune.ring_chunk_bytes,
                        c.slot_bytes,
                        c.scratch_max_bytes,
                        (uint64_t)c.tune.move_algorithm[COLL_GPU_COLL_BCAST],
                        (uint64_t)c.tune.move_algorithm[COLL_GPU_COLL_ALLGATHER],
                        (uint64_t)c.tune.move_algorithm[COLL_GPU_COLL_ALLTOALL],
                        (uint64_t)c.tune.move_algorithm[COLL_GPU_COLL_REDUCE],
                        (uint64_t)c.tune.move_algorithm[COLL_GPU_COLL_REDUCE_SCATTER],
                        (uint64_t)c.virtual_nodes,
                        (uint64_t)(int64_t)c.proxy_net,
                        c.zero_copy_min_bytes,
                        c.zero_copy_map_bytes,
                        c.zero_copy_engines_min_bytes,
                        (uint64_t)(int64_t)c.node_transport};
  return coll_gpu_hash(v, sizeof(v), 0);
}

uint32_t next_ticket(uint32_t t) { return t + 1 == 0 ? 1 : t + 1; }

// An engine's name among every process's engines: its rank 0's host and process, and the number of the
// creation there. The same on every rank of the engine.
struct EngineId {
  uint64_t host;
  uint32_t pid, serial;
  bool operator==(const EngineId &o) const { return host == o.host && pid == o.pid && serial == o.serial; }
  bool none() const { return pid == 0; }
};

// What each rank says at step 0: the engine it offers (none: all zero), who it is, for the name of a
// new one, and whether its process has any engine over the same members (offered or not).
struct Offer {
  EngineId offer;
  EngineId self;
  uint32_t known;
  uint32_t pad;
  uint64_t unagreed;  // an engine of its own offered: its calls without an agreement so far
};

std::atomic<uint32_t> creations{0};  // this process's engine creations, for their names

}  // namespace

struct coll_gpu_engine {
  coll_gpu_engine_config_t cfg;
  int rank = 0, nranks = 0;
  coll_gpu_meminfo_t mem;
  coll_gpu_ar_layout_t layout = {};
  coll_gpu::DeviceMemory scratch;
  coll_gpu::DeviceMemory bounce;  // coll_gpu_engine_bounce: device memory for a rank that joins a call through it
  size_t bounce_bytes = 0;
  coll_gpu::Stream stream;         // blocking: after the work queued on the legacy default stream, as staging is
  coll_gpu::Stream linger_stream;  // non-blocking: a lingering kernel holds up no other work
  coll_gpu::Stream copy_stream;    // non-blocking: the zero-copy calls' copy engines, between the two events
  coll_gpu::Event copy_ready, copy_done;
  coll_gpu::HostMappedMemory status_mem;
  coll_gpu_ar_status_t *status = nullptr;  // host view of status_mem
  void *status_dev = nullptr;              // device view
  coll_gpu::HostMappedMemory waiting_mem;  // a byte per rank: the kernels' long waits (coll_gpu_dev_comm_t)
  volatile uint8_t *waiting = nullptr;     // host view
  void *waiting_dev = nullptr;             // device view
  bool lingering = false;                  // a lingering one-shot kernel may be polling for calls
  int linger_blocks = 0;                   // its blocks
  uint64_t instance = 0;                   // lingering kernels launched
  uint32_t ticket = 0;                     // the last ticket of status->call
  uint64_t seq = 0;
  coll_gpu_rings_t rings = {};
  coll_gpu_dev_comm_t comm = {};            // what every kernel gets, its connections uploaded into the scratch
  coll_gpu::HostPtr<int32_t[]> pid;         // every rank's process, from the peer exchange
  coll_gpu::HostPtr<uint8_t[]> visible;     // 1: its process can be checked from here (same PID namespace)
  coll_gpu::HostPtr<uint16_t[]> node;       // every rank's node: the lowest rank on it
  coll_gpu::HostPtr<uint8_t[]> linked;      // 1: a connection of this rank's kernels reaches that rank
  coll_gpu::HostPtr<uint8_t[]> gone;        // a wait's scratch: the ranks found gone
  coll_gpu::HostPtr<char[]> nodes_scratch;  // COLL_GPU_NODES_SCRATCH: allocated before the collective steps
  bool multinode = false;                   // the ranks span nodes: NET connections between them
  int run_turns = 0;                        // coll_gpu_rings_run_turns: the ring calls' run, or 0
  int run_blocks = 0;                       // with run_turns: the fewest first blocks of a call on every ring
  coll_gpu::Ipc ipc;                        // the transports (engine/transport.h): this node's peers
  coll_gpu::Shm shm;                        // or, where their GPUs lack peer access, through shared host memory
  bool shm_node = false;                    // alike on every rank: SHM serves the node's peers, not IPC
  coll_gpu::Net net;                        // and other nodes' ranks
  coll_gpu::Transport transports[2];        // those of this communicator: NET with several nodes, IPC or SHM
  int ntransports = 0;
  // sharing (engine.h): under registry_lock, the communicators that hold it; in one word, the one whose calls
  // count on it now and how many (owner << 32 | count; a count of 0: free, whatever owner says)
  EngineId id = {};
  uint64_t members = 0;                // 0: never offered
  bool own = false;                    // made by the first communicator over its processes (coll_gpu_engine_own)
  std::atomic<bool> own_taken{false};  // by another communicator: every call on it agrees from then on
  std::atomic<uint64_t> unagreed{0};   // its first communicator's calls without an agreement
  uint64_t config = 0;                 // config_hash of the parameters it was made with
  int refs = 1;
  std::atomic<uint64_t> claim{0};
  std::atomic<bool> failed{false};
  coll_gpu_engine *next_shared = nullptr;  // in the registry
  char name[64] = "";                      // the communicator that made it, for messages (cfg.name points here)
  // the zero-copy calls (kernels/move.cu, kernels/reduce.cuh): the buffers the ranks export (engine/zero_copy.h),
  // told through the node's mailbox and mapped through CUDA IPC once per allocation
  coll_gpu::Mailbox mbox;
  coll_gpu::IpcExports exports;
  coll_gpu::IpcImports imports;
  uint64_t zero_copy_calls = 0;  // its calls so far (two messages each)
  // The exchange of the zero-copy call under way (zero_copy_exchange's steps, between a nonblocking call's tests):
  // the messages it posted, the first rank that cannot take part, the largest block and the peers' exported buffers
  // (receive buffers; a reduce-scatter's send buffers) as mapped here.
  struct {
    int posted = 0;  // 0: none under way; 1, 2: messages posted
    uint64_t call = 0;
    int cannot = -1;
    size_t most = 0;
    void *peer_buf[COLL_GPU_MAX_DIRECT] = {};
    coll_gpu_vblock_t wants[COLL_GPU_MAX_DIRECT] = {};  // with counts: what each peer takes from this rank
    size_t gives[COLL_GPU_MAX_DIRECT] = {};             // and what each peer sends this rank
    uint64_t since = 0, next_check = 0;  // a nonblocking exchange's wait: its start, its next look at the peers
    bool reported = false;
  } zx;

  coll_gpu_engine(const coll_gpu_engine_config_t &c, int r, int n, const coll_gpu_meminfo_t &m)
      : cfg(c), rank(r), nranks(n), mem(m), imports(c.zero_copy_map_bytes) {
    snprintf(name, sizeof(name), "%s", c.name != nullptr ? c.name : "");
    cfg.name = name;
  }
  // The arrays of a byte or a few a rank; false when host memory ran out.
  bool alloc_ranks() {
    pid = coll_gpu::make_host_array<int32_t>(nranks);
    visible = coll_gpu::make_host_array<uint8_t>(nranks);
    node = coll_gpu::make_host_array<uint16_t>(nranks);
    linked = coll_gpu::make_host_array<uint8_t>(nranks);
    gone = coll_gpu::make_host_array<uint8_t>(nranks);
    nodes_scratch = coll_gpu::make_host_array<char>(COLL_GPU_NODES_SCRATCH(nranks));
    return pid != nullptr && visible != nullptr && node != nullptr && linked != nullptr && gone != nullptr &&
           nodes_scratch != nullptr && ipc.alloc(rank, nranks, &mem) &&
           (cfg.node_transport == COLL_GPU_ENGINE_NODE_IPC || shm.alloc(rank, nranks, &mem)) &&
           coll_gpu_rings_alloc(&rings, nranks) == COLL_GPU_SUCCESS;
  }
  coll_gpu_engine(const coll_gpu_engine &) = delete;
  coll_gpu_engine &operator=(const coll_gpu_engine &) = delete;
  // The resources go in the device's context, in this order (the owning types would free them after
  // the context is left). Errors are ignored: the application may have reset the device already.
  ~coll_gpu_engine() {
    ContextScope ctx(mem, mem.device >= 0);                    // no device: nothing was set up
    if (lingering) coll_gpu_stream_sync(linger_stream.get());  // it leaves within linger_ns
    net.reset();                                               // the proxy stops before its FIFOs go
    imports.clear(coll_gpu::cuda_ipc_ops());
    ipc.reset();
    shm.reset();
    copy_done.reset();
    copy_ready.reset();
    copy_stream.reset();
    linger_stream.reset();
    stream.reset();
    waiting_mem.reset();
    status_mem.reset();
    bounce.reset();
    scratch.reset();
    coll_gpu_rings_free(&rings);
  }

  coll_gpu_status_t setup_local(char *why, size_t len);
  // At most `most` ring channels: the tuning's bound and the layout's channels with it.
  void bound_channels(int most) {
    if (cfg.tune.max_channels > most) cfg.tune.max_channels = most;
    if (cfg.tune.nchannels > cfg.tune.max_channels) cfg.tune.nchannels = cfg.tune.max_channels;
    layout.nchannels = cfg.tune.max_channels;
  }
  void link_neighbours();
  coll_gpu_status_t alloc_scratch(char *why, size_t len);
  void choose_node_transport(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *peers);
  coll_gpu_status_t connect(const coll_gpu::TransportLinks &links, coll_gpu_status_t st, char *why, size_t len);
  coll_gpu_status_t setup_conns(char *why, size_t len);
  bool net_failed(uint8_t *gone, char *why = nullptr, size_t len = 0) const;
  void log_channels(const coll_gpu_peer_t &me) const;
  bool linger_takes(int blocks);
  coll_gpu_status_t linger_start(coll_gpu_work_t *p, int *blocks, char *why, size_t why_len);
  void linger_stop();
  void call_init(coll_gpu_work_t *p, coll_gpu_coll_t coll, const coll_gpu_choice_t &choice);
  coll_gpu_status_t mail_wait(uint64_t n, const char *call, uint64_t (*words)[coll_gpu::kMailWords], char *why,
                              size_t len);
  bool mail_try(uint64_t n, uint64_t (*words)[coll_gpu::kMailWords]);
  coll_gpu_status_t mail_late_gone(const char *call, char *why, size_t len) const;
  void mail_report(const char *call, double seconds) const;
  void zx_post_first(const coll_gpu_args_t &a);
  void zx_map(const coll_gpu_args_t &a, const uint64_t (*words)[coll_gpu::kMailWords]);
  void zx_post_second(const coll_gpu_args_t &a);
  bool zx_end(const coll_gpu_args_t &a, const uint64_t (*words)[coll_gpu::kMailWords]);
  coll_gpu_status_t zero_copy_exchange(const coll_gpu_args_t &a, bool *use, char *why, size_t len);
  coll_gpu_status_t zx_watch(const char *call, char *why, size_t len);
  coll_gpu_status_t launch_counted(const coll_gpu_args_t &a, bool blocking, char *why, size_t len);
  // The call on the GPUs: at most one, the last part of the call started last. Its done words are polled
  // by coll_gpu_engine_test without waiting, by wait_flight with waiting.
  struct {
    coll_gpu_work_t p;
    int blocks = 0;  // 0: none in flight
    coll_gpu_proto_t proto;
    uint64_t since = 0;       // when a test first found it pending
    uint64_t next_check = 0;  // when a test next checks the peers' processes
    bool reported = false;    // the watchdog line was written
    bool chained = false;     // a part of an allreduce's chain (its messages name the allreduce)
    // a call with counts whose ranks disagree: the first rank whose block this one sends more or fewer bytes of
    // than that rank takes (-1: none), and what the call's failure says once it completed
    int unlike = -1;
    char unlike_why[192];
  } flight;
  bool chaining = false;  // the parts launched now are an allreduce's chain (chained below)
  void wake_proxy(const coll_gpu_work_t &p);
  coll_gpu_status_t launch(const coll_gpu_work_t &p, coll_gpu_proto_t proto, bool linger, char *why, size_t why_len);
  coll_gpu_status_t wait_flight(char *why, size_t why_len);
  bool flight_done() const;
  void flight_end();
  void trace(const coll_gpu_work_t &p, size_t part, size_t bytes, const coll_gpu_choice_t &choice) const;
  void watchdog(const coll_gpu_work_t *call, coll_gpu_proto_t proto, double seconds) const;
  void describe(const coll_gpu_work_t *call, coll_gpu_proto_t proto, char *what, size_t len) const;
};

namespace {

// The engines this process may share (members != 0), and every engine's sharing fields.
pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
coll_gpu_engine *registry = nullptr;

bool id_before(const EngineId &a, const EngineId &b) {
  if (a.host != b.host) return a.host < b.host;
  return a.pid != b.pid ? a.pid < b.pid : a.serial < b.serial;
}

uint64_t claim_word(uint32_t owner, uint64_t count) { return count == 0 ? 0 : (uint64_t)owner << 32 | count; }

// Which of two engines a rank offers: an engine of its own first (there is one at most over the same
// processes), then the first by name, so that ranks holding the same ones offer the same.
bool offer_before(const coll_gpu_engine *e, const coll_gpu_engine *best) {
  if (best == nullptr) return true;
  if (e->own != best->own) return e->own;
  return id_before(e->id, best->id);
}

// Step 0: the engine this rank offers, claimed for the offer (once) so that no other communicator takes it
// meanwhile; nullptr: none. One no call counts on: an engine of its own only where share.own_ok, so that its
// first communicator's calls do not overlap the offer, and they do not come after it on one rank and before it
// on another (the offers then say how many there were).
coll_gpu_engine *registry_offer(const coll_gpu_engine_share_t &share, const coll_gpu_bootstrap_t *b, uint64_t config,
                                const coll_gpu_meminfo_t &mem) {
  pthread_mutex_lock(&registry_lock);
  coll_gpu_engine *best = nullptr;
  for (coll_gpu_engine *e = registry; e != nullptr; e = e->next_shared)
    if (e->members == share.members && (!e->own || share.own_ok) && e->rank == b->rank && e->nranks == b->size &&
        e->config == config && coll_gpu_engine_owns(e, &mem) && (uint32_t)e->claim.load() == 0 && !e->failed.load() &&
        offer_before(e, best))
      best = e;
  uint64_t free_word = best != nullptr ? best->claim.load() : 0;
  if (best != nullptr &&
      ((uint32_t)free_word != 0 || !best->claim.compare_exchange_strong(free_word, claim_word(share.owner, 1))))
    best = nullptr;  // a claim came first
  pthread_mutex_unlock(&registry_lock);
  return best;
}

// Whether this process has an engine over these members, offered or its communicator's own.
bool registry_knows(uint64_t members) {
  pthread_mutex_lock(&registry_lock);
  coll_gpu_engine *e = registry;
  while (e != nullptr && e->members != members) e = e->next_shared;
  pthread_mutex_unlock(&registry_lock);
  return e != nullptr;
}

// The offer ends: taken (the communicator holds a reference and its claims) or not (claims as before: none).
void registry_settle(coll_gpu_engine *e, const coll_gpu_engine_share_t *share, bool taken) {
  if (e == nullptr) return;
  pthread_mutex_lock(&registry_lock);
  if (taken) ++e->refs;
  if (taken && e->own) e->own_taken.store(true);
  e->claim.store(taken ? claim_word(share->owner, share->claims) : 0);  // only the offer's claim was on it
  pthread_mutex_unlock(&registry_lock);
}

// A new engine: claimed as share says, and offered from now on when it has members.
void registry_add(coll_gpu_engine *e, const coll_gpu_engine_share_t *share) {
  pthread_mutex_lock(&registry_lock);
  if (share != nullptr) {
    e->claim.store(claim_word(share->owner, share->claims));
    e->members = share->members;
  }
  if (e->members != 0) {
    e->next_shared = registry;
    registry = e;
  }
  pthread_mutex_unlock(&registry_lock);
}

}  // namespace

// What a call is, for messages only (never on a call's way). call: NULL for the lingering kernel's exit. The
// call in flight that is a part of an allreduce's chain is named after the allreduce, the call the user made.
void coll_gpu_engine::describe(const coll_gpu_work_t *call, coll_gpu_proto_t proto, char *what, size_t len) const {
  const bool chained = call == &flight.p && flight.chained;
  if (call == nullptr) {
    snprintf(what, len, "the exit of the lingering one-shot kernel");
    return;
  }
  char part[32] = "";
  if (chained) snprintf(part, sizeof(part), "chain: its %s, ", coll_gpu_coll_name(call->coll));
  snprintf(what, len, "%s seq %llu (%zu bytes, %s%s/%s)",
           coll_gpu_coll_mpi_name(chained ? COLL_GPU_COLL_ALLREDUCE : call->coll), (unsigned long long)call->seq,
           call->count * coll_gpu_dtype_size(call->type), part, coll_gpu_algo_name(call->algo),
           coll_gpu_proto_name(proto));
}

// The watchdog line, once per call: whom the kernels wait for (they flag it after the timeout).
void coll_gpu_engine::watchdog(const coll_gpu_work_t *call, coll_gpu_proto_t proto, double seconds) const {
  if (cfg.log == nullptr) return;
  char ranks[64] = "", what[128];
  coll_gpu::HostPtr<uint8_t[]> late = coll_gpu::make_host_array<uint8_t>(nranks);  // once per call: no hurry
  if (late != nullptr) {
    for (int r = 0; r < nranks; ++r) late[r] = waiting[r];
    coll_gpu_append_ranks(ranks, sizeof(ranks), late.get(), nranks);
  }
  describe(call, proto, what, sizeof(what));
  cfg.log(COLL_GPU_LVL_WATCHDOG, COLL_GPU_LOG_COLL,
          "comm %s: %s has waited %.0f s on the GPU for rank(s)%s, whose processes are alive: still waiting "
          "(reported once per call, after coll_gpu_timeout)",
          cfg.name, what, seconds, ranks[0] != '\0' ? ranks : " (not known yet)");
}

namespace {

// One call's wait for its kernels, over all the words it waits for.
class CallWait {
 public:
  // call: for messages; NULL: the lingering kernel's exit
  CallWait(coll_gpu_engine &e, const coll_gpu_work_t *call, coll_gpu_proto_t proto)
      : e_(e), cfg_(e.cfg.wait), call_(call), proto_(proto), gone_(e.gone.get()) {
    cfg_.timeout_ns += kReportGraceNs;
    coll_gpu_wait_init(&w_, &cfg_);
  }
  // Waits until *word == value: as long as the peers' processes exist. One found gone makes the kernels
  // abort (status->abort), which ends their waits; the word then comes, and aborted() says so. False if
  // the kernels did not stop within kAbortGraceNs of the abort.
  bool wait(const volatile uint64_t *word, uint64_t value);
  bool aborted() const { return aborted_at_ != 0; }
  // The reason a call failed after an abort; `stopped`: the kernels ended.
  void say_gone(bool stopped, char *why, size_t len) const;

 private:
  bool peers_gone();

  coll_gpu_engine &e_;
  coll_gpu_wait_config_t cfg_;
  coll_gpu_wait_t w_;
  const coll_gpu_work_t *call_;
  coll_gpu_proto_t proto_;
  uint8_t *gone_;            // peers found gone (the engine's scratch: one wait at a time; set by peers_gone)
  uint64_t aborted_at_ = 0;  // when the kernels were told to abort
  char net_why_[256] = "";   // what the network proxy found, when it found a failure
};

bool CallWait::peers_gone() {
  memset(gone_, 0, (size_t)e_.nranks);  // on a check only, not on every call's wait
  bool any = e_.net_failed(gone_, net_why_, sizeof(net_why_));
  for (int r = 0; r < e_.nranks; ++r)
    if (e_.visible[r] && coll_gpu_pid_gone(e_.pid[r])) {
      gone_[r] = 1;
      any = true;
    }
  return any;
}

bool CallWait::wait(const volatile uint64_t *word, uint64_t value) {
  while (*word != value) {
    const int what = coll_gpu_wait_pause(&w_);
    if (what & COLL_GPU_WAIT_CHECK) {
      if (aborted_at_ == 0 && peers_gone()) {
        e_.status->abort = 1;
        aborted_at_ = coll_gpu_now_ns();
      } else if (aborted_at_ != 0 && coll_gpu_now_ns() - aborted_at_ > kAbortGraceNs) {
        return false;
      }
    }
    if (what & COLL_GPU_WAIT_REPORT) e_.watchdog(call_, proto_, coll_gpu_wait_seconds(&w_));
  }
  return true;
}

void CallWait::say_gone(bool stopped, char *why, size_t len) const {
  char what[128];
  e_.describe(call_, proto_, what, sizeof(what));
  if (net_why_[0] != '\0') {
    coll_gpu_say(why, len, "%s: %s; the kernels were aborted%s", what, net_why_,
                 stopped ? "" : " and did not stop within 10 s");
    return;
  }
  coll_gpu_say(why, len, "%s: the process of rank(s)", what);
  coll_gpu_append_ranks(why, len, gone_, e_.nranks);
  const size_t at = strlen(why);
  snprintf(why + at, len - at, " ended before the call completed; the kernels were aborted%s",
           stopped ? "" : " and did not stop within 10 s");
}

}  // namespace

// Step 1: this rank's resources but the scratch, whose size the steps after the peer exchange decide.
coll_gpu_status_t coll_gpu_engine::setup_local(char *why, size_t len) {
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, len));
  CUDA_CHECK(coll_gpu_host_mapped_alloc(status_mem.out(), &status_dev, sizeof(coll_gpu_ar_status_t)), why, len);
  status = (coll_gpu_ar_status_t *)status_mem.get();
  CUDA_CHECK(coll_gpu_host_mapped_alloc(waiting_mem.out(), &waiting_dev, (size_t)nranks), why, len);
  waiting = (volatile uint8_t *)waiting_mem.get();
  CUDA_CHECK(coll_gpu_stream_create(stream.out(), 0), why, len);
  CUDA_CHECK(coll_gpu_stream_create(linger_stream.out(), 1), why, len);
  return COLL_GPU_SUCCESS;
}

// Step 3: the ranks this rank's kernels have connections with (linked): up to COLL_GPU_MAX_DIRECT ranks every
// peer (the direct algorithms and the pairwise alltoall reach them all), otherwise its neighbours in each ring.
void coll_gpu_engine::link_neighbours() {
  for (int r = 0; r < nranks; ++r) linked[r] = nranks <= COLL_GPU_MAX_DIRECT;
  for (int i = 0; i < rings.nrings; ++i) {
    const uint16_t *ring = coll_gpu_ring(&rings, i);
    int pos = 0;
    while (ring[pos] != rank) ++pos;
    linked[ring[(pos + 1) % nranks]] = linked[ring[(pos + nranks - 1) % nranks]] = 1;
  }
  linked[rank] = 0;
}

// Step 3, last: whether SHM serves the node's peers instead of IPC, alike on every rank: where the parameter says
// so, or (auto) where some rank's GPU has no peer access to the GPU of a rank of its node it connects to (a GPU not
// visible to this process is taken to have it: if CUDA IPC then fails, the call stages and says so). Auto costs an
// allgather. With SHM the zero-copy calls are off: the peers' own buffers cannot be mapped.
void coll_gpu_engine::choose_node_transport(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *peers) {
  shm_node = cfg.node_transport == COLL_GPU_ENGINE_NODE_SHM;
  if (cfg.node_transport == COLL_GPU_ENGINE_NODE_AUTO) {
    int lacks = -1;  // the first peer whose GPU this rank's cannot reach
    for (int r = 0; r < nranks && lacks < 0; ++r)
      if (r != rank && linked[r] && node[r] == node[rank] && coll_gpu_peer_access(mem.device, peers[r].busid) == 0)
        lacks = r;
    int bad = -1;
    shm_node = !coll_gpu_all_ok(b, lacks >= 0 ? 1 : 0, &bad);
    if (lacks >= 0 && cfg.log != nullptr)
      cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
              "comm %s: no CUDA peer access from this rank's GPU to rank %d's (%s)", cfg.name, lacks,
              peers[lacks].busid);
  }
  if (shm_node && cfg.log != nullptr)
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
            "comm %s: the ranks of a node reach each other through shared host memory (SHM, %s): no zero-copy calls",
            cfg.name,
            cfg.node_transport == COLL_GPU_ENGINE_NODE_SHM ? "coll_gpu_node_transport shm" : "no peer access");
}

// Step 4, first: the layout for the channels the communicator runs, within cfg.scratch_max_bytes, and the scratch,
// exported for the peers that map it (device memory for IPC, a shared memory segment of pinned host memory for SHM).
// The same layout on every rank (the same parameters and rank count, the same channels).
coll_gpu_status_t coll_gpu_engine::alloc_scratch(char *why, size_t len) {
  // rings only over several nodes (beyond COLL_GPU_MAX_DIRECT ranks the layout has no direct parts anyway)
  if (multinode) layout.ll_bytes = layout.twoshot_bytes = 0;
  const size_t want = coll_gpu_ar_scratch_bytes(&layout);
  if (!coll_gpu_tune_fit_layout(&layout, cfg.scratch_max_bytes)) {
    coll_gpu_say(why, len,
                 "%zu bytes of scratch at %d ranks do not fit coll_gpu_scratch_max_bytes (%zu) even with one ring "
                 "channel: raise it, or lower coll_gpu_oneshot_max_bytes and coll_gpu_twoshot_max_bytes",
                 want, nranks, cfg.scratch_max_bytes);
    return COLL_GPU_UNAVAILABLE;
  }
  bound_channels(layout.nchannels);
  if (layout.slot_bytes != cfg.slot_bytes && cfg.log != nullptr)
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
            "comm %s: %zu bytes of scratch bounded by coll_gpu_scratch_max_bytes (%zu): %d ring channels of %zu-byte "
            "slots",
            cfg.name, want, cfg.scratch_max_bytes, layout.nchannels, layout.slot_bytes);
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, len));
  const size_t bytes = coll_gpu_ar_scratch_bytes(&layout);
  if (shm_node) return shm.set_own(bytes, why, len);
  CUDA_CHECK(coll_gpu_dev_alloc(scratch.out(), bytes), why, len);
  return ipc.set_own(scratch.get(), why, len);
}

// Step 4: every transport connects the peers it reaches (NET, with several nodes, the ranks of the others;
// IPC this node's), each making its collective calls whatever came before (st: this rank's status so far);
// the first failure is the reason.
coll_gpu_status_t coll_gpu_engine::connect(const coll_gpu::TransportLinks &links, coll_gpu_status_t st, char *why,
                                           size_t len) {
  char later[8];  // a later transport's reason, once one failed
  for (int t = 0; t < ntransports; ++t) {
    const coll_gpu_status_t one = transports[t].connect(transports[t].self, links, st == COLL_GPU_SUCCESS ? why : later,
                                                        st == COLL_GPU_SUCCESS ? len : sizeof(later));
    if (st == COLL_GPU_SUCCESS) st = one;
  }
  return st;
}

// Step 5: the kernels' view of the communicator, each transport's connections in it, uploaded into the
// scratch.
coll_gpu_status_t coll_gpu_engine::setup_conns(char *why, size_t len) {
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, len));
  coll_gpu::HostPtr<coll_gpu_dev_conns_t[]> conns = coll_gpu::make_host_array<coll_gpu_dev_conns_t>(1);
  if (conns == nullptr) {
    coll_gpu_say(why, len, "out of host memory");
    return COLL_GPU_SYSTEM_ERROR;
  }
  CUDA_CHECK(coll_gpu_dev_comm_setup(&comm, conns.get(), rank, nranks, &layout, shm_node ? shm.view() : ipc.view(),
                                     rings.nrings, rings.span, rings.order, (coll_gpu_ar_status_t *)status_dev,
                                     (volatile uint8_t *)waiting_dev, cfg.wait.timeout_ns, cfg.linger_ns),
             why, len);
  for (int t = 0; t < ntransports; ++t)
    COLL_GPU_CHECK(transports[t].fill(transports[t].self, comm, conns.get(), why, len));
  CUDA_CHECK(coll_gpu_dev_comm_upload(&comm, conns.get(), rings.nrings, rings.order), why, len);
  comm.max_blocks = cfg.tune.max_blocks;  // the one-shot kernels' bound where ranks share a GPU
  return COLL_GPU_SUCCESS;
}

// Whether the proxy found a peer gone or the network broken; marks the peer in gone[], and says what
// happened in why (if not NULL).
bool coll_gpu_engine::net_failed(uint8_t *gone, char *why, size_t len) const {
  int peer = -1;
  char what[256];
  if (net.failed(&peer, what, sizeof(what)) == COLL_GPU_SUCCESS) return false;
  if (peer >= 0 && peer < nranks) gone[peer] = 1;
  if (why != nullptr) coll_gpu_say(why, len, "%s", what);
  return true;
}

void coll_gpu_engine::log_channels(const coll_gpu_peer_t &me) const {
  if (cfg.log == nullptr) return;
  cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
          "comm %s: GPU collectives on device %d (%s), %d ranks, %zu bytes of scratch", cfg.name, mem.device, me.busid,
          nranks, coll_gpu_ar_scratch_bytes(&layout));
  if (multinode) {
    int nodes = 0, hops = 0;
    const uint16_t *ring = coll_gpu_ring(&rings, 0);
    for (int r = 0; r < nranks; ++r) nodes += node[r] == r;
    for (int i = 0; i < nranks; ++i) hops += node[ring[i]] != node[ring[(i + 1) % nranks]];
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
            "comm %s: %d nodes%s; %d of each ring's %d hops over NET (the network proxy, UCX, %d threads), ring "
            "algorithms only, %d channels",
            cfg.name, nodes, cfg.virtual_nodes > 0 ? " (virtual)" : "", hops, nranks, net.threads(), layout.nchannels);
  }
  if (rings.speed > 0)
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "comm %s: %d ring(s) from the topology, the first at %.1f GB/s",
            cfg.name, rings.nrings, rings.speed);
  const size_t size = (size_t)nranks * 7 + 1;  // " 32767" a rank
  coll_gpu::HostPtr<char[]> line = coll_gpu::make_host_array<char>(size);
  for (int ch = 0; ch < cfg.tune.max_channels && line != nullptr; ++ch) {
    size_t len = 0;
    for (int r = 0; r < nranks; ++r)
      len += (size_t)snprintf(line.get() + len, size - len, " %d",
                              coll_gpu_ring(&rings, coll_gpu_channel_ring(ch, rings.nrings, rings.span))[r]);
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "Channel %02d/%02d :%s", ch, cfg.tune.max_channels, line.get());
  }
}

coll_gpu_status_t coll_gpu_engine_create(const coll_gpu_bootstrap_t *b, const coll_gpu_engine_config_t *cfg,
                                         const coll_gpu_meminfo_t *mem, const coll_gpu_engine_share_t *share,
                                         coll_gpu_engine_t **out, char *why, size_t why_len) {
  *out = nullptr;
  // 0. offers
  const bool may_share = share != nullptr && share->members != 0 && b->size >= 2 && b->size <= COLL_GPU_MAX_COMM_RANKS;
  coll_gpu_engine *offered = may_share ? registry_offer(*share, b, config_hash(*cfg), *mem) : nullptr;
  Offer mine = {};
  if (offered != nullptr) {
    mine.offer = offered->id;
    mine.unagreed = offered->unagreed.load();
  }
  mine.known = may_share && registry_knows(share->members);
  mine.self = {coll_gpu_host_id(), (uint32_t)getpid(), creations.fetch_add(1) + 1};
  coll_gpu::HostPtr<Offer[]> offers = coll_gpu::make_host_array<Offer>(b->size);
  if (offers == nullptr || b->allgather(b->ctx, &mine, offers.get(), sizeof(Offer)) != 0) {
    registry_settle(offered, share, false);
    snprintf(why, why_len, "the offer allgather failed");
    return COLL_GPU_UNAVAILABLE;
  }
  bool same = !offers[0].offer.none();
  for (int r = 1; r < b->size && same; ++r)
    same = offers[r].offer == offers[0].offer && offers[r].unagreed == offers[0].unagreed;
  bool first = may_share;  // no rank's process has an engine over these members yet
  for (int r = 0; r < b->size && first; ++r) first = offers[r].known == 0;
  const bool takes_own = same && coll_gpu_engine_own(offered);
  registry_settle(offered, share, same);
  if (same) {
    if (cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: shares the GPU resources of comm %s (scratch, streams, network proxy): %d communicators",
               cfg->name, offered->name, coll_gpu_engine_refs(offered));
    if (takes_own && cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: GPU resources shared with comm %s from now on: its blocking calls agree on their path too",
               offered->name, cfg->name);
    *out = offered;
    return COLL_GPU_SUCCESS;
  }
  const EngineId id = offers[0].self;
  offers.reset();

  coll_gpu::HostPtr<coll_gpu_engine> e = coll_gpu::make_host<coll_gpu_engine>(*cfg, b->rank, b->size, *mem);
  coll_gpu::HostPtr<coll_gpu_peer_t[]> peers = coll_gpu::make_host_array<coll_gpu_peer_t>(b->size);
  int bad = -1;
  snprintf(why, why_len, "out of host memory");
  // a local failure still makes every collective step below, with ok = 0
  bool local_ok = e != nullptr && peers != nullptr && e->alloc_ranks();
  if (e != nullptr) {
    e->layout.nranks = b->size;
    e->layout.ll_bytes = cfg->tune.oneshot_max_bytes;
    e->layout.twoshot_bytes = cfg->tune.twoshot_max_bytes;
    e->layout.slot_bytes = cfg->slot_bytes;
    e->layout.nchannels = cfg->tune.max_channels;
  }

  // 1. local set-up (only where the communicator can possibly qualify)
  coll_gpu_peer_t me = {};
  me.host = coll_gpu_host_id();
  me.pid = (int32_t)getpid();
  me.device = mem->device;
  me.config_hash = config_hash(*cfg);
  me.rdma = coll_gpu_host_has_rdma();
  if (local_ok && b->size >= 2 && b->size <= COLL_GPU_MAX_COMM_RANKS) {
    local_ok = coll_gpu_device_identity(mem->device, (char *)me.uuid, me.busid, &me.sms) == 0 &&
               e->setup_local(why, why_len) == COLL_GPU_SUCCESS;
  }
  me.ok = local_ok;

  // 2. peer info
  if (peers == nullptr) return COLL_GPU_UNAVAILABLE;
  if (coll_gpu_peers_exchange(b, &me, peers.get()) != COLL_GPU_SUCCESS) {
    snprintf(why, why_len, "the peer info allgather failed");
    return COLL_GPU_UNAVAILABLE;
  }
  if (b->size < 2) {
    snprintf(why, why_len, "a single rank needs no GPU path");
    return COLL_GPU_UNAVAILABLE;
  }
  if (b->size > COLL_GPU_MAX_COMM_RANKS) {
    snprintf(why, why_len, "%d ranks: the GPU path takes at most %d", b->size, COLL_GPU_MAX_COMM_RANKS);
    return COLL_GPU_UNAVAILABLE;
  }
  for (int r = 0; r < b->size; ++r) {
    if (peers[r].config_hash != peers[0].config_hash) {
      snprintf(why, why_len, "rank %d has other coll_gpu parameters than rank 0: set them alike", r);
      return COLL_GPU_UNAVAILABLE;
    }
    if (!peers[r].ok) {
      if (r != b->rank) snprintf(why, why_len, "rank %d could not set up its GPU", r);
      return COLL_GPU_UNAVAILABLE;
    }
  }

  e->multinode =
      coll_gpu_nodes_assign(peers.get(), b->size, cfg->virtual_nodes, e->node.get(), e->nodes_scratch.get()) > 1;
  int here = 0;  // ranks on this host: they share its CPUs
  for (int r = 0; r < b->size; ++r) here += peers[r].host == peers[b->rank].host;
  if (e->multinode || b->size > COLL_GPU_MAX_DIRECT) {
    // ring algorithms only: the direct ones write into every peer's scratch; across nodes, an allreduce's choice
    // between the ring and the chain of a reduce and a bcast stays the tuning's, or the user's
    const int forced = e->cfg.tune.algorithm;
    e->cfg.tune.algorithm =
        e->multinode && (forced < 0 || forced == COLL_GPU_ALGO_CHAIN) ? forced : (int)COLL_GPU_ALGO_RING;
    for (int c = 0; c < COLL_GPU_NCOLLS; ++c) e->cfg.tune.move_algorithm[c] = COLL_GPU_ALGO_RING;
  }
  if (e->multinode) {  // on a few channels (the rings' turns below tell how many)
    e->own = first;
    e->cfg.tune.net = 1;
    e->bound_channels(kNetMaxChannels);
  }
  e->cfg.tune.min_sms = peers[0].sms;  // the same on every rank, for the same choices
  for (int r = 0; r < b->size; ++r) {
    if (peers[r].sms < e->cfg.tune.min_sms) e->cfg.tune.min_sms = peers[r].sms;
    e->pid[r] = peers[r].pid;
    // a process of another host is not checked (its pid means nothing here): the proxy watches it
    e->visible[r] = r != b->rank && peers[r].host == peers[b->rank].host && coll_gpu_pid_visible(peers[r].pid);
  }
  // Ranks that share a GPU (several a GPU, under MPS) run their kernels on it at once, and a block waits for
  // its peers' blocks: all their blocks must fit on the multiprocessors together, at one each at worst.
  const int gpu_ranks = coll_gpu_gpu_ranks(peers.get(), b->size, e->nodes_scratch.get());
  if (gpu_ranks > 1 && e->cfg.tune.min_sms > 1) {
    int most = (e->cfg.tune.min_sms - 1) / gpu_ranks;
    if (most < 1) most = 1;
    e->cfg.tune.max_blocks = most;
    e->bound_channels(most);
    if (cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: up to %d ranks share a GPU: at most %d blocks a kernel, %d channels", cfg->name, gpu_ranks,
               most, e->cfg.tune.max_channels);
  }

  // 3. the rings
  if (coll_gpu_rings_compute(b, peers.get(), &cfg->topo, &e->rings, why, why_len) != COLL_GPU_SUCCESS)
    return COLL_GPU_UNAVAILABLE;
  if (why[0] != '\0' && cfg->log != nullptr)
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "comm %s: rings in rank order: %s", cfg->name, why);
  if (e->multinode) {
    coll_gpu_rings_by_node(&e->rings, e->node.get(), e->nodes_scratch.get());
    const int turns =
        coll_gpu_rings_rotate_nodes(&e->rings, e->node.get(), kNetMaxChannels / kNetChannels, e->nodes_scratch.get());
    e->bound_channels(kNetChannels * turns);
    e->run_turns = coll_gpu_rings_run_turns(&e->rings, e->node.get(), e->nodes_scratch.get());
  }
  e->link_neighbours();
  e->choose_node_transport(b, peers.get());

  // 4. the scratch, then the transports: NET (the network proxies, connected to the ranks of other nodes), then
  // IPC or SHM
  const coll_gpu_status_t allocated = e->alloc_scratch(why, why_len);
  if (e->multinode) {
    e->rings.span = std::max(1, e->layout.nchannels / e->rings.nrings);  // a run of channels a ring
    // a call runs on every ring (coll_gpu_work_t's run) from as many blocks as its first reach them all
    const int nrings = e->rings.nrings, span = e->rings.span;
    unsigned reached = 0;
    while (e->run_turns > 0 && reached != (1u << nrings) - 1 && e->run_blocks < e->layout.nchannels)
      reached |= 1u << coll_gpu_channel_ring(coll_gpu_work_channel(0, nrings, span, e->run_blocks++), nrings, span);
    if (reached != (1u << nrings) - 1) e->run_turns = 0;
    int most = e->layout.nchannels < COLL_GPU_ENGINE_MAX_PROXY_THREADS ? e->layout.nchannels
                                                                       : COLL_GPU_ENGINE_MAX_PROXY_THREADS;
    if (cfg->proxy_threads > 0 && cfg->proxy_threads < most) most = cfg->proxy_threads;
    if (cfg->proxy_threads <= 0 && most > kAutoProxyThreads) most = kAutoProxyThreads;
    // the same on every rank (the threads a rank starts may be fewer, by its CPUs)
    e->cfg.tune.net_ring_channels = most;
    int rdma = 0;
    for (int r = 0; r < b->size; ++r) rdma |= peers[r].rdma != 0;
    const int kind = coll_gpu_net_choose(cfg->proxy_net, rdma, cfg->virtual_nodes);
    e->net.configure(cfg->proxy_threads > 0 ? most : 0, most, here, (coll_gpu_proxy_net_t)kind, cfg->socket_ifname,
                     cfg->log);
    e->transports[e->ntransports++] = coll_gpu::transport_of(&e->net);
  }
  e->transports[e->ntransports++] = e->shm_node ? coll_gpu::transport_of(&e->shm) : coll_gpu::transport_of(&e->ipc);
  const coll_gpu::TransportLinks links = {b, peers.get(), e->node.get(), e->linked.get()};
  bool connected = e->connect(links, allocated, why, why_len) == COLL_GPU_SUCCESS;
  // 5. the layout: the kernels' view and its connections
  connected = connected && e->setup_conns(why, why_len) == COLL_GPU_SUCCESS;
  // 6. everyone connected everything
  if (!coll_gpu_all_ok(b, connected ? 0 : 1, &bad)) {
    if (connected) snprintf(why, why_len, "rank %d could not connect to its peers", bad);
    return COLL_GPU_UNAVAILABLE;
  }
  // 7. the zero-copy alltoall's mailbox: without it (alike on every rank) the alltoall goes through the FIFOs
  if (!e->multinode && b->size <= COLL_GPU_MAX_DIRECT && cfg->zero_copy_min_bytes > 0 && !e->shm_node) {
    char whynot[256];
    if (e->mbox.create(b, whynot, sizeof(whynot)) != COLL_GPU_SUCCESS && cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT, "comm %s: no zero-copy alltoall (%s)", cfg->name, whynot);
  }
  e->log_channels(me);
  if (e->own && cfg->log != nullptr)
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
             "comm %s: GPU resources of its own (the first over its processes): blocking calls on them need no path "
             "agreement",
             cfg->name);
  e->id = id;
  e->config = me.config_hash;
  registry_add(e.get(), may_share ? share : nullptr);
  *out = e.release();
  return COLL_GPU_SUCCESS;
}

int coll_gpu_zero_copy_wins(coll_gpu_coll_t coll, int nranks, size_t bytes) {
  constexpr size_t kMiB = (size_t)1 << 20;
  if (nranks > COLL_GPU_MAX_DIRECT) return 0;
  switch (coll) {
    case COLL_GPU_COLL_ALLTOALL:
      return 1;
    case COLL_GPU_COLL_ALLGATHER:
      return nranks == 2 || bytes <= 8 * kMiB;
    case COLL_GPU_COLL_BCAST:
      return nranks == 2;
    case COLL_GPU_COLL_REDUCE_SCATTER:
      return bytes <= (nranks == 2 ? 64 : 4) * kMiB;
    default:
      return 0;
  }
}

int coll_gpu_net_choose(int param, int any_rdma, int virtual_nodes) {
  if (param != COLL_GPU_ENGINE_PROXY_NET_AUTO) return param;
  return any_rdma || virtual_nodes > 0 ? COLL_GPU_ENGINE_PROXY_NET_UCX : COLL_GPU_ENGINE_PROXY_NET_SOCKETS;
}

void coll_gpu_engine_release(coll_gpu_engine_t *e) {
  if (e == nullptr) return;
  pthread_mutex_lock(&registry_lock);
  const bool last = --e->refs == 0;
  if (last && e->members != 0)
    for (coll_gpu_engine **at = &registry; *at != nullptr; at = &(*at)->next_shared)
      if (*at == e) {
        *at = e->next_shared;
        break;
      }
  pthread_mutex_unlock(&registry_lock);
  if (last) {
    coll_gpu::HostDelete<coll_gpu_engine>()(e);
    (void)coll_gpu_trace_write();  // its proxy stopped: the steps so far (proxy/trace.h), where recorded
  }
}

// One compare-and-swap each, no lock: every call takes and ends a claim.
int coll_gpu_engine_claim(coll_gpu_engine_t *e, uint32_t owner) {
  if (e->failed.load(std::memory_order_relaxed)) return 0;
  uint64_t w = e->claim.load(std::memory_order_acquire);
  do {
    if ((uint32_t)w != 0 && w >> 32 != owner) return 0;
  } while (!e->claim.compare_exchange_weak(w, claim_word(owner, (uint32_t)w + 1), std::memory_order_acq_rel,
                                           std::memory_order_acquire));
  return 1;
}

void coll_gpu_engine_unclaim(coll_gpu_engine_t *e, uint32_t owner) {
  uint64_t w = e->claim.load(std::memory_order_acquire);
  do {
    if ((uint32_t)w == 0 || w >> 32 != owner) return;
  } while (!e->claim.compare_exchange_weak(w, claim_word(owner, (uint32_t)w - 1), std::memory_order_acq_rel,
                                           std::memory_order_acquire));
}

int coll_gpu_engine_refs(const coll_gpu_engine_t *e) {
  pthread_mutex_lock(&registry_lock);
  const int refs = e->refs;
  pthread_mutex_unlock(&registry_lock);
  return refs;
}

int coll_gpu_engine_own(const coll_gpu_engine_t *e) { return e->own && !e->own_taken.load(); }

int coll_gpu_engine_unagreed(coll_gpu_engine_t *e) {
  if (!coll_gpu_engine_own(e)) return 0;
  e->unagreed.fetch_add(1);
  return 1;
}

coll_gpu_status_t coll_gpu_engine_bounce(coll_gpu_engine_t *e, size_t bytes, void **dev, char *why, size_t len) {
  if (bytes > e->bounce_bytes) {
    constexpr size_t kRound = (size_t)2 << 20;  // grown in steps of 2 MiB, not by every larger call
    ContextScope ctx(e->mem);
    COLL_GPU_CHECK(entered(ctx, e->mem, why, len));
    e->bounce.reset();
    e->bounce_bytes = 0;
    const size_t want = (bytes + kRound - 1) / kRound * kRound;
    CUDA_CHECK(coll_gpu_dev_alloc(e->bounce.out(), want), why, len);
    e->bounce_bytes = want;
  }
  *dev = e->bounce.get();
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t coll_gpu_engine_copy(coll_gpu_engine_t *e, void *dst, const void *src, size_t bytes, char *why,
                                       size_t len) {
  CUDA_CHECK(coll_gpu_cuda_engine.copy(dst, src, bytes, &e->mem), why, len);  // staging's copy, in the engine's context
  return COLL_GPU_SUCCESS;
}

int coll_gpu_engine_owns(const coll_gpu_engine_t *e, const coll_gpu_meminfo_t *mem) {
  return mem->kind == COLL_GPU_MEM_DEVICE && mem->device == e->mem.device && mem->ctx == e->mem.ctx;
}

// Whether a one-shot call of `blocks` blocks goes to a lingering kernel: none lingers, the one that
// lingers has blocks enough, or it has left (then one of this call's size replaces it). Otherwise the
// call gets a kernel of its own next to it.
bool coll_gpu_engine::linger_takes(int blocks) {
  if (!lingering || blocks <= linger_blocks) return true;
  if (status->exited != instance) return false;
  // the ticket it waited for is spent: its block 0 wrote that ticket into the scratch record that tells
  // the others to exit
  lingering = false;
  ticket = next_ticket(ticket);
  return true;
}

// Starts one-shot call p on a lingering kernel (coll_gpu_ar_status_t says how): hands it to the kernel
// that lingers, else launches one. Sets *blocks to the blocks that will write done. Such kernels run on a
// non-blocking stream, so the call first waits for the work queued on the legacy default stream, as a
// kernel on the blocking stream would. In the current context; linger_takes said yes.
coll_gpu_status_t coll_gpu_engine::linger_start(coll_gpu_work_t *p, int *blocks, char *why, size_t why_len) {
  CUDA_CHECK(coll_gpu_legacy_stream_wait(), why, why_len);
  if (lingering) {
    ticket = next_ticket(ticket);
    coll_gpu_ar_linger_post(status, ticket, p);
    *blocks = linger_blocks;
    if (status->leaving != instance) return COLL_GPU_SUCCESS;  // it will see the call
    // it stopped polling: once it says it exits, done[0] tells whether it took the call
    CallWait cw(*this, nullptr, COLL_GPU_PROTO_LL);
    const bool stopped = cw.wait(&status->exited, instance);
    if (cw.aborted() || !stopped) {
      cw.say_gone(stopped, why, why_len);
      return COLL_GPU_PEER_GONE;
    }
    lingering = false;
    if (status->done[0] == p->seq) return COLL_GPU_SUCCESS;
  }
  p->instance = ++instance;
  p->ticket = next_ticket(ticket);
  CUDA_CHECK(coll_gpu_ar_linger_launch(&comm, p, linger_stream.get()), why, why_len);
  lingering = true;
  linger_blocks = *blocks = coll_gpu_ar_blocks(&comm, p);
  return COLL_GPU_SUCCESS;
}

// Tells the lingering kernel to leave now instead of after linger_ns: a ring or two-shot kernel takes a
// multiprocessor per block (128 at the defaults), and the ones the lingering kernel holds would keep that
// many of its blocks waiting until it left. It leaves at once; the host does not wait for it (the next
// lingering kernel queues behind it on linger_stream). A kernel that has already left ignores the order.
void coll_gpu_engine::linger_stop() {
  ticket = next_ticket(ticket);
  coll_gpu_ar_linger_stop(status, ticket);
  lingering = false;
}

// A call's work, with the next seq.
void coll_gpu_engine::call_init(coll_gpu_work_t *p, coll_gpu_coll_t coll, const coll_gpu_choice_t &choice) {
  memset(p, 0, sizeof(*p));
  // the LL flag is the low 32 bits of seq: never 0
  if ((uint32_t)++seq == 0) ++seq;
  p->coll = coll;
  p->algo = choice.algo;
  p->nchannels = choice.nchannels;
  p->chunk = choice.chunk;
  p->seq = seq;
}

// Before call p's launch, the proxy threads of its connections that move on this rank: its ring channels (a
// channel whose ring gives this rank no hop over the network to move in the call, a bcast's or reduce's chain
// passing it by, wakes none: a woken thread polls for 1 ms, and 4 ranks of 16 threads polling on 64 cores
// held every bcast up by milliseconds, docs/benchmarks.md), and for alltoall every pair's.
void coll_gpu_engine::wake_proxy(const coll_gpu_work_t &p) {
  int moves[COLL_GPU_MAX_RINGS];  // by ring: a ring's answer costs its length
  for (int i = 0; i < rings.nrings; ++i) moves[i] = -1;
  for (int b = 0; b < p.nchannels; ++b) {
    const int ch = coll_gpu_work_channel(p.rings, rings.nrings, rings.span, b);
    const int i = coll_gpu_channel_ring(ch, rings.nrings, rings.span);
    if (moves[i] < 0)
      moves[i] = coll_gpu_ring_moves_net(coll_gpu_ring(&rings, i), nranks, node.get(), rank, p.coll, p.root);
    if (moves[i]) net.wake(ch, 1);
  }
  if (p.coll == COLL_GPU_COLL_ALLTOALL) net.wake(coll_gpu::Net::kP2pId, COLL_GPU_P2P_CONNS);
}

// The ranks mail_try found late: COLL_GPU_PEER_GONE, said, where one's process has ended.
coll_gpu_status_t coll_gpu_engine::mail_late_gone(const char *call, char *why, size_t len) const {
  const uint8_t *late = gone.get();
  for (int q = 0; q < nranks; ++q)
    if (late[q] && visible[q] && coll_gpu_pid_gone(pid[q])) {
      coll_gpu_say(why, len, "%s (zero-copy): the process of rank %d ended before it reached the call", call, q);
      return COLL_GPU_PEER_GONE;
    }
  return COLL_GPU_SUCCESS;
}

// The watchdog's line on the ranks mail_try found late, `seconds` into the wait.
void coll_gpu_engine::mail_report(const char *call, double seconds) const {
  if (cfg.log == nullptr) return;
  char ranks[64] = "";
  coll_gpu_append_ranks(ranks, sizeof(ranks), gone.get(), nranks);
  cfg.log(COLL_GPU_LVL_WATCHDOG, COLL_GPU_LOG_COLL,
          "comm %s: %s (zero-copy) has waited %.0f s for rank(s)%s to reach it, whose processes are alive: "
          "still waiting (reported once per call, after coll_gpu_timeout)",
          cfg.name, call, seconds, ranks);
}

// Waits for every rank's message n of the mailbox, into words[rank]: as long as their processes exist, with the
// watchdog's line once after the timeout (naming `call`, the MPI function).
coll_gpu_status_t coll_gpu_engine::mail_wait(uint64_t n, const char *call, uint64_t (*words)[coll_gpu::kMailWords],
                                             char *why, size_t len) {
  coll_gpu_wait_t w;
  coll_gpu_wait_init(&w, &cfg.wait);
  for (;;) {
    if (mail_try(n, words)) return COLL_GPU_SUCCESS;
    const int what = coll_gpu_wait_pause(&w);
    if (what & COLL_GPU_WAIT_CHECK) COLL_GPU_CHECK(mail_late_gone(call, why, len));
    if (what & COLL_GPU_WAIT_REPORT) mail_report(call, coll_gpu_wait_seconds(&w));
  }
}

namespace {
// The MPI function of a zero-copy call.
const char *zero_copy_call(const coll_gpu_args_t &a) {
  if (a.v != nullptr && a.v->call != nullptr) return a.v->call;
  if (a.v == nullptr) return coll_gpu_coll_mpi_name(a.coll);
  return a.coll == COLL_GPU_COLL_ALLGATHER ? "MPI_Allgatherv" : "MPI_Alltoallv";
}

// Call p as zero-copy call a, after its exchange (e->zx): its parts and blocks, and whether copy engines move them
// (zero_copy_engines_min_bytes, a blocking move only: a started one's copies overlapped the caller's computation less
// than the kernel's stores did, 70-97% against 96-99% on 2 H200 from 64 MiB, docs/benchmarks.md; a reduce-scatter
// reduces as it reads, on the SMs). Returns zc_blocks' answer (-1, or the first rank whose block this one sends
// differs from what that rank takes).
int zero_copy_work(const coll_gpu_engine_t *e, const coll_gpu_args_t &a, bool blocking, coll_gpu_work_t *p) {
  p->zc_parts = coll_gpu::zc_parts(e->cfg.tune, e->nranks, e->zx.most);
  p->zc_engines = blocking && a.coll != COLL_GPU_COLL_REDUCE_SCATTER &&
                  coll_gpu::zc_engines(e->cfg.zero_copy_engines_min_bytes, e->nranks, e->zx.most);
  return coll_gpu::zc_blocks(e->rank, e->nranks, a, e->zx.peer_buf, e->zx.wants, p->zc);
}
}  // namespace

// The zero-copy exchange of call a, two messages through the node's mailbox (engine/zero_copy.h): the first tells
// where this rank's exported buffer lies (its receive buffer; a reduce-scatter's send buffer), or that it cannot be
// exported (not cudaMalloc memory, or blocks that lie past its allocation), and the largest block this rank sends; the
// second whether this rank has mapped every peer's and, with counts, where it takes each peer's block. Every rank posts
// both messages whatever fails here (a peer waits for them): a failure only says "cannot". In steps (zx), so that a
// nonblocking call moves it on without waiting.

// Whether every rank has posted message n: words[rank] its words; the engine's gone scratch marks the ranks not yet.
bool coll_gpu_engine::mail_try(uint64_t n, uint64_t (*words)[coll_gpu::kMailWords]) {
  uint8_t *late = gone.get();  // one wait at a time
  int missing = 0;
  for (int q = 0; q < nranks; ++q) {
    late[q] = !mbox.read(q, n, words[q]);
    missing += late[q];
  }
  return missing == 0;
}

// Message 1 of a new call.
void coll_gpu_engine::zx_post_first(const coll_gpu_args_t &a) {
  using namespace coll_gpu;
  zx.call = ++zero_copy_calls;
  zx.cannot = -1;
  zx.most = 0;
  zx.since = 0;
  zx.reported = false;
  ContextScope ctx(mem);
  char whynot[128];
  const bool in_ctx = entered(ctx, mem, whynot, sizeof(whynot)) == COLL_GPU_SUCCESS;
  uint64_t mine[kMailWords] = {};
  coll_gpu_alloc_t al;
  const char *buf = (const char *)zc_exported(a);
  if (zc_receives_nothing(rank, nranks, a)) {
    mine[kZcCan] = kZcNothing;
  } else if (in_ctx && coll_gpu_mem_alloc_of(buf, &al) == 0 && al.exportable &&
             zc_fits(nranks, a, al.size - (size_t)(buf - (char *)al.base)) &&
             exports.handle(cuda_ipc_ops(), al.id, al.base, (unsigned char *)&mine[kZcHandle]) == 0) {
    mine[kZcCan] = kZcExported;
    mine[kZcId] = al.id;
    mine[kZcSize] = al.size;
    mine[kZcOffset] = (uint64_t)(buf - (char *)al.base);
    mine[kZcRoom] = al.size - mine[kZcOffset];
  }
  mine[kZcMost] = zc_most(nranks, a);
  mbox.post(2 * zx.call - 1, mine);
  zx.posted = 1;
}

// After every rank's message 1 (words): the largest block, and every peer's exported buffer mapped, where every
// rank's can be (and, of a reduce-scatter, this rank's blocks lie within each peer's allocation).
void coll_gpu_engine::zx_map(const coll_gpu_args_t &a, const uint64_t (*words)[coll_gpu::kMailWords]) {
  using namespace coll_gpu;
  for (int q = 0; q < nranks; ++q) {
    if (words[q][kZcCan] != kZcExported && words[q][kZcCan] != kZcNothing && zx.cannot < 0) zx.cannot = q;
    if (words[q][kZcMost] > zx.most) zx.most = words[q][kZcMost];
  }
  ContextScope ctx(mem);
  char whynot[128];
  if (zx.cannot < 0 && entered(ctx, mem, whynot, sizeof(whynot)) != COLL_GPU_SUCCESS) zx.cannot = rank;
  const IpcOps ops = cuda_ipc_ops();
  for (int q = 0; q < nranks && zx.cannot < 0; ++q) {
    void *base = nullptr;
    if (q == rank)
      zx.peer_buf[q] = const_cast<void *>(zc_exported(a));
    else if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER && !zc_reads_fit(rank, nranks, a, words[q][kZcRoom]))
      zx.cannot = rank;
    else if (words[q][kZcCan] == kZcNothing)
      zx.peer_buf[q] = nullptr;
    else if (imports.map(ops, q, words[q][kZcId], words[q][kZcSize], (const unsigned char *)&words[q][kZcHandle],
                         zx.call, &base) == 0)
      zx.peer_buf[q] = (char *)base + words[q][kZcOffset];
    else
      zx.cannot = rank;
  }
}

// Message 2.
void coll_gpu_engine::zx_post_second(const coll_gpu_args_t &a) {
  uint64_t second[coll_gpu::kMailWords];
  coll_gpu::zc_wants_post(rank, nranks, zx.cannot < 0, a, second);
  mbox.post(2 * zx.call, second);
  zx.posted = 2;
}

// After every rank's message 2 (words): whether the call goes zero-copy (alike on every rank), with zx.wants[q]
// what rank q takes from this one and zx.gives[q] what it sends this one (with counts). The exchange is over.
bool coll_gpu_engine::zx_end(const coll_gpu_args_t &a, const uint64_t (*words)[coll_gpu::kMailWords]) {
  zx.posted = 0;
  for (int q = 0; q < nranks && zx.cannot < 0; ++q)
    if (words[q][0] != 1) zx.cannot = q;
  const bool use = zx.cannot < 0;
  if (use && a.v != nullptr)
    for (int q = 0; q < nranks; ++q)
      if (q != rank) {
        zx.wants[q] = coll_gpu::zc_wants_of(q, rank, nranks, words[q]);
        zx.gives[q] = coll_gpu::zc_gives_of(q, rank, nranks, words[q]);
      }
  const bool reads = a.coll == COLL_GPU_COLL_REDUCE_SCATTER;
  if (cfg.log != nullptr && use)
    cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL, "comm %s: %s of %zu bytes a block at most: zero-copy, %s", cfg.name,
            zero_copy_call(a), zx.most, reads ? "from the peers' send buffers" : "into the peers' receive buffers");
  else if (cfg.log != nullptr)
    cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL,
            "comm %s: %s of %zu bytes a block at most: %s (rank %d's %s buffer cannot be mapped: not cudaMalloc "
            "memory, blocks past its allocation, or a mapping failed)",
            cfg.name, zero_copy_call(a), zx.most, a.v == nullptr ? "through the FIFOs" : "staged", zx.cannot,
            reads ? "send" : "receive");
  return use;
}

// The exchange at once, waiting for the peers' messages. *use: every rank has mapped every exported buffer (the same
// answer on every rank), with zx.peer_buf[q] rank q's as mapped here, zx.most the largest block of any rank and
// (with counts) zx.wants and zx.gives; otherwise a call of equal blocks goes through the FIFOs, and a call with
// counts is staged.
coll_gpu_status_t coll_gpu_engine::zero_copy_exchange(const coll_gpu_args_t &a, bool *use, char *why, size_t len) {
  const char *name = zero_copy_call(a);
  uint64_t words[COLL_GPU_MAX_DIRECT][coll_gpu::kMailWords];
  zx_post_first(a);
  COLL_GPU_CHECK(mail_wait(2 * zx.call - 1, name, words, why, len));
  zx_map(a, words);
  zx_post_second(a);
  COLL_GPU_CHECK(mail_wait(2 * zx.call, name, words, why, len));
  *use = zx_end(a, words);
  return COLL_GPU_SUCCESS;
}

// A nonblocking exchange's look at the ranks whose message has not come (gone scratch, from mail_try): every
// kCheckNs whether their processes still exist (COLL_GPU_PEER_GONE when one does not), and the watchdog's line once
// after the timeout.
coll_gpu_status_t coll_gpu_engine::zx_watch(const char *call, char *why, size_t len) {
  const uint64_t t = coll_gpu_now_ns();
  if (zx.since == 0) {
    zx.since = t;
    zx.next_check = t + kCheckNs;
    return COLL_GPU_SUCCESS;
  }
  if (t < zx.next_check) return COLL_GPU_SUCCESS;
  zx.next_check = t + kCheckNs;
  const coll_gpu_status_t st = mail_late_gone(call, why, len);
  if (st != COLL_GPU_SUCCESS) {
    zx.posted = 0;
    return st;
  }
  if (!zx.reported && t - zx.since >= cfg.wait.timeout_ns) {
    zx.reported = true;
    mail_report(call, (double)(t - zx.since) / 1e9);
  }
  return COLL_GPU_SUCCESS;
}

// Call with counts a on the GPUs, its exchange done (zx): as the call in flight, with flight.unlike and its words
// where the ranks' counts disagree.
coll_gpu_status_t coll_gpu_engine::launch_counted(const coll_gpu_args_t &a, bool blocking, char *why, size_t len) {
  const int parts = coll_gpu::zc_parts(cfg.tune, nranks, zx.most);
  const coll_gpu_choice_t choice = {COLL_GPU_ALGO_RING, COLL_GPU_PROTO_SIMPLE, parts * nranks, 0};
  coll_gpu_work_t p;
  call_init(&p, a.coll, choice);
  p.sendbuf = a.sendbuf;
  p.recvbuf = a.recvbuf;
  p.type = COLL_GPU_UINT8;
  p.count = zx.most;
  const int bad = zero_copy_work(this, a, blocking, &p);
  trace(p, zx.most, zx.most, choice);
  COLL_GPU_CHECK(launch(p, choice.proto, false, why, len));
  const int taken = bad < 0 ? coll_gpu::zc_takes_unlike(rank, nranks, a, zx.gives) : -1;
  flight.unlike = bad >= 0 ? bad : taken;
  if (bad >= 0)
    snprintf(flight.unlike_why, sizeof(flight.unlike_why),
             "%s: rank %d sends %zu bytes to rank %d, which takes %zu from it", zero_copy_call(a), rank,
             a.v->send[bad].bytes, bad, bad == rank ? a.v->recv[bad].bytes : zx.wants[bad].bytes);
  else if (taken >= 0)
    snprintf(flight.unlike_why, sizeof(flight.unlike_why),
             "%s: rank %d takes %zu bytes from rank %d, which sends it %zu", zero_copy_call(a), rank,
             a.v->recv[taken].bytes, taken, zx.gives[taken]);
  return COLL_GPU_SUCCESS;
}

// Puts call p on the GPUs, on a lingering kernel when `linger` allows, as the call in flight (none is).
coll_gpu_status_t coll_gpu_engine::launch(const coll_gpu_work_t &p, coll_gpu_proto_t proto, bool linger, char *why,
                                          size_t why_len) {
  flight.p = p;
  flight.proto = proto;
  flight.since = 0;
  flight.reported = false;
  flight.chained = chaining;
  flight.unlike = -1;
  int blocks = coll_gpu_ar_blocks(&comm, &p);
  if (multinode) wake_proxy(p);
  coll_gpu_trace('L', rank, p.coll, p.algo, p.seq);
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, why_len));
  if (linger && p.algo == COLL_GPU_ALGO_ONESHOT && cfg.linger_ns > 0 && blocks <= COLL_GPU_LINGER_MAX_BLOCKS &&
      linger_takes(blocks)) {
    COLL_GPU_CHECK(linger_start(&flight.p, &blocks, why, why_len));
  } else {
    if (lingering && p.algo != COLL_GPU_ALGO_ONESHOT) linger_stop();
    if (p.zc_engines) {
      if (copy_stream.get() == nullptr) {  // made at the first call that needs them
        CUDA_CHECK(coll_gpu_stream_create(copy_stream.out(), 1), why, why_len);
        CUDA_CHECK(coll_gpu_event_create(copy_ready.out()), why, why_len);
        CUDA_CHECK(coll_gpu_event_create(copy_done.out()), why, why_len);
      }
      if (cfg.log != nullptr)
        cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL, "comm %s: %s seq %llu: the peers' blocks by copy engines",
                cfg.name, coll_gpu_coll_name(p.coll), (unsigned long long)p.seq);
      CUDA_CHECK(
          coll_gpu_zc_engines_launch(&comm, &p, stream.get(), copy_stream.get(), copy_ready.get(), copy_done.get()),
          why, why_len);
    } else {
      CUDA_CHECK(coll_gpu_ar_launch(&comm, &p, stream.get()), why, why_len);
    }
  }
  flight.blocks = blocks;
  coll_gpu_trace('A', rank, p.coll, p.algo, p.seq);
  return COLL_GPU_SUCCESS;
}

bool coll_gpu_engine::flight_done() const {
  for (int blk = 0; blk < flight.blocks; ++blk)
    if (status->done[blk] != flight.p.seq) return false;
  return true;
}

void coll_gpu_engine::flight_end() {
  flight.blocks = 0;
  if (status->waited) {  // flags of a long wait: cleared for the next call's watchdog
    status->waited = 0;
    for (int r = 0; r < nranks; ++r)
      if (waiting[r]) waiting[r] = 0;
  }
}

// Waits for the call in flight: for every block's done word, as long as the peers live.
coll_gpu_status_t coll_gpu_engine::wait_flight(char *why, size_t why_len) {
  CallWait cw(*this, &flight.p, flight.proto);
  bool stopped = true;
  for (int blk = 0; blk < flight.blocks && stopped; ++blk) stopped = cw.wait(&status->done[blk], flight.p.seq);
  if (cw.aborted() || !stopped) {
    cw.say_gone(stopped, why, why_len);
    return COLL_GPU_PEER_GONE;
  }
  coll_gpu_trace('D', rank, flight.p.coll, flight.p.algo, flight.p.seq);
  flight_end();
  return COLL_GPU_SUCCESS;
}

// The trace line of one call: `part` of the collective's `bytes`.
void coll_gpu_engine::trace(const coll_gpu_work_t &p, size_t part, size_t bytes,
                            const coll_gpu_choice_t &choice) const {
  if (cfg.log != nullptr)
    cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL, "comm %s: %s seq %llu, %zu of %zu bytes: %s/%s, %d channels%s",
            cfg.name, coll_gpu_coll_name(p.coll), (unsigned long long)p.seq, part, bytes,
            coll_gpu_algo_name(choice.algo), coll_gpu_proto_name(choice.proto), choice.nchannels,
            p.run > 0 ? ", each block on the ring where its rank starts or ends its node's run" : "");
}

namespace {

// One collective cut into the parts its kernels run one after another: one-shot (LL) parts move at most a
// one-shot slot per peer, so larger calls go in several, each with the next seq.
class Parts {
 public:
  Parts(const coll_gpu_engine &e, const coll_gpu_args_t &a) : a_(a) {
    const coll_gpu_coll_t c = a.coll;
    moves_ = c == COLL_GPU_COLL_BCAST || c == COLL_GPU_COLL_ALLGATHER || c == COLL_GPU_COLL_ALLTOALL;
    size_ = moves_ ? 1 : coll_gpu_dtype_size(a.type);
    end_ = a.count;  // in elements (bytes for the moves)
    total_ = a.count;
    if (c == COLL_GPU_COLL_REDUCE_SCATTER && a.counts == nullptr) {  // equal blocks: no loop over the ranks
      total_ = a.count * (size_t)e.nranks;
    } else if (c == COLL_GPU_COLL_REDUCE_SCATTER) {  // the blocks are cut at the same offsets
      end_ = total_ = 0;
      for (int q = 0; q < e.nranks; ++q) {
        end_ = a.counts[q] > end_ ? a.counts[q] : end_;
        total_ += a.counts[q];
      }
    }
    // across nodes, a bcast or reduce runs on the channels whose chain enters and leaves each node once, and a
    // call on kNetChannels at most
    coll_gpu_tune_config_t tune = e.cfg.tune;
    rings_ = e.multinode ? coll_gpu_rings_chain(&e.rings, e.node.get(), c, a.root) : 0;
    const int theirs = coll_gpu_work_channels(rings_, e.rings.nrings, e.rings.span, tune.max_channels);
    if (theirs > 0)
      tune.max_channels = theirs;
    else  // the scratch's bound left those rings no channel
      rings_ = 0;
    if (e.multinode) tune.max_channels = std::min(tune.max_channels, kNetChannels);
    choice_ = c == COLL_GPU_COLL_ALLREDUCE ? coll_gpu_tune_choose(&tune, e.nranks, end_ * size_)
                                           : coll_gpu_tune_choose_move(&tune, c, e.nranks, end_ * size_);
    piece_ = c != COLL_GPU_COLL_ALLREDUCE && choice_.algo == COLL_GPU_ALGO_ONESHOT ? e.layout.ll_bytes / size_ : end_;
    // an allgather across nodes sends each rank's block into every other node once, on the ring where the rank
    // starts its node's run, and a reduce-scatter reduces it there where the rank ends it, where the call's
    // blocks reach every ring; not a reduce-scatter in place, whose result one ring's blocks would write over
    // input that another ring's still read (on one ring, each block writes only what it has read)
    if ((c == COLL_GPU_COLL_ALLGATHER || c == COLL_GPU_COLL_REDUCE_SCATTER) && choice_.algo == COLL_GPU_ALGO_RING &&
        e.run_turns > 0 && choice_.nchannels >= e.run_blocks &&
        (c == COLL_GPU_COLL_ALLGATHER || !overlap(a, total_ * size_, e.rank)))
      run_ = e.run_turns;
  }
  const coll_gpu_choice_t &choice() const { return choice_; }
  // Whether a reduce-scatter's result (this rank's block in recvbuf) overlaps its input (`in` bytes of sendbuf).
  static bool overlap(const coll_gpu_args_t &a, size_t in, int rank) {
    const size_t out = (a.counts != nullptr ? a.counts[rank] : a.count) * coll_gpu_dtype_size(a.type);
    const uintptr_t s = (uintptr_t)a.sendbuf, r = (uintptr_t)a.recvbuf;
    return r < s + in && s < r + out;
  }
  // Whether a lingering kernel may take the parts: reduce-scatter's per-rank blocks do not fit its call record.
  bool linger() const { return a_.coll != COLL_GPU_COLL_REDUCE_SCATTER; }
  // Whether the call is one part.
  bool single() const { return piece_ >= end_; }
  // The next part's work, with the next seq; false when none is left.
  bool next(coll_gpu_engine &e, coll_gpu_work_t *p) {
    if (off_ >= end_) return false;
    const size_t off = off_, n = end_ - off < piece_ ? end_ - off : piece_;
    off_ += n;
    e.call_init(p, a_.coll, choice_);
    p->sendbuf = (const char *)a_.sendbuf + off * size_;
    p->recvbuf = a_.recvbuf == nullptr ? nullptr : (char *)a_.recvbuf + off * size_;
    p->count = n;
    if (moves_) {
      p->type = COLL_GPU_UINT8;
      p->block = end_;  // the whole block: where each rank's part of it goes
    } else {
      p->type = a_.type;
      p->op = a_.op;
    }
    if (moves_ || a_.coll == COLL_GPU_COLL_REDUCE) p->root = a_.root;
    if (choice_.algo == COLL_GPU_ALGO_RING) p->rings = rings_;
    p->run = run_;
    size_t part = n * size_;
    if (a_.coll == COLL_GPU_COLL_REDUCE_SCATTER && a_.counts == nullptr) {
      // equal blocks: part `off` of each, one block's length apart
      p->each = a_.count;
      p->recvbuf = (char *)a_.recvbuf + off * size_;
    } else if (a_.coll == COLL_GPU_COLL_REDUCE_SCATTER) {
      size_t begin = 0;
      for (int q = 0; q < e.nranks; ++q) {
        const size_t from = off < a_.counts[q] ? off : a_.counts[q];
        p->blocks[q].begin = begin + from;
        p->blocks[q].count = a_.counts[q] - from < n ? a_.counts[q] - from : n;
        begin += a_.counts[q];
      }
      p->sendbuf = a_.sendbuf;
      p->recvbuf = (char *)a_.recvbuf + (off < a_.counts[e.rank] ? off : a_.counts[e.rank]) * size_;
      p->count = 0;
      part = p->blocks[e.rank].count * size_;
    }
    e.trace(*p, part, total_ * size_, choice_);
    return true;
  }

 private:
  const coll_gpu_args_t &a_;
  coll_gpu_choice_t choice_;
  unsigned rings_;  // the rings whose channels run a ring call (coll_gpu_work_t's rings)
  int run_ = 0;     // coll_gpu_work_t's run
  bool moves_;      // bcast, allgather or alltoall: bytes, no type or op
  size_t size_;     // bytes per element (1 for the moves)
  size_t end_;      // elements to go through: the longest block for reduce-scatter
  size_t total_;    // elements of the whole call, for messages
  size_t piece_;    // elements per part
  size_t off_ = 0;  // the next part's first element
};

}  // namespace

namespace {

// Whether a blocking alltoall, allgather or bcast goes straight into the peers' receive buffers, or a blocking
// reduce-scatter reads its blocks straight from the peers' send buffers (the zero-copy exchange decides whether it
// can): from zero_copy_min_bytes a block, where coll_gpu_zero_copy_wins, alike on every rank. Not a reduce-scatter
// whose result overlaps its input (in place, of equal blocks): a rank would write its result over input a peer may
// still be reading.
bool zero_copy_wanted(const coll_gpu_engine_t *e, const coll_gpu_args_t &a, const coll_gpu_choice_t &choice) {
  if (choice.algo != COLL_GPU_ALGO_RING || !e->mbox.ready() || e->cfg.zero_copy_min_bytes == 0) return false;
  if (a.coll != COLL_GPU_COLL_REDUCE_SCATTER)
    return coll_gpu_zero_copy_wins(a.coll, e->nranks, a.count) && a.count >= e->cfg.zero_copy_min_bytes;
  const size_t most = coll_gpu::zc_most(e->nranks, a);
  return coll_gpu_zero_copy_wins(a.coll, e->nranks, most) && most >= e->cfg.zero_copy_min_bytes &&
         !Parts::overlap(a, coll_gpu::zc_rs_input(e->nranks, a), e->rank);
}

// A call's status; a failure leaves the engine refusing every claim.
coll_gpu_status_t ended(coll_gpu_engine_t *e, coll_gpu_status_t st) {
  if (st != COLL_GPU_SUCCESS) e->failed.store(true);
  return st;
}

// What the kernels cannot run beyond COLL_GPU_MAX_DIRECT ranks (engine.h): the glue never hands it.
coll_gpu_status_t runnable(const coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len) {
  if (e->nranks <= COLL_GPU_MAX_DIRECT ||
      (args->coll != COLL_GPU_COLL_ALLTOALL && (args->coll != COLL_GPU_COLL_REDUCE_SCATTER || args->counts == nullptr)))
    return COLL_GPU_SUCCESS;
  coll_gpu_say(why, why_len, "%s with counts or an alltoall of %d ranks: not on the GPUs beyond %d ranks",
               coll_gpu_coll_mpi_name(args->coll), e->nranks, COLL_GPU_MAX_DIRECT);
  return COLL_GPU_INTERNAL_ERROR;
}

// run or start: a call's blocking or nonblocking way onto the GPUs.
using Step = coll_gpu_status_t (*)(coll_gpu_engine_t *, const coll_gpu_args_t *, char *, size_t);

// An allreduce as the chain of a reduce to rank 0 and a bcast from it (COLL_GPU_ALGO_CHAIN, tune.h), each by
// `step`, the bcast's buffer the allreduce's result: run, one after the other; start, both on the stream as a
// call's parts. In place, the root reduces in place as MPI_Reduce does; every rank's reduce has read its input
// before its bcast writes the result over it.
coll_gpu_status_t chain(coll_gpu_engine_t *e, const coll_gpu_args_t &a, Step step, char *why, size_t why_len) {
  const size_t bytes = a.count * coll_gpu_dtype_size(a.type);
  if (e->cfg.log != nullptr)
    e->cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL,
               "comm %s: allreduce of %zu bytes: chain (a reduce to rank 0, "
               "then a bcast from it)",
               e->cfg.name, bytes);
  coll_gpu_args_t half[2] = {a, a};
  half[0].coll = COLL_GPU_COLL_REDUCE;
  half[0].root = 0;
  half[0].recvbuf = e->rank == 0 ? a.recvbuf : nullptr;
  half[1].coll = COLL_GPU_COLL_BCAST;
  half[1].sendbuf = a.recvbuf;
  half[1].count = bytes;
  half[1].counts = nullptr;
  half[1].type = COLL_GPU_UINT8;
  half[1].op = COLL_GPU_SUM;
  half[1].root = 0;
  e->chaining = true;
  coll_gpu_status_t st = step(e, &half[0], why, why_len);
  if (st == COLL_GPU_SUCCESS) st = step(e, &half[1], why, why_len);
  e->chaining = false;
  return st;
}

// Whether a call with counts can go zero-copy on this engine (one node of at most COLL_GPU_MAX_DIRECT ranks, a
// mailbox): alike on every rank. Otherwise why says so.
bool counted_here(const coll_gpu_engine_t *e, const coll_gpu_args_t &a, char *why, size_t why_len) {
  if (!e->multinode && e->nranks <= COLL_GPU_MAX_DIRECT && e->mbox.ready()) return true;
  coll_gpu_say(why, why_len, "%s runs on the GPUs on one node of at most %d ranks that has a mailbox",
               zero_copy_call(a), COLL_GPU_MAX_DIRECT);
  return false;
}

// Why a call with counts stages: some rank's receive buffer cannot be mapped.
coll_gpu_status_t unmapped(const coll_gpu_args_t &a, char *why, size_t why_len) {
  coll_gpu_say(why, why_len,
               "%s: a rank's receive buffer cannot be mapped (not cudaMalloc memory, or blocks past its allocation)",
               zero_copy_call(a));
  return COLL_GPU_UNAVAILABLE;
}

// An allgatherv or alltoallv (args.v): zero-copy on one node, or COLL_GPU_UNAVAILABLE on every rank alike, nothing
// moved, where it cannot be (the communicator spans nodes or has no mailbox, or some rank's receive buffer cannot be
// mapped).
coll_gpu_status_t run_counted(coll_gpu_engine_t *e, const coll_gpu_args_t &a, char *why, size_t why_len) {
  if (!counted_here(e, a, why, why_len)) return COLL_GPU_UNAVAILABLE;
  bool use = false;
  COLL_GPU_CHECK(e->zero_copy_exchange(a, &use, why, why_len));
  if (!use) return unmapped(a, why, why_len);
  COLL_GPU_CHECK(e->launch_counted(a, true, why, why_len));
  COLL_GPU_CHECK(e->wait_flight(why, why_len));
  if (e->flight.unlike < 0) return COLL_GPU_SUCCESS;
  coll_gpu_say(why, why_len, "%s", e->flight.unlike_why);
  return COLL_GPU_MISMATCH;
}

// The bytes of input a call in place runs from a copy of (engine.h): an alltoall's, a reduce-scatter's of unequal
// counts; 0 for any other call.
size_t copied_input(const coll_gpu_engine &e, const coll_gpu_args_t &a) {
  if (a.sendbuf != a.recvbuf || a.v != nullptr) return 0;
  if (a.coll == COLL_GPU_COLL_ALLTOALL) return a.count * (size_t)e.nranks;
  if (a.coll != COLL_GPU_COLL_REDUCE_SCATTER || a.counts == nullptr) return 0;
  size_t total = 0;
  bool equal = true;
  for (int q = 0; q < e.nranks; ++q) {
    total += a.counts[q];
    equal = equal && a.counts[q] == a.counts[0];
  }
  return equal ? 0 : total * coll_gpu_dtype_size(a.type);
}

// A call in place that runs from a copy of its `input` bytes (copied_input, engine.h): the copy into the engine's
// bounce memory, *args then pointing at *copied, which sends or reduces from there. `queued`: the copy goes on the
// stream ahead of the call's kernels (a started call); otherwise it is complete when this returns.
coll_gpu_status_t from_copy(coll_gpu_engine_t *e, size_t input, bool queued, const coll_gpu_args_t **args,
                            coll_gpu_args_t *copied, char *why, size_t why_len) {
  void *dev = nullptr;
  COLL_GPU_CHECK(coll_gpu_engine_bounce(e, input, &dev, why, why_len));
  if (queued) {
    ContextScope ctx(e->mem);
    COLL_GPU_CHECK(entered(ctx, e->mem, why, why_len));
    CUDA_CHECK(coll_gpu_copy_async(dev, (*args)->sendbuf, input, e->stream.get()), why, why_len);
  } else {
    COLL_GPU_CHECK(coll_gpu_engine_copy(e, dev, (*args)->sendbuf, input, why, why_len));
  }
  *copied = **args;
  copied->sendbuf = dev;
  *args = copied;
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t run(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len) {
  COLL_GPU_CHECK(runnable(e, args, why, why_len));
  if (args->v != nullptr) return run_counted(e, *args, why, why_len);
  coll_gpu_args_t copied;
  const size_t input = copied_input(*e, *args);
  if (input > 0) COLL_GPU_CHECK(from_copy(e, input, false, &args, &copied, why, why_len));
  Parts parts(*e, *args);
  if (parts.choice().algo == COLL_GPU_ALGO_CHAIN) return chain(e, *args, run, why, why_len);
  bool zero_copy = false;
  if (zero_copy_wanted(e, *args, parts.choice()))
    COLL_GPU_CHECK(e->zero_copy_exchange(*args, &zero_copy, why, why_len));
  coll_gpu_work_t p;
  while (parts.next(*e, &p)) {
    if (zero_copy) zero_copy_work(e, *args, true, &p);
    COLL_GPU_CHECK(e->launch(p, parts.choice().proto, parts.linger(), why, why_len));
    COLL_GPU_CHECK(e->wait_flight(why, why_len));
  }
  return COLL_GPU_SUCCESS;
}

// A call of one part may go to the lingering kernel; one of several parts queues them all on the stream at
// once, kernels of their own that run one after another: the host need not come back between parts. A call in
// place that runs from a copy of its input (engine.h) queues the copy on the stream first; it never goes to the
// lingering kernel, whose own stream would not wait for the copy.
coll_gpu_status_t start(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len) {
  COLL_GPU_CHECK(runnable(e, args, why, why_len));
  if (args->v != nullptr) {
    coll_gpu_say(why, why_len, "%s: a call with counts is started by coll_gpu_engine_start_counted (engine.h)",
                 zero_copy_call(*args));
    return COLL_GPU_INTERNAL_ERROR;
  }
  coll_gpu_args_t copied;
  const size_t input = copied_input(*e, *args);
  if (input > 0) COLL_GPU_CHECK(from_copy(e, input, true, &args, &copied, why, why_len));
  Parts parts(*e, *args);
  if (parts.choice().algo == COLL_GPU_ALGO_CHAIN) return chain(e, *args, start, why, why_len);
  const bool linger = parts.linger() && parts.single() && input == 0;
  coll_gpu_work_t p;
  while (parts.next(*e, &p)) COLL_GPU_CHECK(e->launch(p, parts.choice().proto, linger, why, why_len));
  return COLL_GPU_SUCCESS;
}

}  // namespace

coll_gpu_status_t coll_gpu_engine_run(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len) {
  const coll_gpu_status_t st = run(e, args, why, why_len);
  // a call with counts that cannot run here, or whose ranks disagree, leaves the engine as it was
  return st == COLL_GPU_UNAVAILABLE || st == COLL_GPU_MISMATCH ? st : ended(e, st);
}

coll_gpu_status_t coll_gpu_engine_start(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len) {
  return ended(e, start(e, args, why, why_len));
}

coll_gpu_status_t coll_gpu_engine_start_counted(coll_gpu_engine_t *e, const coll_gpu_args_t *args, int *done, char *why,
                                                size_t why_len) {
  const coll_gpu_args_t &a = *args;
  *done = 1;
  if (e->zx.posted == 0) {
    if (!counted_here(e, a, why, why_len)) return COLL_GPU_UNAVAILABLE;
    e->zx_post_first(a);
  }
  // a message some rank has not posted yet: the call goes on at the next call of this, unless that rank is gone
  const auto pending = [&] {
    const coll_gpu_status_t st = e->zx_watch(zero_copy_call(a), why, why_len);
    *done = st != COLL_GPU_SUCCESS;
    return ended(e, st);
  };
  uint64_t words[COLL_GPU_MAX_DIRECT][coll_gpu::kMailWords];
  if (e->zx.posted == 1) {
    if (!e->mail_try(2 * e->zx.call - 1, words)) return pending();
    e->zx_map(a, words);
    e->zx_post_second(a);
  }
  if (!e->mail_try(2 * e->zx.call, words)) return pending();
  if (!e->zx_end(a, words)) return unmapped(a, why, why_len);
  return ended(e, e->launch_counted(a, false, why, why_len));
}

int coll_gpu_engine_idle(const coll_gpu_engine_t *e) { return e->flight.blocks == 0 && e->zx.posted == 0; }

coll_gpu_status_t coll_gpu_engine_test(coll_gpu_engine_t *e, int *done, char *why, size_t why_len) {
  *done = 1;
  if (e->flight.blocks == 0) return COLL_GPU_SUCCESS;
  if (e->flight_done()) {
    coll_gpu_trace('D', e->rank, e->flight.p.coll, e->flight.p.algo, e->flight.p.seq);
    e->flight_end();
    if (e->flight.unlike < 0) return COLL_GPU_SUCCESS;
    coll_gpu_say(why, why_len, "%s", e->flight.unlike_why);
    return COLL_GPU_MISMATCH;
  }
  *done = 0;
  // a pending call: its peers' processes are checked every kCheckNs, its wait reported once after the
  // timeout, as a blocking wait would
  const uint64_t t = coll_gpu_now_ns();
  if (e->flight.since == 0) {
    e->flight.since = t;
    e->flight.next_check = t + kCheckNs;
  }
  if (t >= e->flight.next_check) {
    e->flight.next_check = t + kCheckNs;
    bool any = e->net_failed(e->gone.get());
    for (int r = 0; r < e->nranks; ++r) any = any || (e->visible[r] && coll_gpu_pid_gone(e->pid[r]));
    if (any) {
      *done = 1;
      return ended(e, e->wait_flight(why, why_len));  // finds it again, aborts the kernels and says why
    }
  }
  if (!e->flight.reported && t - e->flight.since >= e->cfg.wait.timeout_ns + kReportGraceNs) {
    e->flight.reported = true;
    e->watchdog(&e->flight.p, e->flight.proto, (double)(t - e->flight.since) / 1e9);
  }
  return COLL_GPU_SUCCESS;
}
