/*
 * Two-shot allreduce, Simple protocol: for medium messages, a reduce-scatter and an all-gather, each one
 * NVLink trip straight to the rank that needs the data (every pair of GPUs is connected).
 *
 * The buffer is cut into one chunk per rank, each chunk into one slice per block (kernels/partition.h).
 * Block b of every rank handles slice b of every chunk:
 *   step 0: push slice b of my chunk j into rank j's reduce-scatter slot for me; flag it (release);
 *   step 1: wait for every peer's flag; reduce slice b of my own chunk over all ranks in rank order;
 *           write it to my output and push it into every peer's all-gather slot for me; flag it;
 *   step 2: wait for every peer's flag; copy their reduced slices into my output.
 * Slots alternate by seq parity, flags hold the seq of the phase a sender last completed.
 */
#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

// Waits until every peer has flagged `phase` of this call for this block; false on timeout. Thread s
// polls peer s's flag, so the peers' flags cost one load latency together, not one each in turn; the
// barrier then orders every thread's reads after the acquiring loads.
__device__ bool wait_peers(const coll_gpu_ar_params_t &p, const Layout &L, const Waiter &w, int phase) {
  const int s = threadIdx.x;
  bool ok = true;
  if (s < p.nranks && s != p.rank)
    ok = w.wait_geq(flag_at(p.peer_scratch[p.rank], L.flag(phase, s, blockIdx.x)), p.seq, s);
  return __syncthreads_and(ok) != 0;
}

// Thread 0 flags `phase` of this call for this block at every peer, after every thread's stores (the
// barrier orders them before thread 0's fence).
__device__ void post_peers(const coll_gpu_ar_params_t &p, const Layout &L, int phase) {
  __syncthreads();
  if (threadIdx.x == 0) {
    fence_release_sys();
    for (int k = 1; k < p.nranks; ++k) {
      const int peer = (p.rank + k) % p.nranks;
      st_relaxed_sys(flag_at(p.peer_scratch[peer], L.flag(phase, p.rank, blockIdx.x)), p.seq);
    }
  }
}

template <typename T, typename Op, bool Aligned>
__global__ void __launch_bounds__(kThreads) twoshot(coll_gpu_ar_params_t p) {
  const Layout L(p.layout);
  const int parity = (int)(p.seq & 1);
  const size_t pack = kPack / sizeof(T);
  const char *in = (const char *)p.sendbuf;
  char *out = (char *)p.recvbuf;
  char *mine = (char *)p.peer_scratch[p.rank];
  const int tid = threadIdx.x;
  const size_t stride = (size_t)blockDim.x * kPack;
  // my slice of chunk j, in bytes from the buffer start, and its length
  auto slice = [&](int j, size_t *at, size_t *len) {
    const coll_gpu_range_t c = coll_gpu_part(p.count, p.nranks, j, pack);
    const coll_gpu_range_t s = coll_gpu_part(c.count, gridDim.x, blockIdx.x, pack);
    *at = (c.begin + s.begin) * sizeof(T);
    *len = s.count * sizeof(T);
  };
  // where slice b of chunk j sits inside a slot (slots hold one chunk)
  auto in_slot = [&](int j) {
    return coll_gpu_part(coll_gpu_part(p.count, p.nranks, j, pack).count, gridDim.x, blockIdx.x, pack).begin *
           sizeof(T);
  };
  const Waiter w(p);

  // step 0: push slice b of chunk j to rank j
  for (int q = 1; q < p.nranks; ++q) {
    const int j = (p.rank + q) % p.nranks;
    size_t at, len;
    slice(j, &at, &len);
    char *dst = (char *)p.peer_scratch[j] + L.ts(parity, 0, p.rank) + in_slot(j);
    for (size_t tile = (size_t)tid * kPack; tile < len; tile += stride * kUnroll) {
      uint4 v[kUnroll];
      int n[kUnroll];
      tile_packs(tile, stride, len, n);
#pragma unroll
      for (int k = 0; k < kUnroll; ++k)
        if (n[k]) v[k] = load_pack<Aligned>(in + at + tile + k * stride, n[k]);
#pragma unroll
      for (int k = 0; k < kUnroll; ++k)
        if (n[k]) store_pack<true>(dst + tile + k * stride, v[k], n[k]);
    }
  }
  post_peers(p, L, 0);

  // step 1: reduce my chunk's slice over all ranks, keep it, push it to every peer
  bool alive = wait_peers(p, L, w, 0);
  if (alive) {
    size_t at, len;
    slice(p.rank, &at, &len);
    const size_t off = in_slot(p.rank);
    for (size_t tile = (size_t)tid * kPack; tile < len; tile += stride * kUnroll) {
      uint4 acc[kUnroll], v[kUnroll];
      int n[kUnroll];
      tile_packs(tile, stride, len, n);
      for (int s = 0; s < p.nranks; ++s) {
        const char *src = s == p.rank ? in + at : mine + L.ts(parity, 0, s) + off;
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
          if (n[k])
            v[k] = s == p.rank ? load_pack<Aligned>(src + tile + k * stride, n[k])
                               : load_peer_pack(src + tile + k * stride, n[k]);
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
          if (n[k]) acc[k] = s == 0 ? v[k] : reduce_pack<T, Op>(acc[k], v[k]);
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if (n[k] == 0) continue;
        const size_t i = tile + k * stride;
        store_out<T, Aligned>(out + at + i, acc[k], n[k]);
        for (int q = 1; q < p.nranks; ++q) {
          const int peer = (p.rank + q) % p.nranks;
          store_pack<true>((char *)p.peer_scratch[peer] + L.ts(parity, 1, p.rank) + off + i, acc[k], n[k]);
        }
      }
    }
    post_peers(p, L, 1);
  }

  // step 2: copy every peer's reduced slice into my output
  if (alive && wait_peers(p, L, w, 1)) {
    for (int q = 1; q < p.nranks; ++q) {
      const int s = (p.rank + q) % p.nranks;
      size_t at, len;
      slice(s, &at, &len);
      const char *src = mine + L.ts(parity, 1, s) + in_slot(s);
      for (size_t tile = (size_t)tid * kPack; tile < len; tile += stride * kUnroll) {
        uint4 v[kUnroll];
        int n[kUnroll];
        tile_packs(tile, stride, len, n);
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
          if (n[k]) v[k] = load_peer_pack(src + tile + k * stride, n[k]);
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
          if (n[k]) store_out<T, Aligned>(out + at + tile + k * stride, v[k], n[k]);
      }
    }
  }
  block_done(p.status, p.seq);
}

COLL_GPU_DEFINE_LAUNCHER(twoshot)

}  // namespace

int twoshot_launch(const coll_gpu_ar_params_t &p, cudaStream_t stream) {
  return dispatch(p, dim3(p.nchannels), dim3(kThreads), stream);
}

}  // namespace coll_gpu
