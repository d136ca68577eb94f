/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The tuning model (engine/tune.h).
 *
 * One table of costs per kind of node link, an entry per algorithm and protocol: time = latency + the steps and
 * peers the algorithm waits on + bytes moved per rank / bandwidth, where the collective's shape says how many
 * steps and bytes a call of its size takes (pattern). The constants below are measured (per GPU, over NVLink on
 * H200 through NVSwitch): the latencies are those of the kernels, not the flag round trips alone (a flag written
 * into a peer's memory through CUDA IPC is seen about 0.7 us later on that machine, but a phase also waits for
 * its data to land before it flags). The topology's ring speed scales NVLink's bandwidths (costs). Every
 * collective's choice is one loop over the table (pick), after what the user forces or rules and the rules built
 * in where measurements overrule the model.
 */
#include "engine/tune.h"

#include <stdint.h>
#include <string.h>

/* Constants from the benchmark on 2 H200 (coll_gpu_allreduce_bench), the launch taken out: kernel times
 * from globaltimer stamps in block 0 (one-shot and two-shot) or host time less the ~9 us a launched call
 * costs around its kernel. The one-shot LL kernel takes ~2 us at 8 B; one-shot calls of 256 KiB, 512
 * KiB and 1 MiB took 15.9, 19.3 and 23.4 us through the component (two-shot 21.0 and 22.6 at the last
 * two). The two-shot kernel takes ~10.5 us up to 256 KiB, whatever the size: each of its two phases
 * loads, stores, then waits on a system-scope fence (~1.3 us) and on the peers' flags; 4 MiB and 16 MiB
 * took 33 and 75 us through the component. At 4 ranks, two-shot took ~10 us more than at 2 (30 against
 * 20 up to 256 KiB), ~3.7 of it the flag release stores that now share one fence; two-shot's peer_us
 * is the rest, from that one run. The ring (64 channels, 512 KiB slots) moved 8 MiB in ~43 us, 16 MiB in
 * ~70 and 1 GiB at 311-316 GB/s bus bandwidth. */
namespace {
// One entry of the cost table: an algorithm run in a protocol over one kind of link. A call's time is lat_us, plus
// peer_us for each peer beyond the first, plus step_us for each dependent step, plus its traffic (the bytes each
// rank sends over its link, by the collective's shape: pattern below) at bw bytes/us. bw 0: the algorithm does
// not run that protocol.
struct Cost {
  double lat_us;   // one-shot: one flag round, no fence; two-shot at 2 ranks: two phases of data, fence and flags
  double peer_us;  // two-shot: each peer beyond the first
  double step_us;  // the ring: each dependent step (wait, barrier, data, release, seen by the next rank)
  double bw;       // LL one-shot: data per peer, half of each line flags; two-shot and the ring: bus traffic
};
// The table of one kind of link: algorithm x protocol.
struct CostTable {
  Cost at[COLL_GPU_NALGOS][COLL_GPU_NPROTOS];
};
constexpr Cost kAbsent = {0, 0, 0, 0};
// NVLink, measured on H200 (above). CHAIN and ALLGATHER, across nodes, are ring calls along the node's links: a reduce
// and a bcast, or an allgather (its reduction, with no peer, is not timed). BRUCK, PAIRWISE and TREE, across nodes too,
// have the ring's constants, and the ring's steps or the chain's (pattern): the model, which has no costs of the
// network, then keeps the ring, first in the table; the rules built in take the pairwise allgather where it was
// measured faster.
constexpr CostTable kNvlink = {{
    /* ONESHOT */ {{2.0, 0, 0, 85e3}, kAbsent},
    /* TWOSHOT */ {kAbsent, {10.5, 3.0, 0, 300e3}},
    /* RING */ {kAbsent, {0, 0, 8.0, 310e3}},
    /* CHAIN */ {kAbsent, {0, 0, 8.0, 310e3}},
    /* ALLGATHER */ {kAbsent, {0, 0, 8.0, 310e3}},
    /* BRUCK */ {kAbsent, {0, 0, 8.0, 310e3}},
    /* PAIRWISE */ {kAbsent, {0, 0, 8.0, 310e3}},
    /* TREE */ {kAbsent, {0, 0, 8.0, 310e3}},
}};
/* Through shared host memory (the SHM transport), every line crosses PCIe twice: the writer's posted stores, then
 * the reader's loads, each a round trip. On one H200 shared by the ranks under MPS (coll_gpu_allreduce_bench -N,
 * coll_gpu_node_transport shm, each algorithm forced, 8 B to 4 MiB at 2 and 4 ranks): one-shot LL moved ~1 KB/us per
 * peer (allreduce at 2 ranks: 12 us at 8 B, 29 at 16 KiB, 49 at 32 KiB, 111 at 64 KiB), two-shot took 24-26 us up to
 * 64 KiB and 98 at 1 MiB, the ring 24-33 us up to 64 KiB and 88 at 1 MiB (~15 GB/s); at 4 ranks, sharing the one
 * PCIe link, ~9 GB/s. These constants are not those readings: they are the set, searched on a grid, whose choices
 * came closest to the fastest measured algorithm at every size, collective and rank count of that run: the chosen
 * algorithm's time was 1.004x the fastest on average over the 240 points, 1.67x at worst (reduce-scatter of 32 KiB
 * at 2 ranks: ring, 54 us, against one-shot's 33). NVLink's constants chose 1.41x the fastest on average there,
 * 7.3x at worst (allreduce of 64 KiB at 2 ranks: one-shot, 111 us, against two-shot's 26; at 4 ranks 256 KiB: 551
 * against 81). They give one-shot LL up to 16 KiB (allreduce: 8 KiB at 2 ranks, 4 KiB at 3-8; alltoall: 16 KiB at 2,
 * 4 KiB at 4), two-shot allreduce up to 128 KiB at 2 ranks and 256 KiB at 3-4, and the ring beyond. GPUs of their
 * own, each with its own PCIe link, may move these crossovers: measured on such a machine, its figures should
 * replace these. */
constexpr CostTable kShm = {{
    /* ONESHOT */ {{2.0, 0, 0, 2e3}, kAbsent},
    /* TWOSHOT */ {kAbsent, {6.0, 1.0, 0, 5e3}},
    /* RING */ {kAbsent, {0, 0, 10.0, 7.5e3}},
    /* CHAIN */ {kAbsent, {0, 0, 10.0, 7.5e3}},
    /* ALLGATHER */ {kAbsent, {0, 0, 10.0, 7.5e3}},
    /* BRUCK */ {kAbsent, {0, 0, 10.0, 7.5e3}},
    /* PAIRWISE */ {kAbsent, {0, 0, 10.0, 7.5e3}},
    /* TREE */ {kAbsent, {0, 0, 10.0, 7.5e3}},
}};
// The costs of the communicator's link: a table and the factor its bandwidths take (a choice copies no table).
struct Costs {
  const CostTable *table;
  double scale;
};
// SHM's, or NVLink's with the bandwidths scaled to the topology's. Across nodes the model has no costs of the network
// yet: it times the node's link, and only the rings run there.
Costs costs(const coll_gpu_tune_config_t *c) {
  if (c->shm) return {&kShm, 1.0};
  return {&kNvlink, coll_gpu_tune_link_scale(c)};
}
}  // namespace

