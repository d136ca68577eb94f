/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The collectives' rows and the names of algorithms and protocols (common/colls.h).
 */
#include "common/colls.h"

#include <stdio.h>

namespace {
constexpr unsigned bit(coll_gpu_algo_t a) { return 1u << a; }
constexpr unsigned kDirectAndRing = bit(COLL_GPU_ALGO_ONESHOT) | bit(COLL_GPU_ALGO_RING);

const coll_gpu_coll_info_t kColls[COLL_GPU_NCOLLS] = {
    {"allreduce", "MPI_Allreduce",
     kDirectAndRing | bit(COLL_GPU_ALGO_TWOSHOT) | bit(COLL_GPU_ALGO_CHAIN) | bit(COLL_GPU_ALGO_ALLGATHER) |
         bit(COLL_GPU_ALGO_TREE),
     COLL_GPU_SHAPE_ALLREDUCE,
     "Algorithm of MPI_Allreduce on device buffers: auto (the tuning model picks by size and ranks), "
     "oneshot (every rank reads all data, up to coll_gpu_oneshot_max_bytes), twoshot (reduce-scatter "
     "and all-gather in one hop each, up to coll_gpu_twoshot_max_bytes), ring, chain (over several "
     "nodes only: a reduce to rank 0, then a bcast from it, each along its chain of the ranks; auto takes "
     "it there up to 256 KiB, above the allgather's and the tree's calls), allgather (over several nodes "
     "only, where every rank's input together takes at most 64 KiB: a ring allgather of the inputs, then "
     "each rank reduces them in rank order; auto takes it there wherever it fits), tree (over several "
     "nodes of 3 to 8 ranks only: NCCL's double binary tree, a chain inside each node and a binary tree "
     "between the nodes, each half of the buffer reduced up one tree and sent back down it; auto takes it "
     "there up to 128 KiB, above the allgather's calls), or staged (through host memory and the next coll "
     "component). A forced algorithm that does not fit the message falls back to auto; "
     "communicators of more than 8 ranks run the ring, and over several nodes the ring, the chain, the "
     "allgather or the tree, whatever is forced"},
    {"bcast", "MPI_Bcast", kDirectAndRing, COLL_GPU_SHAPE_CHAIN,
     "Algorithm of MPI_Bcast on device buffers: auto (the tuning model picks by size and ranks), oneshot "
     "(the root writes LL lines into every rank's slot, in pieces of coll_gpu_oneshot_max_bytes), ring "
     "(a pipelined chain from the root, Simple protocol), or staged (through host memory and the next "
     "coll component)"},
    {"allgather", "MPI_Allgather", kDirectAndRing | bit(COLL_GPU_ALGO_BRUCK) | bit(COLL_GPU_ALGO_PAIRWISE),
     COLL_GPU_SHAPE_BLOCKS,
     "Algorithm of MPI_Allgather on device buffers: auto, oneshot (every rank writes its block as LL "
     "lines into every peer, in pieces of coll_gpu_oneshot_max_bytes), ring (Simple protocol), bruck "
     "(over several nodes of 3 to 8 ranks only: Bruck's allgather, ceil(log2 ranks) steps, each sending "
     "every block a rank holds to the rank 2^k before it), pairwise (over several nodes of 3 to 8 ranks "
     "only: one step, every rank sending its block to every peer at once; auto takes it there up to 4 KiB "
     "a block, and up to 32 KiB where the ring's furthest block crosses the network more than "
     "ceil(log2 ranks) times in a row, e.g. 4 to 8 nodes of one rank), or staged; "
     "also of MPI_Allgatherv on one host where every block has one count and the blocks lie one after "
     "another in rank order (it stages otherwise)"},
    {"alltoall", "MPI_Alltoall", kDirectAndRing, COLL_GPU_SHAPE_PAIRS,
     "Algorithm of MPI_Alltoall on device buffers: auto, oneshot (every rank writes each peer's block "
     "as LL lines into that peer, in pieces of coll_gpu_oneshot_max_bytes), ring (Simple protocol, a "
     "sending and a receiving block on each channel with 2 ranks, and with more pairwise on each "
     "connection to each peer, through that peer's own FIFOs), or staged. "
     "In-place alltoall, and alltoall of more than 8 ranks, is always staged. Also of MPI_Alltoallv on one "
     "host where every block has one count and the blocks lie one after another in rank order (it "
     "stages otherwise)"},
    {"reduce", "MPI_Reduce", kDirectAndRing, COLL_GPU_SHAPE_CHAIN,
     "Algorithm of MPI_Reduce on device buffers: auto, oneshot (every rank writes its buffer as LL lines "
     "into the root, which reduces them in rank order; in pieces of coll_gpu_oneshot_max_bytes), ring "
     "(a pipelined chain ending at the root, Simple protocol), or staged"},
    {"reduce_scatter", "MPI_Reduce_scatter", kDirectAndRing | bit(COLL_GPU_ALGO_ALLGATHER), COLL_GPU_SHAPE_BLOCKS,
     "Algorithm of MPI_Reduce_scatter and MPI_Reduce_scatter_block on device buffers: auto, oneshot "
     "(every rank writes each peer's block as LL lines into that peer, which reduces them in rank "
     "order; in pieces of coll_gpu_oneshot_max_bytes), ring (Simple protocol), allgather (over several "
     "nodes only, where ranks x ranks blocks (the largest, with counts) take at most 64 KiB: an allgather "
     "of every rank's whole input, then each rank reduces its block of them in rank order; auto takes "
     "it there for inputs of at most 1 KiB where that allgather runs pairwise, e.g. 4 to 8 nodes of one rank), or "
     "staged. "
     "MPI_Reduce_scatter with counts that differ is always staged in place, and with more than 8 ranks"},
};

bool known(coll_gpu_coll_t coll) { return coll >= 0 && coll < COLL_GPU_NCOLLS; }
}  // namespace

