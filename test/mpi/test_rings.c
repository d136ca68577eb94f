/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The rings of the GPU path over a real MPI job, without a GPU: each rank is given a GPU bus id of
 * a topology fixture (test/data), the ranks' views are merged, and the rings must be the same on every
 * rank and the ones the topology calls for; the dump carries each GPU's rank; a GPU the topology lacks,
 * two ranks on one GPU and bad files fall back to rank order, with the reason, on every rank alike.
 * usage: mpirun -np N test_rings   (N = 2 to 4; the fixtures are found in the source tree)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/rings.h"
#include "test/mpi/mpi_bootstrap.h"
#include "topo/topo_xml.h"

static int rank, nranks, failures, warnings;
static char last_warning[1024];

static void on_warn(const char *what) {
  ++warnings;
  snprintf(last_warning, sizeof(last_warning), "%s", what);
}

/* Rings for rank r on GPU busids[r], with the file; checks what every ring must satisfy. */
static void compute(MPI_Comm comm, const char *file, const char *dump, const char *const *busids,
                    coll_gpu_rings_t *rings, char *why, size_t why_len) {
  coll_gpu_bootstrap_t b = {rank, nranks, &comm, mpi_allgather, mpi_bcast, mpi_barrier};
  coll_gpu_peer_t *peers = calloc((size_t)nranks, sizeof(*peers));
  for (int r = 0; r < nranks; ++r) snprintf(peers[r].busid, sizeof(peers[r].busid), "%s", busids[r]);
  coll_gpu_topo_config_t cfg = {file, dump, NULL, on_warn, "test"};
  EXPECT(coll_gpu_rings_compute(&b, peers, &cfg, rings, why, why_len) == COLL_GPU_SUCCESS, "compute: %s", why);
  free(peers);
  EXPECT(rings->nrings >= 1 && rings->nrings <= COLL_GPU_MAX_RINGS, "%d rings", rings->nrings);
  for (int k = 0; k < rings->nrings; ++k) {
    int seen[4] = {0};
    for (int i = 0; i < nranks; ++i)
      if (coll_gpu_ring(rings, k)[i] < nranks) seen[coll_gpu_ring(rings, k)[i]]++;
    for (int r = 0; r < nranks; ++r) EXPECT(seen[r] == 1, "ring %d visits rank %d %d times", k, r, seen[r]);
  }
  /* the same on every rank: rank 0's answer against ours */
  int root_nrings = rings->nrings;
  double root_speed = rings->speed;
  uint16_t root_order[COLL_GPU_MAX_RINGS * 4];
  memcpy(root_order, rings->order, (size_t)rings->nrings * nranks * sizeof(uint16_t));
  char root_why[256];
  snprintf(root_why, sizeof(root_why), "%s", why);
  MPI_Bcast(&root_nrings, 1, MPI_INT, 0, comm);
  MPI_Bcast(&root_speed, 1, MPI_DOUBLE, 0, comm);
  MPI_Bcast(root_order, (int)sizeof(root_order), MPI_BYTE, 0, comm);
  MPI_Bcast(root_why, sizeof(root_why), MPI_CHAR, 0, comm);
  EXPECT(root_nrings == rings->nrings && root_speed == rings->speed &&
             memcmp(root_order, rings->order, (size_t)rings->nrings * nranks * sizeof(uint16_t)) == 0,
         "rings differ from rank 0's");
  EXPECT(strcmp(root_why, why) == 0, "reason \"%s\" differs from rank 0's \"%s\"", why, root_why);
}

static int is_rank_order(const coll_gpu_rings_t *rings) {
  for (int i = 0; i < nranks; ++i)
    if (coll_gpu_ring(rings, 0)[i] != i) return 0;
  return rings->nrings == 1 && rings->speed == 0;
}

