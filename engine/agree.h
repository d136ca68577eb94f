/*
 * Agreement on the path of one collective among the ranks of one node, through a shared-memory segment:
 * each rank posts what it can do (bits), and every rank reads the OR of all posts. Costs one cache line
 * written per rank and one read per peer (well under a microsecond at 8 ranks), instead of an MPI
 * allreduce. A wait lasts while the ranks it waits for exist (engine/wait.h).
 */
#ifndef COLL_GPU_AGREE_H
#define COLL_GPU_AGREE_H

#include <stdint.h>

#include "engine/bootstrap.h"
#include "engine/wait.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coll_gpu_agree coll_gpu_agree_t;

/* Collective over b: rank 0 creates the segment (named after the unique id, O_EXCL, mode 0600), the
 * others map it, and it is unlinked as soon as all have. Every rank gets the same success or failure
 * (COLL_GPU_SYSTEM_ERROR, or COLL_GPU_BOOTSTRAP_ERROR), with the reason in why. */
coll_gpu_status_t coll_gpu_agree_create(const coll_gpu_bootstrap_t *b, const uint8_t id[COLL_GPU_UNIQUE_ID_BYTES],
                                        coll_gpu_agree_t **out, char *why, size_t why_len);
/* Watching an agreement's wait (engine/wait.h): after wait->timeout_ns, report(ctx, late) is called
 * once with late[r] = 1 for each rank that has not posted yet, and the wait goes on. */
typedef struct {
  coll_gpu_wait_config_t wait;
  void (*report)(void *ctx, const uint8_t *late);
  void *ctx;
} coll_gpu_agree_watch_t;

/* Posts `bits` for the next agreement and returns in *all the OR over every rank. Waits for late ranks
 * as long as they exist. Fails with COLL_GPU_PEER_GONE when a rank that has not posted is gone (its
 * process ended), with missing[r] = 1 for each such rank (missing[] zeroed by the caller). */
coll_gpu_status_t coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                                 uint8_t *missing);
/* Posts `bits` for the next agreement without waiting for the others: for a rank whose own path does not
 * depend on the answer (its bits alone decide it). */
void coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits);
void coll_gpu_agree_destroy(coll_gpu_agree_t *a);
/* The segment's name (for tests: it must be gone once everyone has mapped it). */
const char *coll_gpu_agree_name(const coll_gpu_agree_t *a);

#ifdef __cplusplus
}
#endif
#endif
