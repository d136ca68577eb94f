/*
 * One-shot allreduce, LL protocol: for small messages, one kernel, one NVLink trip.
 *
 * Phases (every rank, every thread on its own 16-byte units):
 *   step 0: push my data, as LL lines flagged with this call's seq, into every peer's one-shot slot
 *           for me;
 *   step 1: for each unit, wait until every peer's lines carry the flag, reduce all ranks' data in
 *           rank order (bit-identical results on every rank), write the result.
 * No fence and no separate flag: the flag travels in the line. Slots alternate by seq parity: a rank
 * reaches call seq + 2 only after every peer has finished call seq, so the slot of seq is free again.
 */
#include <cuda_runtime.h>

#include "kernels/primitives.cuh"

namespace coll_gpu {
namespace {

template <typename T, typename Op, bool Aligned>
__global__ void __launch_bounds__(kLLThreads) oneshot_ll(coll_gpu_ar_params_t p) {
  const Layout L(p.layout);
  const int parity = (int)(p.seq & 1);
  const uint32_t flag = (uint32_t)p.seq;  // never 0: the engine skips seqs that are 0 mod 2^32
  const size_t bytes = p.count * sizeof(T);
  const size_t units = coll_gpu_div_up(bytes, kPack);
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const char *in = (const char *)p.sendbuf;
  char *out = (char *)p.recvbuf;

  // step 0: push my data to every peer
  for (size_t u = first; u < units; u += stride) {
    const int n = (int)coll_gpu_min(kPack, bytes - u * kPack);
    const uint4 v = load_pack<Aligned>(in + u * kPack, n);
    for (int k = 1; k < p.nranks; ++k) {
      const int peer = (p.rank + k) % p.nranks;
      uint4 *line = (uint4 *)((char *)p.peer_scratch[peer] + L.ll(parity, p.rank)) + 2 * u;
      ll_store(line, v.x, v.y, flag);
      ll_store(line + 1, v.z, v.w, flag);
    }
  }

  // step 1: reduce every rank's data in rank order
  const Waiter w(p);
  bool alive = true;
  for (size_t u = first; u < units; u += stride) {
    const int n = (int)coll_gpu_min(kPack, bytes - u * kPack);
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (int s = 0; s < p.nranks; ++s) {
      uint4 v = make_uint4(0, 0, 0, 0);
      if (s == p.rank) {
        v = load_pack<Aligned>(in + u * kPack, n);
      } else {
        const uint4 *line = (const uint4 *)((const char *)p.peer_scratch[p.rank] + L.ll(parity, s)) + 2 * u;
        int spins = 0;
        while (alive && !ll_load(line, flag, &v.x, &v.y)) alive = !w.expired(++spins, s);
        while (alive && !ll_load(line + 1, flag, &v.z, &v.w)) alive = !w.expired(++spins, s);
      }
      acc = s == 0 ? v : reduce_pack<T, Op>(acc, v);
    }
    if (alive) store_out<T, Aligned>(out + u * kPack, acc, n);
  }
  block_done(p);
}

COLL_GPU_DEFINE_LAUNCHER(oneshot_ll)

}  // namespace

int oneshot_blocks(const coll_gpu_ar_params_t &p) {
  size_t units = coll_gpu_div_up(p.count * coll_gpu_dtype_size(p.type), kPack);
  // one thread per unit up to the block limit; the done[] words bound the grid
  return (int)coll_gpu_min(coll_gpu_max(coll_gpu_div_up(units, kLLThreads), 1), 2 * COLL_GPU_MAX_CHANNELS);
}

int oneshot_launch(const coll_gpu_ar_params_t &p, cudaStream_t stream) {
  return dispatch(p, dim3(oneshot_blocks(p)), dim3(kLLThreads), stream);
}

}  // namespace coll_gpu
