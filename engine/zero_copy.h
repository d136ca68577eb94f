/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The zero-copy calls' words (kernels/move.cu's move_zero_copy, kernels/reduce.cuh's reduce_scatter_zero_copy): the
 * two messages of a call through the node's mailbox (engine/mailbox.h) and the blocks each rank then writes or reads.
 * Pure functions of their arguments, so that the exchange is tested on the host (test/unit/test_zero_copy.cc). C++
 * only.
 *
 * Each rank exports one buffer of the call to its peers (zc_exported): the moves their receive buffer, which the peers
 * write into; a reduce-scatter its send buffer, which the peers read their blocks from.
 * Message 1, where this rank's exported buffer lies: word kZcCan is kZcExported when it can be exported (cudaMalloc
 * memory), kZcNothing when this rank receives no byte (a call with counts: nothing to map), 0 otherwise; words
 * kZcId, kZcSize and kZcOffset the allocation's buffer id and size and the buffer's offset in it, words kZcHandle on
 * the allocation's IPC handle; word kZcMost the most bytes this rank sends any rank (a reduce-scatter: the bytes of
 * its largest block; the parts of every rank's blocks follow from the largest over the ranks, the same on every
 * rank); word kZcRoom the bytes of the allocation from the buffer on (a reduce-scatter's readers check their blocks
 * against it).
 * Message 2: word 0 is 1 when this rank has mapped every peer's receive buffer; for a call with counts, words 1 +
 * 2 (k - 1) and 2 + 2 (k - 1) where this rank's receive buffer takes the block of the rank k after it (k = 1 to
 * n - 1): its displacement and bytes; and word kZcSends + k - 1 the bytes this rank sends the rank k after it (so
 * that a receiver, too, knows where its count and its sender's disagree).
 */
#ifndef COLL_GPU_ZERO_COPY_H
#define COLL_GPU_ZERO_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/ipc_cache.h"
#include "engine/mailbox.h"

namespace coll_gpu {

constexpr int kZcCan = 0, kZcId = 1, kZcSize = 2, kZcOffset = 3, kZcHandle = 4;
constexpr int kZcMost = kZcHandle + kIpcHandleBytes / 8, kZcRoom = kZcMost + 1;
constexpr uint64_t kZcExported = 1, kZcNothing = 2;
static_assert(kZcRoom < kMailWords, "an exported buffer fits a message");
constexpr int kZcSends = 1 + 2 * (COLL_GPU_MAX_DIRECT - 1);
static_assert(kZcSends + COLL_GPU_MAX_DIRECT - 1 <= kMailWords, "message 2 fits a message");

// The buffer this rank exports in call a: a reduce-scatter's send buffer, a move's receive buffer.
const void *zc_exported(const coll_gpu_args_t &a);
// Bytes from rank q's block on in a reduce-scatter's send buffer, and the block's bytes (counts or equal blocks).
coll_gpu_vblock_t zc_rs_block(int q, int n, const coll_gpu_args_t &a);
// The bytes of a reduce-scatter's input: every rank's block.
size_t zc_rs_input(int n, const coll_gpu_args_t &a);
// The most bytes this rank sends any rank in call a (its own block included); a reduce-scatter's largest block.
size_t zc_most(int n, const coll_gpu_args_t &a);
// Whether this rank receives no byte in call a (a call with counts, or a bcast's root).
bool zc_receives_nothing(int rank, int n, const coll_gpu_args_t &a);
// Whether every block the peers touch in call a lies within the `room` bytes of its allocation from the exported
// buffer on (a reduce-scatter: its whole input): a peer writes or reads only where this rank's buffer is. (An
// erroneous layout past the allocation then goes the path without mapping, where only this rank's own copies reach
// it.)
bool zc_fits(int n, const coll_gpu_args_t &a, size_t room);
// This rank's message 2: `mapped`, and for a call with counts where each peer's block goes.
void zc_wants_post(int rank, int n, bool mapped, const coll_gpu_args_t &a, uint64_t *words);
// What rank q's message 2 (words) says q takes from `rank` in a call with counts.
coll_gpu_vblock_t zc_wants_of(int q, int rank, int n, const uint64_t *words);
// The bytes rank q's message 2 (words) says q sends `rank` in a call with counts.
size_t zc_gives_of(int q, int rank, int n, const uint64_t *words);
// What zc_takes_unlike and zc_blocks answer where no rank is meant.
constexpr int kNoRank = -1;
// In a call with counts a, the first rank q (in rank order, but this one) whose block this rank takes more or fewer
// bytes of than q sends it (gives[q]), or kNoRank; kNoRank for a call of equal blocks (a.v NULL). zc_blocks names
// the other side.
int zc_takes_unlike(int rank, int n, const coll_gpu_args_t &a, const size_t *gives);
// The blocks of call a: for a move, what this rank writes, zc[q] into rank q's receive buffer, zc[rank] its own copy;
// for a reduce-scatter, what it reads, zc[q] this rank's block of q's input, each into a.recvbuf. peer_buf[q] is q's
// exported buffer as mapped here (zc_exported: peer_buf[rank] this rank's own; NULL for a rank that receives
// nothing); wants[q] what q takes from this rank (a call with counts; unused for the moves of equal blocks, a.v NULL:
// an allgather in place copies nothing of its own, a bcast's root writes its buffer into each peer's and the others
// write nothing). Returns the first rank whose block this rank sends more or fewer bytes of than that rank takes (the
// block then moves as far as both allow), or kNoRank.
int zc_blocks(int rank, int n, const coll_gpu_args_t &a, void *const *peer_buf, const coll_gpu_vblock_t *wants,
              coll_gpu_zc_t *zc);
// The parts of each block, from the largest block of any rank: the channels the tuning model gives a ring alltoall
// of that size, shared among the ranks' blocks, at most COLL_GPU_ZC_PARTS.
int zc_parts(const coll_gpu_tune_config_t &tune, int n, size_t most);
// Whether the peers' blocks go by copy engines (cudaMemcpyAsync) rather than by the zero-copy kernel's stores: with
// 2 ranks, from min_bytes (0: never) the largest block of any rank; the same on every rank. With more ranks each
// GPU's copies to its peers at once moved less than the kernel's stores (196 against 352 GB/s a GPU on 4 H200,
// 256 MiB blocks); with 2, more (384 against 358).
bool zc_engines(size_t min_bytes, int n, size_t most);
// Whether every block of a reduce-scatter that this rank reads (zc_blocks) lies within the `room` bytes that rank q's
// message 1 says its exported buffer has (kZcRoom): where the ranks' counts disagree (an erroneous program) no rank
// reads past a peer's allocation.
bool zc_reads_fit(int rank, int n, const coll_gpu_args_t &a, size_t room);

}  // namespace coll_gpu

#endif
