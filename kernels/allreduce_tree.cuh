/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Tree allreduce across nodes, Simple protocol (NCCL's double binary tree): the buffer's two halves each go up
 * one of the call's two trees (coll_gpu_work_t's tree_up and tree_down: a chain inside each node, a binary tree
 * over the nodes, engine/rings.h's coll_gpu_rings_trees), reduced on the way to the tree's root, and come back down
 * from it. Over the point-to-point connections (3 to COLL_GPU_MAX_DIRECT ranks), tree t on connection t.
 *
 * Four blocks: tree t's up half (block 2t) and down half (block 2t + 1) run at once, so that a chunk goes down
 * while the next goes up (NCCL's tree split). Per chunk, a rank's up block receives each child's partial result
 * and reduces it with its own (kept in recvbuf between children), then sends it to its parent; its down block
 * receives the result from its parent, keeps it and sends it to each child. The root turns the chunks round in
 * its up block: the last child's partial completes the result, which it keeps and sends back to that child in the
 * same step, then to the others; its down block has nothing to do.
 *
 * recvbuf holds a rank's partials before the result reaches it, chunk by chunk: the result of a chunk comes down
 * only after the rank has sent that chunk's partial up, so the down block never writes where the up block still
 * reads, in place too (the up block reads a chunk's input before it sends that chunk).
 */
#ifndef COLL_GPU_KERNELS_ALLREDUCE_TREE_CUH
#define COLL_GPU_KERNELS_ALLREDUCE_TREE_CUH

#include <cuda_runtime.h>

#include "kernels/prims_ring.cuh"

namespace coll_gpu {
namespace {

template <typename T, typename Op, int Align>
__global__ void __launch_bounds__(kRingThreads)
    tree(const __grid_constant__ coll_gpu_dev_comm_t comm, const __grid_constant__ coll_gpu_work_t p, bool aligned) {
  using Channel = RingChannel<T, Op, Align>;
  const int t = (int)blockIdx.x / 2, parent = p.tree_up[t];
  const bool up = blockIdx.x % 2 == 0;
  const int *kid = p.tree_down[t];
  int kids = 0;
  while (kids < COLL_GPU_TREE_ARITY && kid[kids] >= 0) ++kids;
  const coll_gpu_range_t half = coll_gpu_part(p.count, 2, t, kPack / sizeof(T));
  const size_t slot = coll_gpu_min(p.chunk, (size_t)COLL_GPU_P2P_SLOT_BYTES) / sizeof(T);  // elements per step
  const char *in = (const char *)p.sendbuf + half.begin * sizeof(T);
  char *out = (char *)p.recvbuf + half.begin * sizeof(T);
  // a connection of tree t with each child (the root's both ways, a rank's to its parent and from a child on the
  // way up, from its parent and to a child on the way down); a leaf's with its parent
  const int other = kids > 0 ? kid[0] : parent;  // stands in for a peer a connection does not use (every rank has one)
  const int k1 = kids > 1 ? kid[1] : other, k2 = kids > 2 ? kid[2] : other;
  const int to = parent < 0 || !up ? -1 : parent, from = parent < 0 || up ? -1 : parent;
  Channel c0(comm, p, aligned, to >= 0 ? to : other, from >= 0 ? from : other, t),
      c1(comm, p, aligned, to >= 0 ? to : k1, from >= 0 ? from : k1, t),
      c2(comm, p, aligned, to >= 0 ? to : k2, from >= 0 ? from : k2, t);
  Channel *const c[COLL_GPU_TREE_ARITY] = {&c0, &c1, &c2};
  bool ok = parent >= 0 || up;  // the root's down block has nothing to do
  for (size_t off = 0; ok && off < half.count; off += slot) {
    const size_t bytes = coll_gpu_min(slot, half.count - off) * sizeof(T);
    const char *mine = in + off * sizeof(T);
    char *res = out + off * sizeof(T);
    if (up && kids == 0) {  // a leaf: my data to my parent
      ok = c0.template step<kSend>(mine, nullptr, bytes);
      continue;
    }
    if (up) {  // each child's partial with mine; the last one's sent on (to my parent, or back down: the root)
      for (int k = 0; ok && k < kids - 1; ++k)
        ok = c[k]->template step<kRecv | kReduce | kCopyOut>(k == 0 ? mine : res, res, bytes);
      const char *acc = kids == 1 ? mine : res;
      if (ok && parent >= 0) ok = c[kids - 1]->template step<kRecv | kReduce | kSend>(acc, nullptr, bytes);
      if (ok && parent < 0) ok = c[kids - 1]->template step<kRecv | kReduce | kCopyOut | kSend>(acc, res, bytes);
      for (int k = 0; ok && parent < 0 && k < kids - 1; ++k) ok = c[k]->template step<kSend>(res, nullptr, bytes);
      continue;
    }
    if (kids == 0) {  // down, a leaf: the result
      ok = c0.template step<kRecv | kCopyOut>(nullptr, res, bytes);
      continue;
    }
    ok = c0.template step<kRecv | kCopyOut | kSend>(nullptr, res, bytes);  // down: the result, on to each child
    for (int k = 1; ok && k < kids; ++k) ok = c[k]->template step<kSend>(res, nullptr, bytes);
  }
  // each counter saved by the block that moves it, once
  if (parent < 0 && up) {
    for (int k = 0; k < kids; ++k) c[k]->save();
  } else if (up) {
    for (int k = 0; k < kids; ++k) c[k]->save(k == kids - 1, true);
    if (kids == 0) c0.save(true, false);
  } else if (parent >= 0) {
    for (int k = 0; k < kids; ++k) c[k]->save(true, k == 0);
    if (kids == 0) c0.save(false, true);
  }
  block_done(comm.status, p.seq);
}

}  // namespace

// instantiated in kernels/inst/tree_*.cu
COLL_GPU_DEFINE_TYPED(tree_typed, tree, dim3(2 * COLL_GPU_TREES), dim3(kRingThreads))

}  // namespace coll_gpu

#endif
