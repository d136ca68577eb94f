/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The zero-copy calls' words (engine/zero_copy.h).
 */
#include "engine/zero_copy.h"

#include <string.h>

#include <algorithm>

namespace coll_gpu {

namespace {
size_t smaller(size_t a, size_t b) { return a < b ? a : b; }
}  // namespace

const void *zc_exported(const coll_gpu_args_t &a) {
  return a.coll == COLL_GPU_COLL_REDUCE_SCATTER ? a.sendbuf : a.recvbuf;
}

coll_gpu_vblock_t zc_rs_block(int q, int n, const coll_gpu_args_t &a) {
  const size_t size = coll_gpu_dtype_size(a.type);
  if (a.counts == nullptr) return coll_gpu_vblock_t{(size_t)q * a.count * size, a.count * size};
  size_t begin = 0;
  for (int r = 0; r < q && r < n; ++r) begin += a.counts[r];
  return coll_gpu_vblock_t{begin * size, a.counts[q] * size};
}

size_t zc_rs_input(int n, const coll_gpu_args_t &a) {
  const coll_gpu_vblock_t last = zc_rs_block(n - 1, n, a);
  return last.displ + last.bytes;
}

size_t zc_most(int n, const coll_gpu_args_t &a) {
  if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER) {
    size_t most = 0;
    for (int q = 0; q < n; ++q) most = std::max(most, zc_rs_block(q, n, a).bytes);
    return most;
  }
  if (a.v == nullptr) return a.count;
  size_t most = 0;
  for (int q = 0; q < n; ++q)
    if (a.v->send[q].bytes > most) most = a.v->send[q].bytes;
  return most;
}

bool zc_receives_nothing(int rank, int n, const coll_gpu_args_t &a) {
  if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER) return false;
  if (a.v == nullptr) return a.coll == COLL_GPU_COLL_BCAST && rank == a.root;
  for (int q = 0; q < n; ++q)
    if (a.v->recv[q].bytes > 0) return false;
  return true;
}

bool zc_fits(int n, const coll_gpu_args_t &a, size_t room) {
  if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER) return zc_rs_input(n, a) <= room;
  if (a.v == nullptr) return a.count <= (a.coll == COLL_GPU_COLL_BCAST ? room : room / (size_t)n);  // n blocks or 1
  for (int q = 0; q < n; ++q) {
    const coll_gpu_vblock_t &b = a.v->recv[q];
    if (b.bytes > 0 && (b.displ > room || b.bytes > room - b.displ)) return false;
  }
  return true;
}

void zc_wants_post(int rank, int n, bool mapped, const coll_gpu_args_t &a, uint64_t *words) {
  memset(words, 0, kMailWords * sizeof(uint64_t));
  words[0] = mapped ? 1 : 0;
  if (a.v == nullptr) return;
  for (int k = 1; k < n; ++k) {
    const coll_gpu_vblock_t &b = a.v->recv[(rank + k) % n];
    words[1 + 2 * (k - 1)] = b.displ;
    words[2 + 2 * (k - 1)] = b.bytes;
    words[kZcSends + k - 1] = a.v->send[(rank + k) % n].bytes;
  }
}

coll_gpu_vblock_t zc_wants_of(int q, int rank, int n, const uint64_t *words) {
  const int k = (rank - q + n) % n;  // rank is the k-th after q
  return coll_gpu_vblock_t{(size_t)words[1 + 2 * (k - 1)], (size_t)words[2 + 2 * (k - 1)]};
}

size_t zc_gives_of(int q, int rank, int n, const uint64_t *words) {
  const int k = (rank - q + n) % n;
  return (size_t)words[kZcSends + k - 1];
}

int zc_takes_unlike(int rank, int n, const coll_gpu_args_t &a, const size_t *gives) {
  if (a.v == nullptr) return kNoRank;
  for (int q = 0; q < n; ++q)
    if (q != rank && a.v->recv[q].bytes != gives[q]) return q;
  return kNoRank;
}

int zc_blocks(int rank, int n, const coll_gpu_args_t &a, void *const *peer_buf, const coll_gpu_vblock_t *wants,
              coll_gpu_zc_t *zc) {
  if (a.coll == COLL_GPU_COLL_REDUCE_SCATTER) {  // my block of each rank's input, reduced into my receive buffer
    const coll_gpu_vblock_t mine = zc_rs_block(rank, n, a);
    for (int q = 0; q < n; ++q) zc[q] = {(const char *)peer_buf[q] + mine.displ, a.recvbuf, mine.bytes};
    return kNoRank;
  }
  const char *in = (const char *)a.sendbuf;
  int mismatch = kNoRank;
  for (int q = 0; q < n; ++q) {
    coll_gpu_zc_t &z = zc[q];
    if (a.v == nullptr && a.coll == COLL_GPU_COLL_BCAST) {  // the root's buffer into each peer's
      const bool sends = rank == a.root && q != rank;
      z = {in, sends ? peer_buf[q] : nullptr, sends ? a.count : 0};
      continue;
    }
    if (a.v == nullptr) {  // the alltoall: block q of mine into block `rank` of q's; the allgather: my one block
      const char *src = a.coll == COLL_GPU_COLL_ALLGATHER ? in : in + (size_t)q * a.count;
      char *dst = (char *)peer_buf[q] + (size_t)rank * a.count;
      z = {src, dst, src == dst ? 0 : a.count};  // an allgather in place: my block is where it goes
      continue;
    }
    const coll_gpu_vblock_t &out = a.v->send[q];
    const coll_gpu_vblock_t at = q == rank ? a.v->recv[rank] : wants[q];
    if (out.bytes != at.bytes && mismatch < 0) mismatch = q;
    const size_t bytes = smaller(out.bytes, at.bytes);
    z = {in + out.displ, bytes > 0 ? (char *)peer_buf[q] + at.displ : nullptr, bytes};
  }
  return mismatch;
}

int zc_parts(const coll_gpu_tune_config_t &tune, int n, size_t most) {
  coll_gpu_tune_config_t t = tune;
  t.algorithm[COLL_GPU_COLL_ALLTOALL] = COLL_GPU_ALGO_RING;  // the ring's channels whatever the size
  const coll_gpu_choice_t ch = coll_gpu_tune_choose(&t, COLL_GPU_COLL_ALLTOALL, n, most > 0 ? most : 1);
  const int parts = ch.nchannels / n;
  return parts < 1 ? 1 : parts > COLL_GPU_ZC_PARTS ? COLL_GPU_ZC_PARTS : parts;
}

bool zc_engines(size_t min_bytes, int n, size_t most) { return n == 2 && min_bytes > 0 && most >= min_bytes; }

bool zc_reads_fit(int rank, int n, const coll_gpu_args_t &a, size_t room) {
  const coll_gpu_vblock_t mine = zc_rs_block(rank, n, a);
  return mine.displ <= room && mine.bytes <= room - mine.displ;
}

}  // namespace coll_gpu