/* The bandwidths follow the link, the latencies stay: a kernel's flag rounds and fences cost what they cost
 * on any link, and a narrower link moves each byte more slowly. (The topology's ring over PCIe Gen4 x16 moves
 * 24 GB/s, 0.065x NVSwitch's: there the ring's 310 GB/s become 20, about what NCCL's ring moves over such a
 * link.) Links faster than the reference keep its constants: no such machine has been measured. */
double coll_gpu_tune_link_scale(const coll_gpu_tune_config_t *c) {
  if (c->shm || c->net || !(c->link_gbps > 0) || c->link_gbps >= COLL_GPU_TUNE_REF_GBPS) return 1.0;
  return c->link_gbps / COLL_GPU_TUNE_REF_GBPS;
}

/* two-shot: a block per 16 KiB of message. Blocks are latency-bound (each waits for its peers' flags), so
 * more of them pay: on 2 H200, 512 KiB took 21 us with 32 blocks against 33 with 8, 1 MiB 23.5 us with 64
 * against 33 with 16, 2-8 MiB 2-4% less again with 128 than with 64 */
constexpr size_t kTwoshotBlockBytes = 16 << 10;
constexpr int kTwoshotMaxBlocks = 128;  // as measured (see above); the kernels have flags and done words for more
static_assert(kTwoshotMaxBlocks <= 2 * COLL_GPU_MAX_CHANNELS, "two-shot blocks beyond the flags");
/* The 2-rank alltoall's channels, each a sending and a receiving block: 64 channels of 256 or 512 KiB slots
 * took it to 0.69-0.82x NCCL's time from 1 to 256 MiB per block on 2 H200 (760-768 us at 256 MiB); 128 would
 * be 256 blocks, more than an H200 holds at once. */
constexpr int kAlltoallPairChannels = 64;

/* A launch of its own for each one-shot slot of data beyond the first (a call's ~9 us around its kernel). */
constexpr double kLaunchUs = 9.0;

namespace {
// What a call of a shape asks of its link in one algorithm: launches beyond the first, peers beyond the first,
// dependent steps, and the traffic each rank sends, as a multiple of the call's bytes.
struct Pattern {
  double launches, peers, steps, traffic;
};
Pattern pattern(coll_gpu_shape_t shape, coll_gpu_algo_t algo, double n, size_t bytes, size_t ll_bytes) {
  if (algo == COLL_GPU_ALGO_ONESHOT) {
    /* every rank pushes its data to n - 1 peers (a bcast's root n - 1 copies); a move runs a launch per slot of
     * ll_bytes, an allreduce fits one slot only */
    const bool slots = shape != COLL_GPU_SHAPE_ALLREDUCE && ll_bytes > 0 && bytes > ll_bytes;
    return {slots ? (double)((bytes - 1) / ll_bytes) : 0, 0, 0, n - 1};
  }
  switch (shape) {
    case COLL_GPU_SHAPE_ALLREDUCE:
      if (algo == COLL_GPU_ALGO_TWOSHOT) return {0, n - 2, 0, 2 * (n - 1) / n}; /* 2 (n - 1) / n of the data out */
      /* the ring: 2 (n - 1) steps to fill the pipeline, 2 (n - 1) / n of the data out; the chain: a reduce and a
       * bcast, each n - 1 hops and the buffer over every link */
      if (algo == COLL_GPU_ALGO_RING) return {0, 0, 2 * (n - 1), 2 * (n - 1) / n};
      if (algo == COLL_GPU_ALGO_ALLGATHER) return {0, 0, n - 1, n - 1}; /* a ring allgather of the whole inputs */
      return {0, 0, 2 * (n - 1), 2}; /* the chain, and the tree until the network is timed */
    case COLL_GPU_SHAPE_CHAIN:       /* bcast, reduce: a chain of n - 1 hops; every link carries the buffer once */
      return {0, 0, n - 1, 1};
    case COLL_GPU_SHAPE_BLOCKS: /* allgather, reduce-scatter: n - 1 steps; every link carries n - 1 blocks */
      if (algo == COLL_GPU_ALGO_ALLGATHER) return {0, 0, n - 1, (n - 1) * n}; /* the whole inputs, n blocks each */
      return {0, 0, n - 1, n - 1};
    case COLL_GPU_SHAPE_PAIRS: /* alltoall: 2 ranks: one ring step each way; more: pairwise, every peer at once */
      /* the pairwise kernel has the ring's constants until a machine with more than 2 GPUs times it: on one
       * H100 with 3-8 ranks simulated it took 8.5-13 us at 64 KiB per block (coll_gpu_kernel_bench -C
       * alltoall -a ring -n N), about the ring's step */
      return {0, 0, 1, n - 1};
  }
  return {0, 0, 0, 0};
}

constexpr double kNever = 1e30;  // the time of what the table has no entry for

// A call's modelled time in the entry for algo and proto (both in range) of k's table, for a collective of `shape`
// whose one-shot slots hold ll_bytes.
double time_us(const Costs &k, coll_gpu_shape_t shape, size_t ll_bytes, coll_gpu_algo_t algo, coll_gpu_proto_t proto,
               int nranks, size_t bytes) {
  const Cost &e = k.table->at[algo][proto];
  if (!(e.bw > 0)) return kNever;
  const Pattern w = pattern(shape, algo, nranks, bytes, ll_bytes);
  return e.lat_us + w.launches * kLaunchUs + w.peers * e.peer_us + w.steps * e.step_us +
         w.traffic * (double)bytes / (e.bw * k.scale);
}

// Whether the direct algorithms run: they write into every peer's scratch, which holds their parts on one node of at
// most COLL_GPU_MAX_DIRECT ranks.
bool direct(const coll_gpu_tune_config_t *c, int nranks) { return !c->net && nranks <= COLL_GPU_MAX_DIRECT; }

// Whether an allgather across nodes has the point-to-point connections Bruck's and the pairwise one run over: 3 to
// COLL_GPU_MAX_DIRECT ranks have them.
bool over_p2p(const coll_gpu_tune_config_t *c, int nranks) {
  return c->net && nranks >= 3 && nranks <= COLL_GPU_MAX_DIRECT;
}

// coll_gpu_tune_fits for the collective of row `info`.
bool fits(const coll_gpu_tune_config_t *c, const coll_gpu_coll_info_t &info, coll_gpu_algo_t algo, int nranks,
          size_t bytes) {
  if (!coll_gpu_info_has(&info, algo)) return false; /* staged is the glue's, not an algorithm of the engine */
  switch (algo) {
    case COLL_GPU_ALGO_ONESHOT: /* an allreduce in one slot, the others in slots of 16 bytes at least (pattern) */
      return direct(c, nranks) &&
             (info.shape == COLL_GPU_SHAPE_ALLREDUCE ? bytes <= c->oneshot_max_bytes : c->oneshot_max_bytes >= 16);
    case COLL_GPU_ALGO_TWOSHOT:
      return direct(c, nranks) && bytes <= c->twoshot_max_bytes;
    case COLL_GPU_ALGO_CHAIN:
      return c->net;
    case COLL_GPU_ALGO_ALLGATHER: /* every rank's input in the engine's memory for the gathered blocks: a
                                   * reduce-scatter's of n blocks (bytes: its largest, with counts) */
      return c->net && bytes <= COLL_GPU_TUNE_GATHER_BYTES / (size_t)nranks /
                                    (info.shape == COLL_GPU_SHAPE_BLOCKS ? (size_t)nranks : 1);
    case COLL_GPU_ALGO_BRUCK:
      return over_p2p(c, nranks);
    case COLL_GPU_ALGO_PAIRWISE: /* and its 2 (n - 1) blocks on the GPU at once (kernels/move.cu) */
      return over_p2p(c, nranks) && (c->max_blocks <= 0 || 2 * (nranks - 1) <= c->max_blocks);
    case COLL_GPU_ALGO_TREE: /* and its four blocks at once (kernels/allreduce_tree.cuh) */
      return over_p2p(c, nranks) && (c->max_blocks <= 0 || 2 * COLL_GPU_TREES <= c->max_blocks);
    default: /* the ring */
      return true;
  }
}
}  // namespace

