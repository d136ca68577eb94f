/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The collectives, algorithms, protocols, element types and reduction ops of the whole project, as every layer
 * names them (the glue maps MPI's onto them, the engine chooses, the kernels run them). The kernels' facts about
 * them (element sizes, which pairs they reduce) are kernels/kernels.h's.
 */
#ifndef COLL_GPU_COLLS_H
#define COLL_GPU_COLLS_H

#include <stddef.h>

/* Element types the kernels reduce. Signed and unsigned integers differ only in MAX and MIN. */
typedef enum {
  COLL_GPU_INT8,
  COLL_GPU_UINT8,
  COLL_GPU_INT16,
  COLL_GPU_UINT16,
  COLL_GPU_INT32,
  COLL_GPU_UINT32,
  COLL_GPU_INT64,
  COLL_GPU_UINT64,
  COLL_GPU_FLOAT,
  COLL_GPU_DOUBLE,
  COLL_GPU_BOOL, /* C bool / C++ bool: one byte holding 0 or 1 */
  COLL_GPU_FLOAT_INT,
  COLL_GPU_DOUBLE_INT,
  COLL_GPU_LONG_INT,
  COLL_GPU_2INT,
  COLL_GPU_SHORT_INT,
  COLL_GPU_NTYPES
} coll_gpu_dtype_t;

typedef enum {
  COLL_GPU_SUM,
  COLL_GPU_PROD,
  COLL_GPU_MAX,
  COLL_GPU_MIN,
  COLL_GPU_LAND,
  COLL_GPU_LOR,
  COLL_GPU_LXOR,
  COLL_GPU_BAND,
  COLL_GPU_BOR,
  COLL_GPU_BXOR,
  COLL_GPU_MAXLOC,
  COLL_GPU_MINLOC,
  COLL_GPU_NOPS
} coll_gpu_redop_t;

/* CHAIN is an allreduce across nodes run as a reduce to rank 0, then a bcast from it, each a RING call along its
 * chain: the engine runs the two (engine/engine.cc); no kernel takes CHAIN. ALLGATHER is an allreduce or a
 * reduce-scatter across nodes run as an allgather (RING, BRUCK or PAIRWISE) of every rank's whole input into the
 * engine's memory, then a kernel with no peers that reduces the gathered blocks (a reduce-scatter: this rank's part
 * of each) in rank order (kernels/reduce.cuh's reduce_gathered). BRUCK is an allgather across nodes of 3 to
 * COLL_GPU_MAX_DIRECT ranks in ceil(log2 n) steps over the point-to-point connections (kernels/move.cu's move_bruck);
 * PAIRWISE the same ranks' allgather in one step, every rank sending its block to every peer at once over those
 * connections, a sending and a receiving block per peer (move_p2p, the pairwise alltoall's kernel). TREE is an
 * allreduce across nodes of 3 to COLL_GPU_MAX_DIRECT ranks over the double binary tree (a chain inside each node, a
 * binary tree between the nodes), its halves reduced up and sent down the two trees over the point-to-point
 * connections (kernels/allreduce_tree.cuh). */
typedef enum {
  COLL_GPU_ALGO_ONESHOT,
  COLL_GPU_ALGO_TWOSHOT,
  COLL_GPU_ALGO_RING,
  COLL_GPU_ALGO_CHAIN,
  COLL_GPU_ALGO_ALLGATHER,
  COLL_GPU_ALGO_BRUCK,
  COLL_GPU_ALGO_PAIRWISE,
  COLL_GPU_ALGO_TREE,
  COLL_GPU_NALGOS
} coll_gpu_algo_t;

/* The collectives the kernels run. The moves (bcast, allgather, alltoall) copy bytes: their calls give
 * count in bytes, type COLL_GPU_UINT8 and no op; kernels/move.cu runs them. The reductions other than
 * allreduce (reduce, reduce-scatter) are kernels/reduce.cuh's. */
typedef enum {
  COLL_GPU_COLL_ALLREDUCE,
  COLL_GPU_COLL_BCAST,          /* recvbuf at root -> recvbuf everywhere (sendbuf = recvbuf) */
  COLL_GPU_COLL_ALLGATHER,      /* each rank's sendbuf -> block r of every recvbuf */
  COLL_GPU_COLL_ALLTOALL,       /* block q of rank r's sendbuf -> block r of rank q's recvbuf */
  COLL_GPU_COLL_REDUCE,         /* every rank's sendbuf, reduced -> recvbuf at root */
  COLL_GPU_COLL_REDUCE_SCATTER, /* elements blocks[q] of every sendbuf, reduced -> recvbuf at rank q */
  COLL_GPU_NCOLLS
} coll_gpu_coll_t;
typedef enum { COLL_GPU_PROTO_LL, COLL_GPU_PROTO_SIMPLE, COLL_GPU_NPROTOS } coll_gpu_proto_t;

/* How a collective's ring algorithm moves data, which is what the tuning model times and sizes (engine/tune.cc):
 * the buffer along a chain of the ranks, in pieces (bcast, reduce), the n - 1 steps of a ring, each carrying a
 * rank's block (allgather, reduce-scatter), or every pair of ranks at once (alltoall). Allreduce has its own. */
typedef enum {
  COLL_GPU_SHAPE_ALLREDUCE,
  COLL_GPU_SHAPE_CHAIN,
  COLL_GPU_SHAPE_BLOCKS,
  COLL_GPU_SHAPE_PAIRS
} coll_gpu_shape_t;

/* One collective's row: what every layer names it by and what it has. A collective the kernels run has a row here
 * (common/colls.cc); its coll_gpu_<name>_algorithm parameter, its name in coll_gpu_tuning_rules, its place in the
 * engine's config and the tuning model's costs follow from the row. */
typedef struct {
  const char *name;           /* "bcast": its coll_gpu_<name>_algorithm parameter and its COLL in the rules */
  const char *mpi_name;       /* "MPI_Bcast", in messages */
  unsigned algos;             /* the algorithms it has: bit 1 << a for each coll_gpu_algo_t a */
  coll_gpu_shape_t shape;     /* how its ring moves data */
  const char *algorithm_help; /* the description of coll_gpu_<name>_algorithm */
} coll_gpu_coll_info_t;

#ifdef __cplusplus
extern "C" {
#endif
/* The row of coll, a collective below COLL_GPU_NCOLLS. */
const coll_gpu_coll_info_t *coll_gpu_coll_info(coll_gpu_coll_t coll);
/* Whether coll has algorithm algo. */
int coll_gpu_coll_has(coll_gpu_coll_t coll, coll_gpu_algo_t algo);
/* The same of a row already looked up (the tuning model's loops). */
static inline int coll_gpu_info_has(const coll_gpu_coll_info_t *info, coll_gpu_algo_t algo) {
  return algo >= 0 && algo < COLL_GPU_NALGOS && ((info->algos >> algo) & 1u) != 0;
}
/* Whether algo is a reduction the engine runs as ring calls of other collectives (CHAIN, ALLGATHER), not a kernel of
 * its own: those calls choose their channels. */
static inline int coll_gpu_algo_composed(coll_gpu_algo_t algo) {
  return algo == COLL_GPU_ALGO_CHAIN || algo == COLL_GPU_ALGO_ALLGATHER;
}
const char *coll_gpu_coll_name(coll_gpu_coll_t coll);     /* "bcast"; "?" for what is not a collective */
const char *coll_gpu_coll_mpi_name(coll_gpu_coll_t coll); /* "MPI_Bcast" */
const char *coll_gpu_algo_name(coll_gpu_algo_t algo);     /* "oneshot" */
const char *coll_gpu_proto_name(coll_gpu_proto_t proto);  /* "LL" */
/* Into out (len bytes): the names of the collectives whose bit (1 << coll) is set in `which`, "a, b or c" with
 * `last` " or ". Returns out. */
const char *coll_gpu_coll_names(unsigned which, const char *last, char *out, size_t len);
/* Into out (len bytes): the names of the algorithms coll has, "oneshot, ring". Returns out. */
const char *coll_gpu_algo_names(coll_gpu_coll_t coll, char *out, size_t len);
#ifdef __cplusplus
}
#endif

#endif