/* The rank attribute of the GPU with this bus id in a dumped file, -1 without, -2 when it is missing. */
static int dumped_rank(const topo_xml_node_t *n, const char *busid) {
  const char *b = topo_xml_attr(n, "busid");
  if (strcmp(n->name, "pci") == 0 && b != NULL && strcasecmp(b, busid) == 0) {
    const topo_xml_node_t *g = topo_xml_child(n, "gpu");
    const char *r = g != NULL ? topo_xml_attr(g, "rank") : NULL;
    return r != NULL ? atoi(r) : -1;
  }
  for (int i = 0; i < n->nchildren; ++i) {
    int r = dumped_rank(n->children[i], busid);
    if (r != -2) return r;
  }
  return -2;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  if (nranks < 2 || nranks > 4) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np 2..4 test_rings\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char *nvswitch = COLL_GPU_TEST_DATA "/nvswitch8_h200.xml", *bridge = COLL_GPU_TEST_DATA "/pcie4_nvbridge.xml";
  char dump[1024], bad[1024];
  char tmpl[] = "/tmp/coll_gpu_rings.XXXXXX";
  if (rank == 0 && mkdtemp(tmpl) == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Bcast(tmpl, sizeof(tmpl), MPI_CHAR, 0, comm);
  snprintf(dump, sizeof(dump), "%s/dump.xml", tmpl);
  snprintf(bad, sizeof(bad), "%s/bad.xml", tmpl);
  coll_gpu_rings_t rings = {0};
  if (coll_gpu_rings_alloc(&rings, nranks) != COLL_GPU_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
  char why[256];

  /* NVSwitch node, ranks on the GPUs in reverse: one ring, all hops equal, so the search's first ring
   * in GPU order 0..7, which is rank order reversed */
  static const char *const h200[] = {"0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0",
                                     "0000:9b:00.0", "0000:bb:00.0", "0000:cb:00.0", "0000:db:00.0"};
  const char *rev[4];
  for (int r = 0; r < nranks; ++r) rev[r] = h200[nranks - 1 - r];
  compute(comm, nvswitch, dump, rev, &rings, why, sizeof(why));
  EXPECT(why[0] == '\0', "searched, not rank order: %s", why);
  EXPECT(rings.speed > 0, "speed %g", rings.speed);
  for (int i = 0; i < nranks; ++i)
    EXPECT(coll_gpu_ring(&rings, 0)[i] == nranks - 1 - i, "position %d: rank %d", i, coll_gpu_ring(&rings, 0)[i]);
  MPI_Barrier(comm);
  topo_xml_node_t *d = NULL;
  char err[512];
  EXPECT(topo_xml_load(dump, &d, err, sizeof(err)) == 0, "dump: %s", err);
  for (int g = 0; d != NULL && g < 8; ++g) {
    const int want = g < nranks ? nranks - 1 - g : -1; /* GPUs no rank uses carry no rank */
    EXPECT(dumped_rank(d, h200[g]) == want, "GPU %s: rank %d in the dump, %d wanted", h200[g], dumped_rank(d, h200[g]),
           want);
  }
  topo_xml_free(d);

  /* NVLink-bridged pairs: at 4 ranks (pairs 0-2 and 1-3) both pairs adjacent in every ring; at 2 ranks
   * on the two unbridged GPUs of one switch, the partners' links are dropped with the partners */
  static const char *const bridged[] = {"0000:17:00.0", "0000:18:00.0", "0000:65:00.0", "0000:66:00.0"};
  compute(comm, bridge, NULL, bridged, &rings, why, sizeof(why));
  EXPECT(why[0] == '\0', "searched: %s", why);
  for (int k = 0; nranks == 4 && k < rings.nrings; ++k) {
    int pos[4];
    for (int i = 0; i < 4; ++i) pos[coll_gpu_ring(&rings, k)[i]] = i;
    for (int a = 0; a < 2; ++a) {
      const int gap = abs(pos[a] - pos[a + 2]);
      EXPECT(gap == 1 || gap == 3, "ring %d: ranks %d and %d (bridged) not adjacent", k, a, a + 2);
    }
  }

  /* a GPU the topology lacks: rank order, and the reason names it */
  const char *unknown[4];
  for (int r = 0; r < nranks; ++r) unknown[r] = r == 1 ? "0000:ee:00.0" : h200[r];
  compute(comm, nvswitch, NULL, unknown, &rings, why, sizeof(why));
  EXPECT(is_rank_order(&rings) && strstr(why, "0000:ee:00.0") != NULL, "unknown GPU: \"%s\"", why);

  /* two ranks on one GPU */
  const char *shared[4];
  for (int r = 0; r < nranks; ++r) shared[r] = h200[r == 1 ? 0 : r];
  compute(comm, nvswitch, NULL, shared, &rings, why, sizeof(why));
  EXPECT(is_rank_order(&rings) && strstr(why, "share") != NULL, "shared GPU: \"%s\"", why);

  /* ranks that disagree (rank 0 told another mapping of ranks to GPUs) all fall back to rank order */
  compute(comm, nvswitch, NULL, rank == 0 ? h200 : rev, &rings, why, sizeof(why));
  EXPECT(is_rank_order(&rings) && strstr(why, "different rings") != NULL, "disagreement: \"%s\"", why);

  /* a malformed file: reported with its line, the probe used instead (no GPU here, or not these) */
  if (rank == 0) {
    FILE *f = fopen(bad, "w");
    fputs("<system version=\"1\">\n  <cpu numaid=\"0\">\n</system>\n", f);
    fclose(f);
  }
  MPI_Barrier(comm);
  warnings = 0;
  compute(comm, bad, NULL, h200, &rings, why, sizeof(why));
  char line3[1100];
  snprintf(line3, sizeof(line3), "%s:3:", bad);
  EXPECT(warnings == 1 && strstr(last_warning, line3) != NULL, "%d warnings, last \"%s\"", warnings, last_warning);
  EXPECT(is_rank_order(&rings), "the probe does not hold the fixture's GPUs");

  /* a dump file that cannot be written: reported by rank 0 */
  warnings = 0;
  compute(comm, nvswitch, "/nonexistent-dir/dump.xml", h200, &rings, why, sizeof(why));
  EXPECT(warnings == (rank == 0), "%d warnings for an unwritable dump", warnings);

  if (rank == 0) {
    unlink(dump);
    unlink(bad);
    rmdir(tmpl);
  }
  coll_gpu_rings_free(&rings);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0) printf("test_rings: %d ranks, %d failed\n", nranks, total);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