double coll_gpu_tune_time_us(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, coll_gpu_algo_t algo,
                             coll_gpu_proto_t proto, int nranks, size_t bytes) {
  const coll_gpu_coll_info_t *info = coll_gpu_coll_info(coll);
  if (info == nullptr || algo < 0 || algo >= COLL_GPU_NALGOS || proto < 0 || proto >= COLL_GPU_NPROTOS) return kNever;
  return time_us(costs(c), info->shape, c->oneshot_max_bytes, algo, proto, nranks, bytes);
}

int coll_gpu_tune_fits(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, coll_gpu_algo_t algo, int nranks,
                       size_t bytes) {
  const coll_gpu_coll_info_t *info = coll_gpu_coll_info(coll);
  return info != nullptr && fits(c, *info, algo, nranks, bytes);
}

/* Over the network proxy a ring channel's step is a message of the proxy thread that owns the channel,
 * and every channel adds a step to each ring step's wait: a channel per 4 KiB of a ring step. Measured on
 * one H200 shared by 2 ranks (MPS), each its own virtual node, allreduce over UCX's tcp
 * (coll_gpu_allreduce_bench, 300 calls a size): with 8 channels every size from 128 B to 1 MiB took
 * 1.2-1.9 ms (16 proxy threads spinning on 16 cores), with 4 threads 60-73 us up to 64 KiB; one channel
 * took 43-49 us up to 8 KiB (4 KiB steps) and 125 at 16 KiB, two 44-48 us up to 16 KiB and 148 at 32 KiB:
 * a step of 8 KiB or more cost ~80 us more over tcp (UCX's rendezvous, which the proxy now asks for from
 * 64 KiB only: proxy/net_ucx.cc). With the rendezvous moved, 8 channels of 4-32 KiB steps took allreduce
 * of 64 KiB to 512 KiB in 78-124 us against NCCL's 174-371 on that machine. */
constexpr size_t kNetStepBytes = 4 << 10;

/* Rings that carry more than kWideRingBytes over each link in one call run at most kWideRingChannels. On 4
 * H200 (coll_gpu_allreduce_bench -N, 4 ranks), 128 channels lost bandwidth once a call carried 768 MiB a
 * link: allgather and reduce-scatter of 256 MiB blocks took 3,036-3,872 us on 128 channels against 2,474-
 * 2,497 on 64, allreduce of 512 MiB 3,835 against 2,496 and of 1 GiB 8,542 against 4,852; at 384 MiB a link
 * (128 MiB blocks, 256 MiB allreduce) 128 channels were still 2-5% faster, and so at 2 ranks with 512 MiB
 * a link (allgather of 512 MiB blocks, 1,657 against 1,729 us). Why many channels lose there is not known;
 * the bound follows the measurements. */
constexpr size_t kWideRingBytes = (size_t)512 << 20;
constexpr int kWideRingChannels = 64;

