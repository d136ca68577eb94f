/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The communicator engine's calls (engine/engine.h): a call's launch, on a lingering kernel or its own, its wait
 * and test, the call in flight. Its creation is engine/engine_create.cc's, the zero-copy exchange
 * engine/engine_zero_copy.cc's; the engine's state is engine/engine_impl.h's.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "engine/engine_impl.h"
#include "engine/stage.h"
#include "proxy/trace.h"

using coll_gpu::ContextScope;
using coll_gpu::entered;
using coll_gpu::zero_copy_call;
using coll_gpu::zero_copy_work;

namespace {
uint32_t next_ticket(uint32_t t) { return t + 1 == 0 ? 1 : t + 1; }
}  // namespace

// What a call is, for messages only (never on a call's way). call: NULL for the lingering kernel's exit. The
// call in flight that is a part of an allreduce across nodes (the chain's reduce or bcast, the allgather's allgather)
// is named after the allreduce, the call the user made.
void coll_gpu_engine::describe(const coll_gpu_work_t *call, coll_gpu_proto_t proto, char *what, size_t len) const {
  const bool chained = call == &flight.p && flight.chained;
  if (call == nullptr) {
    snprintf(what, len, "the exit of the lingering one-shot kernel");
    return;
  }
  char part[32] = "";
  if (chained) snprintf(part, sizeof(part), "its %s, ", coll_gpu_coll_name(call->coll));
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

// Starts one-shot call p on a lingering kernel (coll_gpu_dev_status_t says how): hands it to the kernel
// that lingers, else launches one. Sets *blocks to the blocks that will write done. Such kernels run on a
// non-blocking stream, so the call first waits for the work queued on the legacy default stream, as a
// kernel on the blocking stream would. In the current context; linger_takes said yes.
coll_gpu_status_t coll_gpu_engine::linger_start(coll_gpu_work_t *p, int *blocks, char *why, size_t why_len) {
  CUDA_CHECK(coll_gpu_legacy_stream_wait(), why, why_len);
  if (lingering) {
    const uint32_t next = next_ticket(ticket);
    CUDA_CHECK(coll_gpu_linger_post(status, next, p), why, why_len);
    ticket = next;
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
  CUDA_CHECK(coll_gpu_linger_launch(&comm, p, linger_stream.get()), why, why_len);
  lingering = true;
  linger_blocks = *blocks = coll_gpu_work_blocks(&comm, p);
  return COLL_GPU_SUCCESS;
}

// Tells the lingering kernel to leave now instead of after linger_ns: a ring or two-shot kernel takes a
// multiprocessor per block (128 at the defaults), and the ones the lingering kernel holds would keep that
// many of its blocks waiting until it left. It leaves at once; the host does not wait for it (the next
// lingering kernel queues behind it on linger_stream). A kernel that has already left ignores the order.
void coll_gpu_engine::linger_stop() {
  ticket = next_ticket(ticket);
  coll_gpu_linger_stop(status, ticket);
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
// held every bcast up by milliseconds, docs/benchmarks.md), for alltoall every pair's, and for Bruck's and the
// pairwise allgather the first point-to-point connection's of every peer, their only one, for the tree allreduce the
// first two (a tree's each). The reduction after an allreduce's or reduce-scatter's allgather
// (COLL_GPU_ALGO_ALLGATHER) has no peer and wakes none.
void coll_gpu_engine::wake_proxy(const coll_gpu_work_t &p) {
  if (p.algo == COLL_GPU_ALGO_ALLGATHER) return;
  if (p.algo == COLL_GPU_ALGO_BRUCK || p.algo == COLL_GPU_ALGO_PAIRWISE) {
    net.wake(coll_gpu::Net::kP2pId, 1);
    return;
  }
  if (p.algo == COLL_GPU_ALGO_TREE) {
    net.wake(coll_gpu::Net::kP2pId, COLL_GPU_TREES);
    return;
  }
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

// Puts call p on the GPUs, on a lingering kernel when `linger` allows, as the call in flight (none is).
coll_gpu_status_t coll_gpu_engine::launch(const coll_gpu_work_t &p, coll_gpu_proto_t proto, bool linger, char *why,
                                          size_t why_len) {
  flight.p = p;
  flight.proto = proto;
  flight.since = 0;
  flight.reported = false;
  flight.chained = chaining;
  flight.unlike = -1;
  int blocks = coll_gpu_work_blocks(&comm, &p);
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
      CUDA_CHECK(coll_gpu_work_launch(&comm, &p, stream.get()), why, why_len);
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
    choice_ = coll_gpu_tune_choose(&tune, c, e.nranks, end_ * size_);
    piece_ = c != COLL_GPU_COLL_ALLREDUCE && choice_.algo == COLL_GPU_ALGO_ONESHOT ? e.layout.ll_bytes / size_ : end_;
    // a reduce-scatter of equal blocks (beyond COLL_GPU_MAX_DIRECT ranks), or one-shot of equal counts (the
    // glue's MPI_Reduce_scatter_block), runs as blocks one count apart (coll_gpu_work_t's each), which the
    // lingering kernel takes
    if (c == COLL_GPU_COLL_REDUCE_SCATTER && a.counts == nullptr) {
      equal_ = true;
      each_ = a.count;
    } else if (c == COLL_GPU_COLL_REDUCE_SCATTER && choice_.algo == COLL_GPU_ALGO_ONESHOT) {
      equal_ = true;
      for (int q = 1; q < e.nranks; ++q) equal_ = equal_ && a.counts[q] == a.counts[0];
      each_ = a.counts[0];
    }
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
  // Whether a lingering kernel may take the parts: a reduce-scatter's of equal blocks (their distance in its call
  // record, coll_gpu_work_t's each), or of one part (every rank's count there, the blocks one after another), not the
  // later parts of blocks of their own counts.
  bool linger() const { return a_.coll != COLL_GPU_COLL_REDUCE_SCATTER || equal_ || single(); }
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
    if (choice_.algo == COLL_GPU_ALGO_TREE) {
      memcpy(p->tree_up, e.tree_up, sizeof(p->tree_up));
      memcpy(p->tree_down, e.tree_down, sizeof(p->tree_down));
    }
    p->run = run_;
    size_t part = n * size_;
    if (a_.coll == COLL_GPU_COLL_REDUCE_SCATTER && equal_) {
      // equal blocks: part `off` of each, one block's length apart
      p->each = each_;
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
  // a reduce-scatter run as equal blocks, each_ elements apart (coll_gpu_work_t's each)
  bool equal_ = false;
  size_t each_ = 0;
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

coll_gpu_status_t start(coll_gpu_engine_t *e, const coll_gpu_args_t *args, char *why, size_t why_len);  // below

// The `bytes` of an allreduce's buffer moved by `coll` (a move: bytes, no op), for a ring part of it.
coll_gpu_args_t moved_bytes(const coll_gpu_args_t &a, coll_gpu_coll_t coll, size_t bytes) {
  coll_gpu_args_t m = a;
  m.coll = coll;
  m.count = bytes;
  m.counts = nullptr;
  m.type = COLL_GPU_UINT8;
  m.op = COLL_GPU_SUM;
  return m;
}

// Starts a ring part of an allreduce across nodes (`start`): its messages name the allreduce (flight.chained).
coll_gpu_status_t start_part(coll_gpu_engine_t *e, const coll_gpu_args_t &part, char *why, size_t why_len) {
  e->chaining = true;
  const coll_gpu_status_t st = start(e, &part, why, why_len);
  e->chaining = false;
  return st;
}

// An allreduce as the chain of a reduce to rank 0 and a bcast from it (COLL_GPU_ALGO_CHAIN, tune.h), started
// (`start`): both on the stream as a call's parts, the bcast's buffer the allreduce's result, so that no host step
// runs between them (a blocking call then waits for the bcast, the call in flight). In place, the root reduces in
// place as MPI_Reduce does; every rank's reduce has read its input before its bcast, the next kernel on the
// stream, writes the result over it.
coll_gpu_status_t chain(coll_gpu_engine_t *e, const coll_gpu_args_t &a, char *why, size_t why_len) {
  const size_t bytes = a.count * coll_gpu_dtype_size(a.type);
  if (e->cfg.log != nullptr)
    e->cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL,
               "comm %s: allreduce of %zu bytes: chain (a reduce to rank 0, "
               "then a bcast from it)",
               e->cfg.name, bytes);
  coll_gpu_args_t reduce = a;
  reduce.coll = COLL_GPU_COLL_REDUCE;
  reduce.root = 0;
  reduce.recvbuf = e->rank == 0 ? a.recvbuf : nullptr;
  coll_gpu_args_t bcast = moved_bytes(a, COLL_GPU_COLL_BCAST, bytes);
  bcast.sendbuf = a.recvbuf;
  bcast.root = 0;
  COLL_GPU_CHECK(start_part(e, reduce, why, why_len));
  return start_part(e, bcast, why, why_len);
}

// An allreduce or reduce-scatter as an allgather of every rank's whole input into the engine's memory (gathered,
// COLL_GPU_ALGO_ALLGATHER, tune.h), then a kernel with no peers that reduces the blocks in rank order into the result
// (a reduce-scatter: this rank's block of each input), both started on the stream (as chain's halves: a blocking call
// waits for the second). The reduction runs after this rank's allgather on the stream and the next call's allgather
// after it; only this rank's kernels write its gathered memory. In place, the allgather has sent every byte of the
// input before the reduction writes over it.
coll_gpu_status_t allgathered(coll_gpu_engine_t *e, const coll_gpu_args_t &a, const coll_gpu_choice_t &choice,
                              char *why, size_t why_len) {
  const size_t size = coll_gpu_dtype_size(a.type);
  // elements: the input, the first of this rank's block in it, and that block's
  size_t in = a.count, first = 0, mine = a.count;
  if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER && a.counts == nullptr) {
    in = a.count * (size_t)e->nranks;
    first = a.count * (size_t)e->rank;
  } else if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER) {
    in = 0;
    for (int q = 0; q < e->nranks; ++q) {
      if (q == e->rank) first = in;
      in += a.counts[q];
    }
    mine = a.counts[e->rank];
  }
  const size_t bytes = in * size, out = mine * size;
  if (e->cfg.log != nullptr)
    e->cfg.log(COLL_GPU_LVL_DEBUG, COLL_GPU_LOG_COLL,
               "comm %s: %s of %zu bytes: allgather (every rank's input, then %s)", e->cfg.name,
               coll_gpu_coll_name(a.coll), bytes,
               a.coll == COLL_GPU_COLL_ALLREDUCE ? "each rank reduces them" : "each rank reduces its block of them");
  coll_gpu_args_t gather = moved_bytes(a, COLL_GPU_COLL_ALLGATHER, bytes);
  gather.recvbuf = e->gathered.get();
  COLL_GPU_CHECK(start_part(e, gather, why, why_len));
  // a block per kGatheredBlockBytes of the result, at most kGatheredBlocks
  constexpr size_t kGatheredBlockBytes = 8 << 10;
  constexpr size_t kGatheredBlocks = 8;
  coll_gpu_choice_t reduce = choice;
  reduce.nchannels =
      (int)std::min(kGatheredBlocks, std::max<size_t>(1, (out + kGatheredBlockBytes - 1) / kGatheredBlockBytes));
  coll_gpu_work_t p;
  e->call_init(&p, a.coll, reduce);
  p.type = a.type;
  p.op = a.op;
  p.sendbuf = (const char *)e->gathered.get() + first * size;
  p.recvbuf = a.recvbuf;
  p.count = mine;
  p.block = bytes;
  e->trace(p, out, bytes, reduce);
  return e->launch(p, reduce.proto, false, why, why_len);
}

// Starts a reduction the engine composes of ring calls (coll_gpu_algo_composed) of the given choice.
coll_gpu_status_t start_composed(coll_gpu_engine_t *e, const coll_gpu_args_t &a, const coll_gpu_choice_t &choice,
                                 char *why, size_t why_len) {
  return choice.algo == COLL_GPU_ALGO_CHAIN ? chain(e, a, why, why_len) : allgathered(e, a, choice, why, why_len);
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
  if (coll_gpu_algo_composed(parts.choice().algo)) {
    COLL_GPU_CHECK(start_composed(e, *args, parts.choice(), why, why_len));
    return e->wait_flight(why, why_len);
  }
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
  if (coll_gpu_algo_composed(parts.choice().algo)) return start_composed(e, *args, parts.choice(), why, why_len);
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
