/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * For the MPI programs that run the path agreement (engine/agree.h) on nodes of their own: the messages that carry
 * the posts of the other nodes' ranks (MPI_Isend, its buffer kept until it completes, and MPI_Improbe with
 * MPI_Mrecv, on a communicator per handle), as the component sends them over Open MPI's point-to-point layer; a
 * handle whose posts take them; and the directory of the nodes' tables. Include after mpi_bootstrap.h (EXPECT).
 */
#ifndef COLL_GPU_TEST_MPI_AGREE_WIRE_H
#define COLL_GPU_TEST_MPI_AGREE_WIRE_H

#include <errno.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/agree.h"

/* The messages of one handle to and from the ranks of other nodes. */
typedef struct {
  MPI_Comm comm;
} wire_t;
enum { kWireTag = 77 };

/* Sends in flight, each with its buffer; reaped at the next send. */
typedef struct sent_s {
  struct sent_s *next;
  uint64_t msg[2];
  MPI_Request req;
} sent_t;
static sent_t *in_flight;

static void wire_send(void *ctx, int to, uint64_t instance, uint64_t word) {
  for (sent_t **at = &in_flight; *at != NULL;) {
    int done = 0;
    MPI_Test(&(*at)->req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      at = &(*at)->next;
      continue;
    }
    sent_t *s = *at;
    *at = s->next;
    free(s);
  }
  sent_t *s = malloc(sizeof(*s));
  s->msg[0] = instance;
  s->msg[1] = word;
  EXPECT(MPI_Isend(s->msg, 2, MPI_UINT64_T, to, kWireTag, ((wire_t *)ctx)->comm, &s->req) == MPI_SUCCESS,
         "a post sent");
  s->next = in_flight;
  in_flight = s;
}

static void wire_poll(void *ctx, coll_gpu_agree_t *a) {
  for (;;) {
    int found = 0;
    MPI_Message m;
    MPI_Status st;
    MPI_Improbe(MPI_ANY_SOURCE, kWireTag, ((wire_t *)ctx)->comm, &found, &m, &st);
    if (!found) return;
    uint64_t msg[2];
    MPI_Mrecv(msg, 2, MPI_UINT64_T, &m, MPI_STATUS_IGNORE);
    coll_gpu_agree_deliver(a, st.MPI_SOURCE, msg[0], msg[1]);
  }
}

/* Waits for the sends still in flight and frees them. */
static void wire_drain(void) {
  while (in_flight != NULL) {
    sent_t *s = in_flight;
    in_flight = s->next;
    MPI_Wait(&s->req, MPI_STATUS_IGNORE);
    free(s);
  }
}

/* This rank's handle of instance `instance` of the communicator `cid` of MPI_COMM_WORLD's ranks, in table t. With
 * nodes of node_size consecutive ranks (0: one node) and a wire, the posts of the other nodes' ranks go through
 * it, on a duplicate of MPI_COMM_WORLD made here (the caller frees wire->comm; MPI_COMM_NULL where the handle
 * did not take the wire); without a wire, none do. */
static coll_gpu_agree_t *agree_handle(coll_gpu_agree_table_t *t, uint32_t cid, uint64_t instance, int node_size,
                                      wire_t *wire) {
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  coll_gpu_agree_key_t key;
  memset(&key, 0, sizeof(key));
  key.cid = cid;
  key.size = (uint32_t)n;
  key.members = 1000 + (uint64_t)n;
  coll_gpu_agree_t *a = NULL;
  EXPECT(coll_gpu_agree_create(t, &key, instance, me, &a) == COLL_GPU_SUCCESS, "a handle");
  if (wire != NULL) wire->comm = MPI_COMM_NULL;
  if (node_size > 0 && a != NULL && wire != NULL) {
    uint8_t *remote = calloc((size_t)n, 1);
    for (int r = 0; r < n; ++r) remote[r] = r / node_size != me / node_size;
    MPI_Comm_dup(MPI_COMM_WORLD, &wire->comm);
    const coll_gpu_agree_net_t net = {wire, wire_send, wire_poll};
    EXPECT(coll_gpu_agree_set_net(a, remote, &net) == COLL_GPU_SUCCESS, "the handle's messages");
    free(remote);
  }
  return a;
}

/* The tables' directory (64 bytes): rank 0's, made on every host, opened by every rank without any exchange but
 * its name. Returns 0 where it could not be made. */
static int agree_dir_make(MPI_Comm comm, char *dir) {
  int rank, ok;
  MPI_Comm_rank(comm, &rank);
  strcpy(dir, "/tmp/coll_gpu_test_agree.XXXXXX");
  ok = rank != 0 || mkdtemp(dir) != NULL;
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm);
  MPI_Bcast(dir, 64, MPI_CHAR, 0, comm);
  return ok && (mkdir(dir, 0700) == 0 || errno == EEXIST); /* on another host's /tmp */
}

#endif
