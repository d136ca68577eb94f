/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's insides (C++ only), shared by its parts: engine/engine.cc (the calls: launch, wait, test, the
 * lingering kernel), engine/engine_create.cc (creation in steps, sharing, release) and engine/engine_zero_copy.cc
 * (the zero-copy calls' exchange through the node's mailbox). Nothing outside engine/ includes it.
 */
#ifndef COLL_GPU_ENGINE_IMPL_H
#define COLL_GPU_ENGINE_IMPL_H

#include <stdint.h>

#include <atomic>

#include "engine/engine.h"
#include "engine/ipc_cache.h"
#include "engine/mailbox.h"
#include "engine/net.h"
#include "engine/owning.h"
#include "engine/transport.h"
#include "engine/zero_copy.h"
#include "kernels/staging.h"

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

// A failed call of the kernels' C API: the reason (kernels/error.h), then a breadcrumb, and its status returned.
#define CUDA_CHECK(call, why, len)                                              \
  do {                                                                          \
    const coll_gpu_status_t rc_ = (call);                                       \
    if (rc_ != COLL_GPU_SUCCESS) {                                              \
      coll_gpu_say(why, len, "%s failed: %s", #call, coll_gpu_kernels_error()); \
      coll_gpu::breadcrumb(__FILE__, __LINE__, rc_);                            \
      return rc_;                                                               \
    }                                                                           \
  } while (0)

}  // namespace

namespace coll_gpu {

// An engine's name among every process's engines: its rank 0's host and process, and the number of the
// creation there. The same on every rank of the engine.
struct EngineId {
  uint64_t host;
  uint32_t pid, serial;
  bool operator==(const EngineId &o) const { return host == o.host && pid == o.pid && serial == o.serial; }
  bool none() const { return pid == 0; }
};

}  // namespace coll_gpu

struct coll_gpu_engine {
  coll_gpu_engine_config_t cfg;
  int rank = 0, nranks = 0;
  coll_gpu_meminfo_t mem;
  coll_gpu_scratch_layout_t layout = {};
  coll_gpu::DeviceMemory scratch;
  coll_gpu::DeviceMemory bounce;  // coll_gpu_engine_bounce: device memory for a rank that joins a call through it
  size_t bounce_bytes = 0;
  coll_gpu::DeviceMemory gathered;  // over several nodes: COLL_GPU_TUNE_GATHER_BYTES for a reduction's allgather
  coll_gpu::Stream stream;          // blocking: after the work queued on the legacy default stream, as staging is
  coll_gpu::Stream linger_stream;   // non-blocking: a lingering kernel holds up no other work
  coll_gpu::Stream copy_stream;     // non-blocking: the zero-copy calls' copy engines, between the two events
  coll_gpu::Event copy_ready, copy_done;
  coll_gpu::HostMappedMemory status_mem;
  coll_gpu_dev_status_t *status = nullptr;  // host view of status_mem
  void *status_dev = nullptr;               // device view
  coll_gpu::HostMappedMemory waiting_mem;   // a byte per rank: the kernels' long waits (coll_gpu_dev_comm_t)
  volatile uint8_t *waiting = nullptr;      // host view
  void *waiting_dev = nullptr;              // device view
  bool lingering = false;                   // a lingering one-shot kernel may be polling for calls
  int linger_blocks = 0;                    // its blocks
  uint64_t instance = 0;                    // lingering kernels launched
  uint32_t ticket = 0;                      // the last ticket of status->call
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
  // the tree allreduce's, across nodes (coll_gpu_rings_trees): this rank's parent and children in each tree
  int tree_up[COLL_GPU_TREES];
  int tree_down[COLL_GPU_TREES][COLL_GPU_TREE_ARITY];
  coll_gpu::Ipc ipc;                  // the transports (engine/transport.h): this node's peers
  coll_gpu::Shm shm;                  // or, where their GPUs lack peer access, through shared host memory
  bool shm_node = false;              // alike on every rank: SHM serves the node's peers, not IPC
  coll_gpu::Net net;                  // and other nodes' ranks
  coll_gpu::Transport transports[2];  // those of this communicator: NET with several nodes, IPC or SHM
  int ntransports = 0;
  // sharing (engine.h): under registry_lock, the communicators that hold it; in one word, the one whose calls
  // count on it now and how many (owner << 32 | count; a count of 0: free, whatever owner says)
  coll_gpu::EngineId id = {};
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
    coll_gpu::ContextScope ctx(mem, mem.device >= 0);          // no device: nothing was set up
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
    gathered.reset();
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
  void choose_node_transport(const coll_gpu::TransportLinks &links);
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
    bool chained = false;     // a ring part of an allreduce across nodes (its messages name the allreduce)
    // a call with counts whose ranks disagree: the first rank whose block this one sends more or fewer bytes of
    // than that rank takes (-1: none), and what the call's failure says once it completed
    int unlike = -1;
    char unlike_why[192];
  } flight;
  bool chaining = false;  // the parts launched now are an allreduce's ring parts (chained above)
  void wake_proxy(const coll_gpu_work_t &p);
  coll_gpu_status_t launch(const coll_gpu_work_t &p, coll_gpu_proto_t proto, bool linger, char *why, size_t why_len);
  coll_gpu_status_t wait_flight(char *why, size_t why_len);
  bool flight_done() const;
  void flight_end();
  void trace(const coll_gpu_work_t &p, size_t part, size_t bytes, const coll_gpu_choice_t &choice) const;
  void watchdog(const coll_gpu_work_t *call, coll_gpu_proto_t proto, double seconds) const;
  void describe(const coll_gpu_work_t *call, coll_gpu_proto_t proto, char *what, size_t len) const;
};

namespace coll_gpu {

// The MPI function of a zero-copy call.
const char *zero_copy_call(const coll_gpu_args_t &a);
// Call p as zero-copy call a, after its exchange (e->zx): its parts and blocks, and whether copy engines move them
// (zero_copy_engines_min_bytes, a blocking move only: a started one's copies overlapped the caller's computation less
// than the kernel's stores did, 70-97% against 96-99% on 2 H200 from 64 MiB, docs/benchmarks.md; a reduce-scatter
// reduces as it reads, on the SMs). Returns zc_blocks' answer (-1, or the first rank whose block this one sends
// differs from what that rank takes).
int zero_copy_work(const coll_gpu_engine_t *e, const coll_gpu_args_t &a, bool blocking, coll_gpu_work_t *p);

}  // namespace coll_gpu

#endif
