/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Algorithm choice for the GPU collectives, one chooser for all: a table of costs per algorithm and protocol for each
 * kind of node link (NVLink, with its bandwidths from the topology, or shared host memory), timed by the collective's
 * shape, message size and rank count, with the overrides of the MCA parameters and the user's rules. Pure arithmetic:
 * the same inputs give the same choice on every rank.
 */
#ifndef COLL_GPU_TUNE_H
#define COLL_GPU_TUNE_H

#include <stddef.h>

#include "common/status.h"
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A user's rule (coll_gpu_tuning_rules): calls of `coll` from `from` to `to` bytes, both included (as the chooser
 * counts them), take `algo`. */
typedef struct {
  int coll;        /* a coll_gpu_coll_t */
  size_t from, to; /* to SIZE_MAX: no end */
  int algo;        /* a coll_gpu_algo_t that the collective has */
} coll_gpu_tune_rule_t;
#define COLL_GPU_TUNE_MAX_RULES 32
/* GB/s of the ring the topology finds over H200s (or H100s) through NVSwitch, 18 NVLinks of 20.6 GB/s: the link
 * the model's NVLink constants were measured on (engine/tune.cc) */
#define COLL_GPU_TUNE_REF_GBPS 370.8
/* Bytes of every rank's input together that an allreduce or reduce-scatter across nodes gathers at most
 * (COLL_GPU_ALGO_ALLGATHER): the engine's memory for the gathered blocks, allocated with a communicator over several
 * nodes */
#define COLL_GPU_TUNE_GATHER_BYTES ((size_t)64 << 10)

typedef struct {
  int algorithm[COLL_GPU_NCOLLS]; /* per collective, -1: choose, else a coll_gpu_algo_t it has */
  int protocol[COLL_GPU_NCOLLS];  /* per collective, -1: any, else a coll_gpu_proto_t that the model tries first */
  int nchannels;                  /* 0: choose, else the channel (block) count for two-shot and ring */
  int max_channels;               /* channels allocated */
  size_t oneshot_max_bytes;       /* largest one-shot message (its scratch) */
  size_t twoshot_max_bytes;       /* largest two-shot message (its scratch) */
  size_t ring_chunk_bytes;        /* 0: choose, else the ring's bytes per step (at most a FIFO slot) */
  int min_sms;                    /* the fewest multiprocessors among the ranks' GPUs; 0: not known */
  int max_blocks;        /* 0: any; else the most blocks a ring or two-shot kernel takes (ranks that share a GPU) */
  int net;               /* the ranks span nodes: ring hops between them go through the network proxy, and a ring call
                            takes channels by its size (a channel per kNetStepBytes of a ring step) */
  int nodes;             /* with net: the nodes the ranks span (the rules built in weigh the hops between them) */
  int net_ring_channels; /* with net: the most channels allreduce, allgather and reduce-scatter take unless
                            nchannels says (one per proxy thread); 0: no bound */
  int shm;               /* the ranks of a node reach each other through shared host memory (the SHM transport):
                            the model takes that link's costs, not NVLink's */
  double link_gbps;      /* GB/s the first of the rings moves, from the topology (engine/rings.h); 0: not known.
                            Below the link the constants were measured on, the model's NVLink bandwidths scale
                            down with it (coll_gpu_tune_link_scale) */
  const coll_gpu_tune_rule_t *rules; /* the user's rules (nrules of them; storage the caller keeps): the first that
                                        matches a call and fits it takes it, where no algorithm is forced */
  int nrules;
} coll_gpu_tune_config_t;

typedef struct {
  coll_gpu_algo_t algo;
  coll_gpu_proto_t proto;
  int nchannels;
  size_t chunk; /* ring: bytes per step, at most a FIFO slot; 0: a whole slot */
} coll_gpu_choice_t;

/* The factor the model's bandwidths over CUDA peer access take on this communicator's links: link_gbps over
 * COLL_GPU_TUNE_REF_GBPS, at most 1 (links at least as fast as the measured machine's keep its constants); 1 where
 * link_gbps is not known, and over SHM or the network, whose costs are their own. */