namespace {

// Blocks of one call: the ring runs every channel it has FIFOs for (over the network proxy, a channel per
// kNetStepBytes of `step` bytes, the data of one ring step; inside a node at most kWideRingChannels where
// each link carries more than kWideRingBytes, `link` bytes); two-shot one block per slice of `bytes`.
int channels(const coll_gpu_tune_config_t *c, coll_gpu_algo_t algo, size_t bytes, size_t step, size_t link) {
  int most = algo == COLL_GPU_ALGO_RING ? c->max_channels : kTwoshotMaxBlocks;
  if (c->max_blocks > 0 && most > c->max_blocks) most = c->max_blocks;
  if (c->nchannels > 0) return c->nchannels < most ? c->nchannels : most;
  if (algo == COLL_GPU_ALGO_RING && c->net) {
    const size_t want = step > kNetStepBytes ? (step + kNetStepBytes - 1) / kNetStepBytes : 1;
    return want < (size_t)most ? (int)want : most;
  }
  if (algo == COLL_GPU_ALGO_RING) return link > kWideRingBytes && most > kWideRingChannels ? kWideRingChannels : most;
  size_t want = (bytes + kTwoshotBlockBytes - 1) / kTwoshotBlockBytes;
  if (want < 1) want = 1;
  return want < (size_t)most ? (int)want : most;
}

/* Over the network the ring collectives in which every rank sends and receives at each step (allreduce,
 * allgather, reduce-scatter) take at most a channel per proxy thread while a ring step is below
 * kNetWideStepBytes (1 MiB a channel at 16); from there every channel. Across 2 hosts x 2 GPUs of the
 * mini-cluster (4 H200, 8 proxy threads a rank, both in one run), 8 channels against 16 took from 64 KiB to
 * 2 MiB allgather 0.75-0.99x the time, allreduce 0.68-0.95x and reduce-scatter 0.81-1.04x: a thread that
 * moves two channels sends and receives twice as many steps, of half the size. Allgather of 4 and 8 MiB
 * blocks took 0.80 and 0.92x on 8, reduce-scatter 1.03 and 1.07x; from 16 MiB steps 16 channels were
 * faster: allgather 1.02-1.03x the time on 8, reduce-scatter 1.04-1.16x, allreduce of 64 MiB 1.03x
 * (docs/benchmarks.md).
 *
 * The chains of bcast and reduce, whose steps are sized apart from the channels (net_chain_chunk), take the
 * same bound up to kNetNarrowChainBytes only. On the mini-cluster's 2 hosts x 2 (4 H200, two runs of each),
 * 8 channels took bcast and reduce of 64 to 256 KiB 0.86-0.96x the time of 16 (bcast of 64 KiB 58-61 us
 * against 69; the means of the two runs), from 512 KiB to 2 MiB 0.93-1.02x; at 4 MiB the runs disagreed
 * (bcast 0.88 and 1.20x). Earlier, runs of 8 against 16 had disagreed from 256 KiB to 2 MiB (bcast
 * 1.08-1.27x the time in one, 0.73-0.93x in another). */
constexpr size_t kNetWideStepBytes = (size_t)16 << 20;
constexpr size_t kNetNarrowChainBytes = (size_t)256 << 10;
int net_ring_bound(const coll_gpu_tune_config_t *c, int nchannels, size_t step) {
  if (!c->net || c->nchannels > 0 || c->net_ring_channels <= 0 || step >= kNetWideStepBytes) return nchannels;
  return nchannels < c->net_ring_channels ? nchannels : c->net_ring_channels;
}

}  // namespace

/* Across nodes an allreduce up to kNetChainBytes runs as a reduce to rank 0 and a bcast from it along their chains
 * (CHAIN): between 2 nodes two hops over the network in all, where each of the ring's 2 (n - 1) steps waits on one,
 * but each chain's latency is all its hops in a row. Across 2 hosts x 2 GPUs of the mini-cluster (4 H100, one
 * machine, two runs of each alternated, coll_gpu_allreduce_algorithm=ring against the chain; docs/benchmarks.md)
 * the chain took 0.90x the ring's time at 32 KiB, 0.96x at 64 KiB, 1.00x at 128 KiB, 0.94x at 256 KiB, 1.02x at
 * 512 KiB and 1.21x at 1 MiB. (The sums of separate bcast and reduce runs had promised half the ring's time: a
 * bcast's or reduce's calls back to back overlap, since only the root waits for the data, so their time a call is
 * below a chain's latency.) */
constexpr size_t kNetChainBytes = (size_t)256 << 10;

/* Across nodes of 3 to COLL_GPU_MAX_DIRECT ranks an allreduce up to kNetTreeBytes that the allgather of the inputs
 * does not take runs as NCCL's double binary tree over the nodes, a chain inside each (TREE): each half of the buffer
 * reduced up one tree and sent down it, so about 2 (chain + log2 nodes) hops in a row where the chain's reduce and
 * bcast take 2 (n - 1), the halves side by side. On one H200 over virtual nodes (the ranks sharing it under MPS, the
 * proxy's sockets on loopback), forced against the chain, four rounds of each alternated (coll_gpu_allreduce_bench,
 * 200 calls a size; docs/benchmarks.md): 3 nodes of 1 rank 0.85, 0.63, 0.88 and 0.92x the chain's time at 16, 32, 64
 * and 128 KiB, 1.15x at 256 KiB; 4 of 1 0.84, 0.67, 0.83, 0.86 and 0.93x; 2 of 2 0.79, 0.72, 0.81, 0.88 and 1.04x;
 * two rounds at 8 ranks, 8 of 1, 4 of 2 and 2 of 4, 0.41-0.85x from 8 to 256 KiB.
 * Below, the allgather takes most of those calls: forced against it over 3 nodes of 1 rank, two rounds, the tree took
 * 1.06-1.43x its time from 8 B to 16 KiB, over 4 of 1 0.94-2.05x. */
constexpr size_t kNetTreeBytes = (size_t)128 << 10;

/* Smaller allreduces across nodes, where every rank's input together takes at most COLL_GPU_TUNE_GATHER_BYTES, run
 * as a ring allgather of the inputs and a reduction on each rank (ALLGATHER): n - 1 ring steps, where the chain's
 * reduce and bcast each take their n - 1 hops in a row, and between 2 nodes of one rank one hop over the network
 * instead of two. On one H200 over virtual nodes (the hops between them over UCX's shared memory), the ranks sharing
 * it under MPS, forced against the chain, 4 rounds of each alternated (coll_gpu_allreduce_bench -N, 300 calls a
 * size; docs/benchmarks.md): 2 nodes of 1 rank 0.65-0.69x the chain's time from 8 B to 32 KiB (8 B: 24.0 against
 * 34.6 us), 2 + 1 ranks 0.75-0.77x from 8 B to 16 KiB, 2 x 2 0.70-0.78x from 8 B to 16 KiB (8 B: 37.6 against
 * 50.3). It won at every size that fits, the largest included. */
