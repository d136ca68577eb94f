/*
 * Ring allreduce, Simple protocol: for large messages, bandwidth-optimal (every rank sends and receives
 * 2 (n - 1) / n of the buffer), over several channels, one block each, to fill NVLink.
 *
 * Each channel owns a part of the buffer and loops over rounds of one FIFO slot per rank, around its
 * own ring (an order of the ranks from the topology search). With the round cut into n chunks, the rank
 * at position r of the ring runs (chunk indices mod n):
 *   step 0:          send(chunk r)                      push my data to the next GPU
 *   steps 1..n-2:    recvReduceSend(chunk r - s)        add mine to what arrived, push it on
 *   step n-1:        recvReduceCopySend(chunk r + 1)    that chunk is complete here: keep it, push it
 *   steps n..2n-3:   recvCopySend(chunk r + 2 - t)      all-gather: keep what arrived, push it on
 *   step 2n-2:       recv(chunk r + 2)                  keep the last one
 * A send writes into the next rank's FIFO slot (step mod depth), then raises the next rank's tail; a
 * receive waits for our tail, consumes the slot, then raises the previous rank's head, which frees the
 * slot. One release fence after the step's data orders both flags. Step counters continue across calls
 * (coll_gpu_ar_params_t::ring_step).
 */
#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

enum { kRecv = 1, kReduce = 2, kCopyOut = 4, kSend = 8 };

template <typename T, typename Op, bool Aligned>
struct RingChannel {
  const coll_gpu_ar_params_t &p;
  const Layout L;
  const Waiter w;
  const int ch;
  int pos, next, prev;  // my position in this channel's ring, and my neighbours there
  uint64_t send_step, recv_step;
  char *my_fifo, *next_fifo;
  uint64_t *recv_tail, *send_head, *next_tail, *prev_head;

  __device__ explicit RingChannel(const coll_gpu_ar_params_t &params)
      : p(params), L(params.layout), w(params), ch(blockIdx.x) {
    const uint8_t *ring = p.rings[ch % p.nrings];
    const int n = p.nranks;
    pos = 0;
    while (pos < n - 1 && ring[pos] != p.rank) ++pos;
    next = ring[(pos + 1) % n];
    prev = ring[(pos + n - 1) % n];
    send_step = recv_step = p.ring_step[ch];
    char *mine = (char *)p.peer_scratch[p.rank];
    my_fifo = mine + L.fifo(ch, 0);
    next_fifo = (char *)p.peer_scratch[next] + L.fifo(ch, 0);
    recv_tail = flag_at(mine, L.tail(ch));
    send_head = flag_at(mine, L.head(ch));
    next_tail = flag_at(p.peer_scratch[next], L.tail(ch));
    prev_head = flag_at(p.peer_scratch[prev], L.head(ch));
  }

  // One step on elements [begin, begin + count) of the buffer; false when the host aborted the call.
  template <int Mode>
  __device__ bool step(size_t begin, size_t count) {
    __shared__ int ok;
    if (threadIdx.x == 0) {
      ok = 1;
      if (Mode & kRecv) ok = w.wait_geq(recv_tail, recv_step + 1, prev);
      if (ok && (Mode & kSend) && send_step + 1 > COLL_GPU_RING_SLOTS)
        ok = w.wait_geq(send_head, send_step + 1 - COLL_GPU_RING_SLOTS, next);
    }
    __syncthreads();
    if (!ok) return false;
    const char *src = my_fifo + (recv_step % COLL_GPU_RING_SLOTS) * L.l.slot_bytes;
    char *dst = next_fifo + (send_step % COLL_GPU_RING_SLOTS) * L.l.slot_bytes;
    const char *in = (const char *)p.sendbuf + begin * sizeof(T);
    char *out = (char *)p.recvbuf + begin * sizeof(T);
    const size_t bytes = count * sizeof(T);
    const size_t stride = (size_t)blockDim.x * kPack;
    for (size_t tile = (size_t)threadIdx.x * kPack; tile < bytes; tile += stride * kUnroll) {
      uint4 v[kUnroll], mine[kUnroll];
      int n[kUnroll];
      tile_packs(tile, stride, bytes, n);
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if (n[k] == 0) continue;
        const size_t i = tile + k * stride;
        if (Mode & kRecv) v[k] = load_peer_pack(src + i, n[k]);
        if ((Mode & kReduce) || !(Mode & kRecv)) mine[k] = load_pack<Aligned>(in + i, n[k]);
      }
#pragma unroll
      for (int k = 0; k < kUnroll; ++k) {
        if (n[k] == 0) continue;
        const size_t i = tile + k * stride;
        if (!(Mode & kRecv)) v[k] = mine[k];
        if (Mode & kReduce) v[k] = reduce_pack<T, Op>(v[k], mine[k]);
        if (Mode & kCopyOut) store_out<T, Aligned>(out + i, v[k], n[k]);
        if (Mode & kSend) store_pack<true>(dst + i, v[k], n[k]);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      fence_release_sys();  // this step's stores and loads, then both flags
      if (Mode & kSend) st_relaxed_sys(next_tail, send_step + 1);
      if (Mode & kRecv) st_relaxed_sys(prev_head, recv_step + 1);
    }
    if (Mode & kSend) ++send_step;
    if (Mode & kRecv) ++recv_step;
    return true;
  }
};

template <typename T, typename Op, bool Aligned>
__global__ void __launch_bounds__(kThreads) ring(coll_gpu_ar_params_t p) {
  RingChannel<T, Op, Aligned> c(p);
  const int n = p.nranks, r = c.pos;
  const size_t pack = kPack / sizeof(T);
  const size_t slot = p.layout.slot_bytes / sizeof(T);
  const coll_gpu_range_t part = coll_gpu_part(p.count, gridDim.x, blockIdx.x, pack);
  bool ok = true;
  for (size_t off = 0; ok && off < part.count; off += (size_t)n * slot) {
    const size_t round = coll_gpu_min((size_t)n * slot, part.count - off);
    auto chunk = [&](int j) { return coll_gpu_part(round, n, (size_t)((j % n + n) % n), pack); };
    const size_t base = part.begin + off;
    coll_gpu_range_t k = chunk(r);
    // step 0: push my data to the next GPU
    ok = c.template step<kSend>(base + k.begin, k.count);
    // steps 1..n-2: add mine to the partial sum that arrived, push it on
    for (int s = 1; ok && s < n - 1; ++s) {
      k = chunk(r - s);
      ok = c.template step<kRecv | kReduce | kSend>(base + k.begin, k.count);
    }
    // step n-1: chunk r+1 is complete here: keep it and push it on
    k = chunk(r + 1);
    if (ok) ok = c.template step<kRecv | kReduce | kCopyOut | kSend>(base + k.begin, k.count);
    // all-gather: keep each complete chunk that arrives and push it on
    for (int t = 1; ok && t < n - 1; ++t) {
      k = chunk(r + 1 - t);
      ok = c.template step<kRecv | kCopyOut | kSend>(base + k.begin, k.count);
    }
    // last step: keep the last complete chunk
    k = chunk(r + 2);
    if (ok) ok = c.template step<kRecv | kCopyOut>(base + k.begin, k.count);
  }
  block_done(p.status, p.seq);
}

COLL_GPU_DEFINE_LAUNCHER(ring)

}  // namespace

int ring_launch(const coll_gpu_ar_params_t &p, cudaStream_t stream) {
  return dispatch(p, dim3(p.nchannels), dim3(kThreads), stream);
}

}  // namespace coll_gpu
