/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The zero-copy calls' exchange through the node's mailbox, and their launch (engine/zero_copy.h,
 * engine/engine_impl.h).
 */
#include <stdio.h>

#include "engine/engine_impl.h"

using coll_gpu::ContextScope;
using coll_gpu::entered;
using coll_gpu::zero_copy_call;
using coll_gpu::zero_copy_work;

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

namespace coll_gpu {

const char *zero_copy_call(const coll_gpu_args_t &a) {
  if (a.v != nullptr && a.v->call != nullptr) return a.v->call;
  if (a.v == nullptr) return coll_gpu_coll_mpi_name(a.coll);
  return a.coll == COLL_GPU_COLL_ALLGATHER ? "MPI_Allgatherv" : "MPI_Alltoallv";
}

int zero_copy_work(const coll_gpu_engine_t *e, const coll_gpu_args_t &a, bool blocking, coll_gpu_work_t *p) {
  p->zc_parts = coll_gpu::zc_parts(e->cfg.tune, e->nranks, e->zx.most);
  p->zc_engines = blocking && a.coll != COLL_GPU_COLL_REDUCE_SCATTER &&
                  coll_gpu::zc_engines(e->cfg.zero_copy_engines_min_bytes, e->nranks, e->zx.most);
  return coll_gpu::zc_blocks(e->rank, e->nranks, a, e->zx.peer_buf, e->zx.wants, p->zc);
}

}  // namespace coll_gpu

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
  } else if (in_ctx && coll_gpu_mem_alloc_of(buf, &al) == COLL_GPU_SUCCESS && al.exportable &&
             zc_fits(nranks, a, al.size - (size_t)(buf - (char *)al.base)) &&
             exports.handle(cuda_ipc_ops(), al.id, al.base, (unsigned char *)&mine[kZcHandle]) == COLL_GPU_SUCCESS) {
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
                         zx.call, &base) == COLL_GPU_SUCCESS)
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
