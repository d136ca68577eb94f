/*
 * Agreement on the path of one collective among the ranks of one node, through a shared-memory segment:
 * each rank posts what it can do (bits), and every rank reads the OR of all posts. Costs one cache line
 * written per rank and one read per peer (well under a microsecond at 8 ranks), instead of an MPI
 * allreduce. A wait lasts while the ranks it waits for exist (engine/wait.h).
 *
 * Agreements are numbered from 1 in the communicator's call order, the same on every rank. A rank may run
 * ahead of its peers: a bcast's root returns before the others have reached the call, and a nonblocking
 * call returns at once. Each rank's slot keeps the bits of its last COLL_GPU_AGREE_WINDOW agreements, and
 * a rank posts agreement n only once every rank has read agreement n - COLL_GPU_AGREE_WINDOW (or said it
 * would not read it): no post overwrites bits a peer has still to read.
 */
#ifndef COLL_GPU_AGREE_H
#define COLL_GPU_AGREE_H

#include <stdint.h>

#include "engine/bootstrap.h"
#include "engine/wait.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Agreements a rank may post beyond the oldest one some rank has not read yet. */
#define COLL_GPU_AGREE_WINDOW 64
/* The bits a rank posts: the low 16 of `bits`. */
#define COLL_GPU_AGREE_BITS 16

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

/* Posts `bits` as the next agreement and returns in *all the OR over every rank. Waits for room in the
 * window and for late ranks as long as they exist. Fails with COLL_GPU_PEER_GONE when a rank it waits for
 * is gone (its process ended), with missing[r] = 1 for each such rank (missing[] zeroed by the caller).
 * COLL_GPU_INTERNAL_ERROR when only this rank's own unread agreements (coll_gpu_agree_try_post) fill the
 * window: it must read them first. */
coll_gpu_status_t coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                                 uint8_t *missing);
/* Posts `bits` as the next agreement without reading it: for a rank whose own path does not depend on the
 * answer (its bits alone decide it). Waits only for room in the window, as coll_gpu_agree does. */
coll_gpu_status_t coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch,
                                      uint8_t *missing);

/* The same, in steps that never wait (for calls that complete later). */
/* Posts `bits` as agreement *n (the next) if the window has room: 1, else 0 (nothing posted: try again).
 * `read`: whether this rank will read the agreement (coll_gpu_agree_test); 0: it never will. */
int coll_gpu_agree_try_post(coll_gpu_agree_t *a, uint32_t bits, int read, uint64_t *n);
/* Whether every rank has posted agreement n, one this rank posted to read: 1 with *all the OR (the
 * agreement is then read), else 0. */
int coll_gpu_agree_test(coll_gpu_agree_t *a, uint64_t n, uint32_t *all);
/* Who holds up agreement n: late[r] = 1 for each rank that has not posted it (n: the next this rank
 * posts, when its post waits for room: each rank that has not read agreement n - COLL_GPU_AGREE_WINDOW),
 * missing[r] = 1 for those of them whose process is gone (looked up when `check`: a system call per late
 * rank). Returns whether any is gone. late[] and missing[] hold a byte per rank. */
int coll_gpu_agree_late(coll_gpu_agree_t *a, uint64_t n, int check, uint8_t *late, uint8_t *missing);
/* The last agreement this rank posted (0: none). */
uint64_t coll_gpu_agree_last(const coll_gpu_agree_t *a);
void coll_gpu_agree_destroy(coll_gpu_agree_t *a);
/* The segment's name (for tests: it must be gone once everyone has mapped it). */
const char *coll_gpu_agree_name(const coll_gpu_agree_t *a);

#ifdef __cplusplus
}
#endif
#endif