/* Across nodes an allgather of 3 to COLL_GPU_MAX_DIRECT ranks with blocks up to kNetPairwiseBytes first ran as Bruck's
 * (BRUCK) where it crosses the network fewer times in a row than the ring (few_hops_pay): ceil(log2 n) steps over the
 * point-to-point connections, each to a rank 2^k places away and each waiting on a hop over the network, where the
 * block that travels furthest round the ring crosses min(nodes, n - 1) of them (and its other hops inside nodes). So
 * 4 nodes of 1 rank: 2 hops against 3; 8 of 1: 3 against 7; 4 of 2: 3 against 4; but 3 of 1 and 2 of 2 take 2
 * either way. An allreduce's allgather of its inputs (ALLGATHER) takes it too. On one H200 over virtual nodes (the
 * ranks sharing it under MPS, the proxy's sockets on loopback), forced against the ring, two rounds of each alternated
 * (coll_gpu_allreduce_bench -C allgather; docs/benchmarks.md): 4 nodes of 1 rank 0.78-0.90x the ring's time from 8 B
 * to 4 KiB, 0.95x at 8 KiB, 0.60-0.71x at 16 and 32 KiB, 0.87x at 64 KiB and 1.59x at 128 KiB; 4 nodes of 2 ranks
 * 0.80-0.92x up to 4 KiB, 0.99x at 8 KiB, 0.85-0.86x at 16 and 32 KiB, 1.19x at 64 KiB; 3 nodes of 1 1.01-1.14x and 2
 * of 2 0.90-1.08x up to 4 KiB, 1.26x and more from 8 KiB (where it does not pay). Its one block moves a step's blocks
 * slot by slot, where the ring's channels move theirs side by side: so up to 32 KiB a block.
 *
 * Since, the rule takes the pairwise allgather (PAIRWISE) there instead: one step, every rank sending its block to
 * every peer at once over those connections, a sending and a receiving block per peer. Forced against Bruck's in the
 * same setup, two rounds of each alternated: 4 nodes of 1 rank 0.82-0.93x Bruck's time at every size from 8 B to 64
 * KiB (8 B: 58.1 against 69.4 us, NCCL 59.0 in the same runs), 4 nodes of 2 0.79-0.91x from 8 to 256 B, 1.04x at 512 B,
 * 0.63-0.96x from 1 to 64 KiB but 1.04x at 4 KiB, 8 nodes of 1 0.74-1.01x but 1.13x at 8 B (where 8 ranks and their
 * proxies share 16 cores, and one round of the pairwise took 205 us, the other 104). Where Bruck's
 * did not pay, forced against the ring, two rounds of each alternated: 3 nodes of 1 rank 0.74-0.90x the ring's time at
 * every size from 8 B to 16 KiB (8 B: 36.4 against 47.6 us, NCCL 42.2), 2 nodes of 2 0.88-0.95x up to 4 KiB but 1.00x
 * at 1 KiB, 1.08x at 8 KiB and 1.02x at 16 KiB. So the rule takes it up to kNetPairwiseAnyBytes a block wherever it
 * fits, and up to kNetPairwiseBytes where the ring's furthest block crosses the network more than ceil(log2 n) times
 * in a row (few_hops_pay). */
constexpr size_t kNetPairwiseBytes = (size_t)32 << 10;
constexpr size_t kNetPairwiseAnyBytes = (size_t)4 << 10;

/* A reduce-scatter across nodes whose inputs take at most kNetGatherInputBytes runs as an allgather of the whole
 * inputs and each rank's reduction of its block of them (ALLGATHER), where the rule above takes that allgather: then
 * fewer hops over the network in a row, each moving more inputs, where the ring's n - 1 move a block each; then a
 * kernel more on the stream. With that allgather Bruck's, on one H200 over virtual nodes (the ranks sharing it under
 * MPS, the proxy's sockets on loopback), forced against the ring, two rounds of each alternated
 * (coll_gpu_allreduce_bench -C reduce_scatter; docs/benchmarks.md): 4 nodes of 1 rank 0.90-0.99x the ring's time from 8
 * to 256 B a block (inputs up to 1 KiB; 8 B: 63.8 against 70.5 us), 1.04-1.05x at 512 B and 1 KiB, 1.17-1.31x at 2 and
 * 4 KiB; 8 nodes of 1 0.65-0.73x from 8 to 128 B (8 B: 141 against 194 us), 0.93x at 256 B, 1.09-1.16x at 512 B and 1
 * KiB; 8 nodes of 2 ranks 0.91-0.99x from 8 to 128 B, 1.10-1.32x from 256 B to 1 KiB. (Above those sizes it does not
 * fit, and both runs were the ring's: 1.12-1.13x at 4 x 1, the spread of the setup.) */
constexpr size_t kNetGatherInputBytes = (size_t)1 << 10;