const coll_gpu_coll_info_t *coll_gpu_coll_info(coll_gpu_coll_t coll) { return known(coll) ? &kColls[coll] : nullptr; }

int coll_gpu_coll_has(coll_gpu_coll_t coll, coll_gpu_algo_t algo) {
  return known(coll) && coll_gpu_info_has(&kColls[coll], algo);
}

const char *coll_gpu_coll_name(coll_gpu_coll_t coll) { return known(coll) ? kColls[coll].name : "?"; }

const char *coll_gpu_coll_mpi_name(coll_gpu_coll_t coll) { return known(coll) ? kColls[coll].mpi_name : "?"; }

const char *coll_gpu_algo_name(coll_gpu_algo_t algo) {
  static const char *names[] = {"oneshot", "twoshot", "ring", "chain", "allgather", "bruck", "pairwise", "tree"};
  return algo >= 0 && algo < COLL_GPU_NALGOS ? names[algo] : "?";
}

const char *coll_gpu_proto_name(coll_gpu_proto_t proto) {
  static const char *names[] = {"LL", "Simple"};
  return proto >= 0 && proto < COLL_GPU_NPROTOS ? names[proto] : "?";
}

namespace {
// Appends name to out (len bytes, of which *at are taken), after sep; *at stays within out.
void append(char *out, size_t len, size_t *at, const char *sep, const char *name) {
  if (*at >= len) return;
  const int n = snprintf(out + *at, len - *at, "%s%s", sep, name);
  *at = n < 0 ? len : *at + (size_t)n;
}
}  // namespace

const char *coll_gpu_coll_names(unsigned which, const char *last, char *out, size_t len) {
  int count = 0;
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) count += (which >> k) & 1u;
  out[0] = '\0';
  size_t at = 0;
  for (int k = 0, n = 0; k < COLL_GPU_NCOLLS; ++k)
    if ((which >> k) & 1u) {
      ++n;
      append(out, len, &at, n == 1 ? "" : n < count ? ", " : last, kColls[k].name);
    }
  return out;
}

const char *coll_gpu_algo_names(coll_gpu_coll_t coll, char *out, size_t len) {
  out[0] = '\0';
  size_t at = 0;
  for (int a = 0; a < COLL_GPU_NALGOS; ++a)
    if (coll_gpu_coll_has(coll, (coll_gpu_algo_t)a))
      append(out, len, &at, at == 0 ? "" : ", ", coll_gpu_algo_name((coll_gpu_algo_t)a));
  return out;
}