double coll_gpu_tune_link_scale(const coll_gpu_tune_config_t *c);
/* Modelled time in microseconds of one call of `coll` of `bytes` (allreduce: the message; bcast and reduce: the buffer;
 * the others: a block) on `nranks` ranks in algorithm algo and protocol proto, without the launch: the cost table's
 * entry for the pair over the communicator's link, timed by the collective's shape (common/colls.h); 1e30 where
 * the table has no such entry. */
double coll_gpu_tune_time_us(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, coll_gpu_algo_t algo,
                             coll_gpu_proto_t proto, int nranks, size_t bytes);
/* Whether algo, an algorithm that coll has, runs a call of `bytes` on `nranks` ranks: the direct ones (one-shot,
 * two-shot, which write into every peer's scratch) on one node of at most COLL_GPU_MAX_DIRECT ranks, within their part
 * of the scratch (an allreduce's one-shot in one slot of it, the other collectives' in slots of at least 16 bytes);
 * the chain across nodes only, the allgather there where every rank's input together takes at most
 * COLL_GPU_TUNE_GATHER_BYTES (a reduce-scatter's n blocks from each), and Bruck's and the pairwise allgather there on 3
 * to COLL_GPU_MAX_DIRECT ranks (the point-to-point connections); the ring everywhere. What is forced or ruled gives way
 * where it does not. */
int coll_gpu_tune_fits(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, coll_gpu_algo_t algo, int nranks,
                       size_t bytes);
/* The choice for one call of `coll` of `bytes` (counted as coll_gpu_tune_time_us counts them): the algorithm the config
 * forces for the collective where it fits, else the first of the user's rules that matches the call and fits it,
 * else the first such of the rules built in for the link (across nodes: an allgather takes the pairwise one up to 4 KiB
 * a block, and up to 32 KiB where ceil(log2 n) is less than the hops over the network the ring takes in a row,
 * min(nodes, n - 1); an allreduce takes the allgather where every rank's input together takes at most
 * COLL_GPU_TUNE_GATHER_BYTES, else up to 256 KiB the chain; a reduce-scatter the allgather for inputs of at most 1 KiB
 * where those hops exceed ceil(log2 n)), else the pair of algorithm and protocol with the least modelled time among
 * those that fit (first among the collective's forced protocol); its channels and ring step. */
coll_gpu_choice_t coll_gpu_tune_choose(const coll_gpu_tune_config_t *c, coll_gpu_coll_t coll, int nranks, size_t bytes);
/* Parses coll_gpu_tuning_rules: COLL:FROM-TO:ALGO entries, comma-separated, COLL one of coll_gpu_coll_name's
 * (common/colls.h), FROM and TO byte counts (k, m or g after the digits: KiB, MiB, GiB; TO left out: no end, FROM <=
 * TO), ALGO one of coll_gpu_algo_name's that the collective has (coll_gpu_coll_has). Empty or NULL: no rule. Fills up
 * to COLL_GPU_TUNE_MAX_RULES rules and *n; COLL_GPU_INVALID_INPUT, with the entry and what is wrong with it in why,
 * where the text is not such a list. */
coll_gpu_status_t coll_gpu_tune_parse_rules(const char *text, coll_gpu_tune_rule_t rules[COLL_GPU_TUNE_MAX_RULES],
                                            int *n, char *why, size_t len);
/* Fits the scratch layout l into `most` bytes (0: no bound) by shrinking its ring FIFOs, the part that
 * grows with the channels: first the slots, to no less than 64 KiB (a multiple of 4 KiB), then the
 * channels, then the slots below 64 KiB on one channel. The other parts (flags, one-shot, two-shot and
 * point-to-point FIFOs) stay. Returns 1 when l fits (perhaps changed), 0 when even one channel of 4 KiB
 * slots does not (l unchanged). The same inputs give the same layout on every rank. */
int coll_gpu_tune_fit_layout(coll_gpu_scratch_layout_t *l, size_t most);

#ifdef __cplusplus
}
#endif
#endif