namespace {
// Whether the ring's furthest block crosses the network more than ceil(log2 n) times in a row on these nodes, where
// Bruck's allgather took less time than the ring and the pairwise less than Bruck's (above).
bool few_hops_pay(const coll_gpu_tune_config_t *c, int nranks) {
  int steps = 0;
  while ((1 << steps) < nranks) ++steps;
  return steps < (c->nodes < nranks - 1 ? c->nodes : nranks - 1);
}

// Whether the pairwise allgather of `bytes` a block pays (above).
bool pairwise_pays(const coll_gpu_tune_config_t *c, int nranks, size_t bytes) {
  return bytes <= kNetPairwiseAnyBytes || few_hops_pay(c, nranks);
}

// Whether a reduce-scatter of `bytes` a block as an allgather of the whole inputs (ALLGATHER) pays (above): inputs of
// at most kNetGatherInputBytes, on the nodes where it was measured (few_hops_pay).
bool gather_pays(const coll_gpu_tune_config_t *c, int nranks, size_t bytes) {
  return over_p2p(c, nranks) && bytes <= kNetGatherInputBytes / (size_t)nranks && few_hops_pay(c, nranks);
}

/* Rules built in, written as the user's are, where measurements overrule the model; these hold across nodes, each
 * where it fits and, where it names one, where its test says it pays. The model times the chain as its reduce and
 * bcast over the node's link, so it never beats the ring there, but across 2 hosts x 2 it took 0.90-1.00x the ring's
 * time up to kNetChainBytes (above); the allgather took less than the chain wherever it fits, the tree less than the
 * chain up to kNetTreeBytes where it fits and the allgather does not, the pairwise allgather less than the ring where
 * pairwise_pays, and a reduce-scatter's allgather of its inputs less than its ring where gather_pays (above). */
struct NetRule {
  coll_gpu_tune_rule_t rule;
  bool (*pays)(const coll_gpu_tune_config_t *c, int nranks, size_t bytes); /* nullptr: wherever it fits */
};
constexpr NetRule kNetRules[] = {
    {{COLL_GPU_COLL_ALLGATHER, 0, kNetPairwiseBytes, COLL_GPU_ALGO_PAIRWISE}, pairwise_pays},
    {{COLL_GPU_COLL_ALLREDUCE, 0, COLL_GPU_TUNE_GATHER_BYTES, COLL_GPU_ALGO_ALLGATHER}, nullptr},
    {{COLL_GPU_COLL_REDUCE_SCATTER, 0, COLL_GPU_TUNE_GATHER_BYTES, COLL_GPU_ALGO_ALLGATHER}, gather_pays},
    {{COLL_GPU_COLL_ALLREDUCE, 0, kNetTreeBytes, COLL_GPU_ALGO_TREE}, nullptr},
    {{COLL_GPU_COLL_ALLREDUCE, 0, kNetChainBytes, COLL_GPU_ALGO_CHAIN}, nullptr}};

// What ruled answers where no rule takes the call.
constexpr int kNone = -1;

// Whether rule r matches a call of `coll` of `bytes` and fits it.
bool matches(const coll_gpu_tune_config_t *c, const coll_gpu_tune_rule_t &r, coll_gpu_coll_t coll,
             const coll_gpu_coll_info_t &info, int nranks, size_t bytes) {
  return r.coll == (int)coll && bytes >= r.from && bytes <= r.to &&
         fits(c, info, (coll_gpu_algo_t)r.algo, nranks, bytes);
}

// The algorithm of the first of the user's `rules` that matches the call; kNone: none.
int ruled(const coll_gpu_tune_config_t *c, const coll_gpu_tune_rule_t *rules, int nrules, coll_gpu_coll_t coll,
          const coll_gpu_coll_info_t &info, int nranks, size_t bytes) {
  for (int i = 0; i < nrules; ++i)
    if (matches(c, rules[i], coll, info, nranks, bytes)) return rules[i].algo;
  return kNone;
}

// The algorithm of the first rule built in that matches the call and pays there; kNone: none.
int net_ruled(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, const coll_gpu_coll_info_t &info, int nranks,
              size_t bytes) {
  for (const NetRule &n : kNetRules)
    if (matches(c, n.rule, coll, info, nranks, bytes) && (n.pays == nullptr || n.pays(c, nranks, bytes)))
      return n.rule.algo;
  return kNone;
}

// The protocol of algo that takes the least time, among the collective's forced protocol first; kNone: none.
int fastest_proto(const Costs &k, const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, coll_gpu_shape_t shape,
                  coll_gpu_algo_t algo, int nranks, size_t bytes, bool forced_only, double *best_t) {
  int best = kNone;
  for (int p = 0; p < COLL_GPU_NPROTOS; ++p) {
    if (forced_only && c->protocol[coll] >= 0 && p != c->protocol[coll]) continue;
    const double time = time_us(k, shape, c->oneshot_max_bytes, algo, (coll_gpu_proto_t)p, nranks, bytes);
    if (time < *best_t) { /* kNever, what the table has no entry for, never is */
      *best_t = time;
      best = p;
    }
  }
  return best;
}

/* The one choice of algorithm and protocol: the algorithm the config forces for the collective where it fits, else
 * the first of the user's rules that takes the call, else the first of the built-in ones, else the least time in the
 * table among the pairs that fit, first among those of the collective's forced protocol; an algorithm given
 * runs its fastest protocol, the forced one where it has it. */
void pick(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, const coll_gpu_coll_info_t &info, int nranks,
          size_t bytes, coll_gpu_algo_t *algo, coll_gpu_proto_t *proto) {
  const Costs k = costs(c);
  int given = c->algorithm[coll];
  if (given < 0 || !fits(c, info, (coll_gpu_algo_t)given, nranks, bytes))
    given = ruled(c, c->rules, c->nrules, coll, info, nranks, bytes);
  if (given < 0 && c->net) given = net_ruled(c, coll, info, nranks, bytes);
  *algo = COLL_GPU_ALGO_RING;
  *proto = COLL_GPU_PROTO_SIMPLE;
  double best_t = kNever;
  for (int pass = 0; pass < 2 && best_t >= kNever; ++pass)
    for (int a = 0; a < COLL_GPU_NALGOS; ++a) {
      if (given >= 0 ? a != given : !fits(c, info, (coll_gpu_algo_t)a, nranks, bytes)) continue;
      const int p = fastest_proto(k, c, coll, info.shape, (coll_gpu_algo_t)a, nranks, bytes, pass == 0, &best_t);
      if (p != kNone) {
        *algo = (coll_gpu_algo_t)a;
        *proto = (coll_gpu_proto_t)p;
      }
    }
}

size_t net_chain_chunk(size_t part);  // below

// An allreduce's channels and ring step for the algorithm chosen.
coll_gpu_choice_t size_allreduce(const coll_gpu_tune_config_t *c, coll_gpu_algo_t algo, coll_gpu_proto_t proto,
                                 int nranks, size_t bytes) {
  if (coll_gpu_algo_composed(algo)) { /* their ring calls choose their channels */
    const coll_gpu_choice_t composed = {algo, proto, 0, 0};
    return composed;
  }
  /* a ring step moves a rank's share of the buffer; each link carries 2 (n - 1) shares */
  const size_t share = bytes / (size_t)nranks;
  coll_gpu_choice_t ch = {algo, proto, channels(c, algo, bytes, share, 2 * (nranks - 1) * share), 0};
  if (algo == COLL_GPU_ALGO_RING) {
    ch.nchannels = net_ring_bound(c, ch.nchannels, share);
    ch.chunk = c->ring_chunk_bytes;
  }
  if (algo == COLL_GPU_ALGO_TREE) { /* an up and a down block a tree; its half in the chains' steps */
    ch.nchannels = 2 * COLL_GPU_TREES;
    ch.chunk = c->ring_chunk_bytes > 0 ? c->ring_chunk_bytes : net_chain_chunk(bytes / COLL_GPU_TREES);
  }
  return ch;
}
}  // namespace

