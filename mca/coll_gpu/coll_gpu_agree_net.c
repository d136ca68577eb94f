/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The path agreement between hosts (engine/agree.h's coll_gpu_agree_net_t): each post of a rank that takes
 * part goes to every rank of the communicator on another host as a 16-byte message (instance, word) of
 * Open MPI's point-to-point layer, on the communicator itself under a tag of our own, and the posts that
 * have come are taken in with a matched probe and receive. Neither side ever waits: a send is nonblocking,
 * its buffer kept until the send completes (reaped at the next send or poll); a communicator freed with
 * sends outstanding leaves them to a list of the process, reaped the same way.
 */
#include <pthread.h>
#include <string.h>

#include "coll_gpu.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/message/message.h"
#include "opal/util/proc.h"

/* Below every range Open MPI's collective components take (coll_tags.h), at the far end of hcoll's, which
 * Debian's and Ubuntu's Open MPI do not build. */
#define COLL_GPU_AGREE_TAG (MCA_COLL_BASE_TAG_HCOLL_END + 1)

typedef struct send_s {
  struct send_s *next;
  uint64_t msg[2];
  ompi_request_t *req;
} send_t;

struct mca_coll_gpu_agree_net_s {
  struct ompi_communicator_t *comm;
  send_t *sends; /* outstanding */
};

static send_t *orphans; /* of communicators freed with sends outstanding */
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;

/* Frees the completed sends of a list; returns what is left. */
static send_t *reap(send_t *list) {
  for (send_t **at = &list; *at != NULL;) {
    send_t *s = *at;
    if (!REQUEST_COMPLETE(s->req)) {
      at = &s->next;
      continue;
    }
    *at = s->next;
    ompi_request_free(&s->req);
    free(s);
  }
  return list;
}

static void reap_all(mca_coll_gpu_agree_net_t *net) {
  net->sends = reap(net->sends);
  if (__atomic_load_n(&orphans, __ATOMIC_RELAXED) == NULL || pthread_mutex_trylock(&orphans_lock) != 0) return;
  orphans = reap(orphans);
  pthread_mutex_unlock(&orphans_lock);
}

static void net_send(void *ctx, int to, uint64_t instance, uint64_t word) {
  mca_coll_gpu_agree_net_t *net = ctx;
  reap_all(net);
  send_t *s = malloc(sizeof(*s));
  const uint64_t msg[2] = {instance, word};
  if (s == NULL) { /* out of memory: a send that completes before it returns (eager: at once), never lost */
    MCA_PML_CALL(
        send((void *)msg, 2, &ompi_mpi_uint64_t.dt, to, COLL_GPU_AGREE_TAG, MCA_PML_BASE_SEND_STANDARD, net->comm));
    return;
  }
  s->msg[0] = instance;
  s->msg[1] = word;
  if (MCA_PML_CALL(isend(s->msg, 2, &ompi_mpi_uint64_t.dt, to, COLL_GPU_AGREE_TAG, MCA_PML_BASE_SEND_STANDARD,
                         net->comm, &s->req)) != OMPI_SUCCESS) {
    free(s);
    return; /* the point-to-point layer failed: the peer's readers wait, and the watchdog names this rank */
  }
  s->next = net->sends;
  net->sends = s;
}

static void net_poll(void *ctx, coll_gpu_agree_t *a) {
  mca_coll_gpu_agree_net_t *net = ctx;
  for (;;) {
    int found = 0;
    ompi_message_t *message = MPI_MESSAGE_NULL;
    ompi_status_public_t st;
    if (MCA_PML_CALL(improbe(MPI_ANY_SOURCE, COLL_GPU_AGREE_TAG, net->comm, &found, &message, &st)) != OMPI_SUCCESS ||
        !found)
      break;
    uint64_t msg[2];
    if (MCA_PML_CALL(mrecv(msg, 2, &ompi_mpi_uint64_t.dt, &message, &st)) != OMPI_SUCCESS) break;
    coll_gpu_agree_deliver(a, st.MPI_SOURCE, msg[0], msg[1]);
  }
  reap_all(net);
}

/* Which of the communicator's ranks are on other hosts than this one (remote[r] = 1, unless remote is NULL), and how
 * many: by host name, as the node's agreement table and the engine tell hosts apart (Open MPI's locality flags called a
 * rank of the other host local on Ubuntu 24.04's Open MPI 4.1.6). Records in m whether there are any: the
 * same answer on every rank. */
static int remote_ranks(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm, uint8_t *remote) {
  const int n = ompi_comm_size(comm);
  const char *here = opal_process_info.nodename;
  int others = 0;
  for (int r = 0; r < n; ++r) {
    ompi_proc_t *p = ompi_group_peer_lookup(comm->c_local_group, r);
    const char *host = p != NULL ? opal_get_proc_hostname(&p->super) : NULL;
    const int other = r != ompi_comm_rank(comm) && (host == NULL || here == NULL || strcmp(host, here) != 0);
    if (remote != NULL) remote[r] = (uint8_t)other;
    others += other;
  }
  m->hosts = others > 0 ? 2 : 1;
  return others;
}

int mca_coll_gpu_spans_hosts(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm) {
  if (m->hosts == 0) remote_ranks(m, comm, NULL);
  return m->hosts == 2;
}

int mca_coll_gpu_agree_net(mca_coll_gpu_module_t *m, struct ompi_communicator_t *comm) {
  const int n = ompi_comm_size(comm);
  uint8_t *remote = calloc((size_t)n, 1);
  if (remote == NULL) return 0;
  const int others = remote_ranks(m, comm, remote);
  if (others == 0) {
    free(remote);
    return 1;
  }
  COLL_GPU_LOG(
      COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
      "comm %s: %d of its %d ranks on other hosts: the path agreement reaches them through point-to-point "
      "messages, a trip between the hosts before each call on device buffers of coll_gpu_net_min_bytes or "
      "more, but blocking calls once the communicator has GPU resources of its own (coll_gpu_uniform_buffers=1 "
      "skips it for every call where every rank always passes device memory)",
      comm->c_name, others, n);
  m->agree_net = calloc(1, sizeof(*m->agree_net));
  if (m->agree_net != NULL) m->agree_net->comm = comm;
  const coll_gpu_agree_net_t net = {m->agree_net, net_send, net_poll};
  const int ok = m->agree_net != NULL && coll_gpu_agree_set_net(m->agree, remote, &net) == COLL_GPU_SUCCESS;
  free(remote);
  return ok;
}

void mca_coll_gpu_agree_net_free(mca_coll_gpu_module_t *m) {
  mca_coll_gpu_agree_net_t *net = m->agree_net;
  if (net == NULL) return;
  m->agree_net = NULL;
  net->sends = reap(net->sends);
  if (net->sends != NULL) { /* their buffers stay until they complete */
    send_t *last = net->sends;
    while (last->next != NULL) last = last->next;
    pthread_mutex_lock(&orphans_lock);
    last->next = orphans;
    orphans = net->sends;
    pthread_mutex_unlock(&orphans_lock);
  }
  free(net);
}
