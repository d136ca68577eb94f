/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Agreement on the path of one collective among the ranks of a communicator: each rank posts what it can do
 * (bits), and a rank that needs the answer reads the OR of all posts. On one node it costs one cache line
 * written per rank and one read per peer, instead of an MPI allreduce; across nodes, a message per post to
 * each rank of the other nodes (below). A wait lasts while the ranks it waits for exist
 * (common/wait.h).
 *
 * Nothing here needs the other ranks to be set up: the agreements of every communicator of a job on a
 * node live in one table, a file in a directory the MPI library removes at the job's end, which the first
 * process to need it creates and the others open (all zero is its initial state). A communicator finds
 * its entry by its key (its context id and its members, in rank order) and tells its instances apart by
 * a number: how many communicators with that key this process has seen created, the same count on every
 * member, since every member takes part in every creation.
 *
 * Agreements are numbered from 1 in the communicator's call order, the same on every rank. A rank takes
 * part (joins) from some agreement on: at once when it reads answers or when some process of the node
 * has marked the table (it may pass device memory); until then a rank only counts its calls, and its
 * absence means "not the GPU path". A rank that needs an answer reads it only where every rank joined at
 * or before that agreement; otherwise it posts its bits with COLL_GPU_AGREE_UNKNOWN and takes that as the
 * answer, which every reader of the agreement then sees too: the same decision everywhere, never a wait
 * for a rank that may have passed the call already.
 *
 * A rank may run ahead of its peers (a bcast's root returns at once, a nonblocking call too). Each rank
 * keeps the bits of its last COLL_GPU_AGREE_WINDOW agreements, tagged with their numbers; a reader that
 * finds one overwritten takes COLL_GPU_AGREE_UNKNOWN. Only a post that must be read exactly (a reader's
 * own bits, posted where every rank joined: "kept") holds its place until every rank has read it, so a
 * rank that only posts never waits.
 *
 * Across nodes (coll_gpu_agree_set_net), each rank's posts also travel as messages to the ranks of the other
 * nodes, through an interface the glue implements over the communicator's point-to-point layer, after a
 * message that says from which agreement on the rank takes part (sent when it joins, before it waits for
 * anything). A rank on another node has joined once that message has come. The same rules then hold:
 * a reader waits for the posts of the ranks that joined, up to COLL_GPU_AGREE_JOIN_WAIT_NS for one not
 * known to have joined, and reads UNKNOWN where one has not. Posts from another node are kept until this
 * rank has read past them (nothing overwrites them), and a rank that never joins takes them in now and then
 * so that they do not pile up.
 */
#ifndef COLL_GPU_AGREE_H
#define COLL_GPU_AGREE_H

#include <stddef.h>
#include <stdint.h>

#include "common/status.h"
#include "common/wait.h"
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Agreements a rank may post beyond the oldest kept one some rank has not read yet. */
#define COLL_GPU_AGREE_WINDOW 64
/* The bits a rank posts: the low 16 of `bits`. */
#define COLL_GPU_AGREE_BITS 16
/* In an answer: some rank's post could not be read (it did not take part, or its post was overwritten). */
#define COLL_GPU_AGREE_UNKNOWN 0x8000u
/* How long a reader waits for a rank that has not joined yet before it posts COLL_GPU_AGREE_UNKNOWN
 * (such a rank may never come: it may have passed the call before it had to take part). */
#define COLL_GPU_AGREE_JOIN_WAIT_NS 100000000ULL
/* Communicators the table holds over a job's life on one node; more are left without an agreement. */
#define COLL_GPU_AGREE_ENTRIES 1024
/* Ranks of one communicator on one node that take part at most (a slot each in the table); where more share a
 * node, none of them joins, and every call of the communicator stages. Its size is not bound otherwise. */
#define COLL_GPU_AGREE_NODE_RANKS 32

/* ------------------------------------------------------------------ the node's table */

typedef struct coll_gpu_agree_table coll_gpu_agree_table_t;

/* Opens the table file at path, creating it if it is not there: a regular file of this user, never
 * followed through a symbolic link, mode 0600. */
coll_gpu_status_t coll_gpu_agree_table_open(const char *path, coll_gpu_agree_table_t **out, char *why, size_t why_len);
void coll_gpu_agree_table_close(coll_gpu_agree_table_t *t);
/* Marks the table: a process of the node may pass device memory, and every rank takes part in every
 * agreement from its next call on. Never unmarked. */
void coll_gpu_agree_table_mark(coll_gpu_agree_table_t *t);
int coll_gpu_agree_table_marked(const coll_gpu_agree_table_t *t);
/* The name of the table file in a job's directory. */
#define COLL_GPU_AGREE_TABLE_NAME "coll_gpu_agree.v2"

/* ------------------------------------------------------------------ one communicator's agreements */

typedef struct {
  uint32_t cid;     /* context id: the same on every member */
  uint32_t size;    /* ranks, at most COLL_GPU_MAX_COMM_RANKS */
  uint64_t members; /* each rank's process, as the MPI library names it, in rank order, hashed */
} coll_gpu_agree_key_t;

/* This process's count of communicators created with this key, this one included (call it once per
 * creation; thread-safe). The same on every member of the communicator. */
uint64_t coll_gpu_agree_instance(const coll_gpu_agree_key_t *key);

typedef struct coll_gpu_agree coll_gpu_agree_t;

/* This rank's handle of instance `instance` of the communicator `key`: local, nothing shared is touched
 * before the rank joins. */
coll_gpu_status_t coll_gpu_agree_create(coll_gpu_agree_table_t *t, const coll_gpu_agree_key_t *key, uint64_t instance,
                                        int rank, coll_gpu_agree_t **out);

/* Watching an agreement's wait (common/wait.h): after wait->timeout_ns, report(ctx, late) is called
 * once with late[r] = 1 for each rank that holds it up, and the wait goes on. */
typedef struct {
  coll_gpu_wait_config_t wait;
  void (*report)(void *ctx, const uint8_t *late);
  void *ctx;
} coll_gpu_agree_watch_t;

/* Ranks on other nodes: the glue's messages. Neither function waits. */
typedef struct {
  void *ctx;
  /* sends this rank's post `word` (n << COLL_GPU_AGREE_BITS | bits) of `instance` to rank `to`; the top bit
   * of `instance` set: the rank joins at n (no bits) */
  void (*send)(void *ctx, int to, uint64_t instance, uint64_t word);
  /* hands each post that has come to coll_gpu_agree_deliver(a, ...) */
  void (*poll)(void *ctx, coll_gpu_agree_t *a);
} coll_gpu_agree_net_t;

/* Before the handle's first use: the ranks with remote[r] = 1 are on other nodes, reached through net
 * (copied). Nothing changes where none is. The others share this rank's node and the table: with more than
 * COLL_GPU_AGREE_NODE_RANKS of them (this rank included) this rank never joins. */
coll_gpu_status_t coll_gpu_agree_set_net(coll_gpu_agree_t *a, const uint8_t *remote, const coll_gpu_agree_net_t *net);
/* A post of rank `from` that came (net->poll's callback); posts of another instance are dropped. */
void coll_gpu_agree_deliver(coll_gpu_agree_t *a, int from, uint64_t instance, uint64_t word);

/* Posts `bits` as the next agreement and returns in *all the OR over every rank (with
 * COLL_GPU_AGREE_UNKNOWN where some rank's post cannot be read). Waits for room in the window and for
 * ranks that joined but have not posted yet, as long as they exist. Fails with COLL_GPU_PEER_GONE when a
 * rank it waits for is gone (its process ended), with missing[r] = 1 for each such rank (missing[] zeroed
 * by the caller). COLL_GPU_INTERNAL_ERROR when only this rank's own unread agreements
 * (coll_gpu_agree_try_post) fill the window: it must read them first. */
coll_gpu_status_t coll_gpu_agree(coll_gpu_agree_t *a, uint32_t bits, const coll_gpu_agree_watch_t *watch, uint32_t *all,
                                 uint8_t *missing);
/* Posts `bits` as the next agreement without reading it: for a rank whose own path does not depend on the
 * answer (its bits alone decide it). Never waits. */
void coll_gpu_agree_post(coll_gpu_agree_t *a, uint32_t bits);

/* The same, in steps that never wait (for calls that complete later). */
/* Posts `bits` as agreement *n (the next): 1, or 0 when it cannot yet (no room in the window, or ranks it
 * would read have not joined yet and the join wait has not passed): nothing posted, try again.
 * `read`: whether this rank will read the agreement (coll_gpu_agree_test); 0: it never will. */
int coll_gpu_agree_try_post(coll_gpu_agree_t *a, uint32_t bits, int read, uint64_t *n);
/* Whether agreement n, one this rank posted to read, is decided: 1 with *all the OR (the agreement is then
 * read), else 0. */
int coll_gpu_agree_test(coll_gpu_agree_t *a, uint64_t n, uint32_t *all);
/* Who holds up agreement n: late[r] = 1 for each rank that has not posted it (n: the next this rank posts,
 * when its post waits: each rank whose read or join it waits for), missing[r] = 1 for those of them whose
 * process is gone (looked up when `check`: a system call per late rank). Returns whether any is gone.
 * late[] and missing[] hold a byte per rank. */
int coll_gpu_agree_late(coll_gpu_agree_t *a, uint64_t n, int check, uint8_t *late, uint8_t *missing);
/* The last agreement this rank posted or counted (0: none). */
uint64_t coll_gpu_agree_last(const coll_gpu_agree_t *a);
/* Whether this rank has joined (takes part in every agreement from some number on). */
int coll_gpu_agree_joined(const coll_gpu_agree_t *a);
void coll_gpu_agree_destroy(coll_gpu_agree_t *a);

#ifdef __cplusplus
}
#endif
#endif