namespace {
/* Bytes per ring step (0: a whole FIFO slot, 512 KiB by default). Measured on 2 H200 (NVLS off,
 * coll_gpu_allreduce_bench beside NCCL, 256 KiB-256 MiB). The chains of bcast and reduce pipeline over 2
 * ranks only as deep as a channel's part has steps: with coll_gpu_ring_chunk_bytes 64, 128, 256 and 512
 * KiB on 64 channels, 64 KiB was fastest from 8 MiB up (64 MiB: bcast 223 us against 256 with whole
 * slots, NCCL 220; reduce 224 against 278, NCCL 207; 256 MiB: 825/858 and 836/895) and within noise
 * below; on 32 channels every step size was 10-40% slower. The 2-rank alltoall (a sending and a receiving
 * block per channel, 64 channels) took 0.79-0.86x NCCL's time from 8 to 64 MiB per block with 128 KiB
 * steps against 0.83-1.07x with whole slots, and 1.01x against 0.90x at 256 MiB: 128 KiB steps while a
 * channel's part is below 2 MiB. Allreduce, allgather and reduce-scatter were fastest with whole slots
 * (coll_gpu_ring_slot_bytes 64 KiB against 512 KiB at 64 MiB: 299 against 269 us, 343/286, 359/301).
 * Those runs had every pack on the stack (one load in flight per thread, kernels/primitives.cuh). Since,
 * with a posting warp per block too, 64, 128, 192 and 256 KiB steps for bcast and reduce came within
 * 2-3% of each other from 32 MiB up (256 MiB: bcast 771, 767, 766, 768 us; reduce 780, 774, 775, 781;
 * NCCL 754-779 in the same runs), so the 64 KiB stay. Whole slots are 256 KiB since the channels went to
 * 128 (coll_gpu_params.c has that run).
 *
 * Over the network proxy a step is a message of its own (a send and a receive by the proxy threads, a poll
 * of host memory by each kernel), so the chains' steps follow each channel's part instead: 32 KiB while a
 * part is at most 128 KiB (a few steps to pipeline through the hops), 128 KiB up to 1 MiB, 256 KiB beyond.
 * Across 2 hosts x 2 GPUs of the mini-cluster (coll_gpu_ring_chunk_bytes against the 64 KiB, one run each,
 * 16 channels): on 4 H100, 32 KiB steps took bcast of 512 KiB to 2 MiB 0.76-0.88x the time (NCCL's:
 * 1.05-1.17x -> 0.89-0.92x) and reduce 0.89-1.04x; on 4 H200, 128 KiB took reduce of 4-16 MiB 0.50-0.80x
 * the time and bcast 0.84-1.04x, 256 KiB took reduce of 32 and 64 MiB 0.62 and 0.50x and bcast 0.94 and
 * 0.96x. 8 KiB steps were slower from 1 MiB, 16 KiB from 2 MiB. The rule against the 64 KiB, in one run
 * on 4 H200: bcast of 1-64 MiB 0.86-0.99x the time, reduce 0.74-0.99x (docs/benchmarks.md). */
size_t net_chain_chunk(size_t part) {
  if (part <= ((size_t)128 << 10)) return 32 << 10;
  if (part <= ((size_t)1 << 20)) return 128 << 10;
  return 256 << 10;
}

size_t ring_chunk(coll_gpu_shape_t shape, int nranks, size_t bytes, int nchannels, int net) {
  if (shape == COLL_GPU_SHAPE_CHAIN) return net ? net_chain_chunk(bytes / (size_t)nchannels) : 64 << 10;
  if (shape == COLL_GPU_SHAPE_PAIRS && nranks == 2 && bytes / (size_t)nchannels < ((size_t)2 << 20)) return 128 << 10;
  return 0;
}

// The channels and ring step of a collective other than allreduce, for the algorithm chosen.
coll_gpu_choice_t size_move(const coll_gpu_tune_config_t *c, coll_gpu_shape_t shape, coll_gpu_algo_t algo,
                            coll_gpu_proto_t proto, int nranks, size_t bytes) {
  coll_gpu_choice_t ch = {algo, proto, 0, 0};
  if (algo == COLL_GPU_ALGO_BRUCK) ch.nchannels = 1; /* one block, one connection to each peer (kernels/move.cu) */
  if (algo == COLL_GPU_ALGO_PAIRWISE) ch.nchannels = nranks - 1; /* one connection to each peer, its two blocks */
  if (algo != COLL_GPU_ALGO_RING) return ch;
  /* a step: a block, or a chunk of the chain's buffer; each link carries n - 1 blocks, or the buffer (the
   * alltoall's pairs, not timed that wide, keep their channels) */
  const bool blocks = shape == COLL_GPU_SHAPE_BLOCKS;
  const size_t link = shape == COLL_GPU_SHAPE_PAIRS ? 0 : blocks ? (size_t)(nranks - 1) * bytes : bytes;
  ch.nchannels = channels(c, algo, bytes, bytes, link);
  if (blocks) ch.nchannels = net_ring_bound(c, ch.nchannels, bytes);
  if (shape == COLL_GPU_SHAPE_CHAIN && bytes <= kNetNarrowChainBytes)
    ch.nchannels = net_ring_bound(c, ch.nchannels, bytes);
  /* alltoall runs a sending and a receiving block per channel (2 ranks) or per connection (pairwise: at
   * most as many connections as channels, kernels/move.cu), the senders first, and a sender waits for the
   * peer's receiver of its channel or connection: every GPU must hold more blocks at once than there are
   * channels (one ring block per multiprocessor at the worst), and where ranks share a GPU all their
   * blocks */
  if (shape == COLL_GPU_SHAPE_PAIRS) {
    if (nranks == 2 && ch.nchannels > kAlltoallPairChannels) ch.nchannels = kAlltoallPairChannels;
    if (c->min_sms > 1 && ch.nchannels >= c->min_sms) ch.nchannels = c->min_sms - 1;
    if (c->max_blocks > 0 && 2 * ch.nchannels > c->max_blocks) ch.nchannels = c->max_blocks > 1 ? c->max_blocks / 2 : 1;
  }
  ch.chunk = c->ring_chunk_bytes > 0 ? c->ring_chunk_bytes : ring_chunk(shape, nranks, bytes, ch.nchannels, c->net);
  return ch;
}
}  // namespace

coll_gpu_choice_t coll_gpu_tune_choose(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, int nranks,
                                       size_t bytes) {
  const coll_gpu_coll_info_t &info = *coll_gpu_coll_info(coll); /* the row, looked up once a choice */
  const coll_gpu_shape_t shape = info.shape;
  coll_gpu_algo_t algo;
  coll_gpu_proto_t proto;
  pick(c, coll, info, nranks, bytes, &algo, &proto);
  return shape == COLL_GPU_SHAPE_ALLREDUCE ? size_allreduce(c, algo, proto, nranks, bytes)
                                           : size_move(c, shape, algo, proto, nranks, bytes);
}

namespace {
// A byte count of a rule, [p, end): digits, then k, m or g (either case); false where it is not one.
bool rule_bytes(const char *p, const char *end, size_t *v) {
  if (p == end || *p < '0' || *p > '9') return false;
  unsigned long long x = 0;
  for (; p < end && *p >= '0' && *p <= '9'; ++p) {
    if (x > (~0ull - 9) / 10) return false;
    x = x * 10 + (unsigned long long)(*p - '0');
  }
  int shift = 0;
  if (p < end) {
    const char u = (char)(*p | 0x20);
    shift = u == 'k' ? 10 : u == 'm' ? 20 : u == 'g' ? 30 : -1;
    if (shift < 0 || ++p != end || x > (~0ull >> shift)) return false;
  }
  *v = (size_t)(x << shift);
  return true;
}

// The index of the name of [p, end) among names(k) for k below count; kNone: none.
int rule_name(const char *p, const char *end, int count, const char *(*names)(int)) {
  for (int k = 0; k < count; ++k) {
    const char *name = names(k);
    if (strlen(name) == (size_t)(end - p) && strncmp(p, name, (size_t)(end - p)) == 0) return k;
  }
  return kNone;
}
const char *coll_name_of(int k) { return coll_gpu_coll_name((coll_gpu_coll_t)k); }
const char *algo_name_of(int k) { return coll_gpu_algo_name((coll_gpu_algo_t)k); }

}  // namespace

coll_gpu_status_t coll_gpu_tune_parse_rules(const char *text, coll_gpu_tune_rule_t rules[COLL_GPU_TUNE_MAX_RULES],
                                            int *n, char *why, size_t len) {
  *n = 0;
  for (const char *s = text; s != nullptr && *s != '\0';) {
    const char *end = s + strcspn(s, ",");
    const int entry = (int)(end - s);
    const char *c1 = (const char *)memchr(s, ':', (size_t)(end - s));
    const char *c2 = c1 != nullptr ? (const char *)memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : nullptr;
    const char *dash = c2 != nullptr ? (const char *)memchr(c1 + 1, '-', (size_t)(c2 - c1 - 1)) : nullptr;
    if (*n == COLL_GPU_TUNE_MAX_RULES) {
      coll_gpu_say(why, len, "more than %d rules", COLL_GPU_TUNE_MAX_RULES);
      return COLL_GPU_INVALID_INPUT;
    }
    if (c2 == nullptr || dash == nullptr) {
      coll_gpu_say(why, len, "\"%.*s\" is not COLL:FROM-TO:ALGO", entry, s);
      return COLL_GPU_INVALID_INPUT;
    }
    coll_gpu_tune_rule_t &r = rules[*n];
    r.coll = rule_name(s, c1, COLL_GPU_NCOLLS, coll_name_of);
    r.algo = rule_name(c2 + 1, end, COLL_GPU_NALGOS, algo_name_of);
    r.to = SIZE_MAX;
    char names[128];
    if (r.coll < 0) {
      coll_gpu_say(why, len, "\"%.*s\": %.*s is not %s", entry, s, (int)(c1 - s), s,
                   coll_gpu_coll_names((1u << COLL_GPU_NCOLLS) - 1, " or ", names, sizeof(names)));
    } else if (!rule_bytes(c1 + 1, dash, &r.from) || (dash + 1 < c2 && !rule_bytes(dash + 1, c2, &r.to))) {
      coll_gpu_say(why, len, "\"%.*s\": %.*s is not FROM-TO or FROM- in bytes (k, m, g allowed)", entry, s,
                   (int)(c2 - c1 - 1), c1 + 1);
    } else if (r.from > r.to) {
      coll_gpu_say(why, len, "\"%.*s\": FROM is above TO", entry, s);
    } else if (!coll_gpu_coll_has((coll_gpu_coll_t)r.coll, (coll_gpu_algo_t)r.algo)) {
      coll_gpu_say(why, len, "\"%.*s\": %s has no algorithm %.*s (%s)", entry, s, coll_name_of(r.coll),
                   (int)(end - c2 - 1), c2 + 1, coll_gpu_algo_names((coll_gpu_coll_t)r.coll, names, sizeof(names)));
    } else {
      ++*n;
      s = end;
      if (*s == ',' && *++s == '\0') {
        coll_gpu_say(why, len, "a comma at the end");
        return COLL_GPU_INVALID_INPUT;
      }
      continue;
    }
    return COLL_GPU_INVALID_INPUT;
  }
  return COLL_GPU_SUCCESS;
}

/* The ring FIFOs first give up slot bytes: on 2 H200 at 256 MiB, 128 channels of 256 KiB and of 512 KiB
 * slots took the same time within 1%, 64 channels of 512 KiB 3-7% longer (coll_gpu_params.c). */
constexpr size_t kFitSlotBytes = 64 << 10;
constexpr size_t kSlotAlign = 4 << 10;

int coll_gpu_tune_fit_layout(coll_gpu_scratch_layout_t *l, size_t most) {
  if (most == 0 || coll_gpu_scratch_bytes(l) <= most) return 1;
  coll_gpu_scratch_layout_t rest = *l;
  rest.nchannels = 0;
  const size_t fixed = coll_gpu_scratch_bytes(&rest);
  const size_t per_slot = COLL_GPU_RING_SLOTS; /* a channel takes this many slots */
  if (fixed >= most || (most - fixed) / per_slot < kSlotAlign) return 0;
  const size_t room = most - fixed; /* bytes for nchannels x per_slot slots */
  size_t slot = room / (per_slot * (size_t)l->nchannels) / kSlotAlign * kSlotAlign;
  int channels = l->nchannels;
  if (slot < kFitSlotBytes) {  // 64 KiB slots (or the user's smaller ones) on as many channels as fit
    slot = l->slot_bytes < kFitSlotBytes ? l->slot_bytes : kFitSlotBytes;
    channels = (int)(room / (per_slot * slot));
    if (channels < 1) {  // not one: one channel of the largest slots that fit
      channels = 1;
      slot = room / per_slot / kSlotAlign * kSlotAlign;
    }
  }
  l->slot_bytes = slot;
  l->nchannels = channels;
  return 1;
}
