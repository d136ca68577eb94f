/*
 * The engine's bootstrap and path agreement over a real MPI job, without a GPU: the unique id, the
 * peer exchange, the shared-memory agreement against MPI_Allreduce(MPI_BOR) on fresh random bits, its
 * segment's lifetime (unlinked once mapped, nothing left behind), its wait for a late rank: it
 * waits, reports the rank once after the timeout, runs the caller's progress hook meanwhile, and gives
 * the right answer, and its window: a rank
 * posting without waiting (coll_gpu_agree_try_post) gets exactly COLL_GPU_AGREE_WINDOW agreements ahead of
 * a sleeping one, a rank that only posts runs ahead as far and then waits, and every answer is still the
 * OR of that agreement's bits.
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine/agree.h"
#include "engine/bootstrap.h"
#include "test/mpi/mpi_bootstrap.h"

static int rank, nranks, failures;

/* The watchdog's report: how often, and whether it named rank 1 alone. */
static int reports, named_rank1;
/* The waits' progress hook: how often it ran. */
static long progress_calls;
static void count_progress(void) { ++progress_calls; }
static void report(void *ctx, const uint8_t *late) {
  (void)ctx;
  ++reports;
  named_rank1 = late[1] == 1;
  for (int r = 0; r < nranks; ++r)
    if (r != 1 && late[r]) named_rank1 = 0;
}

/* The window: 3 windows of agreements on fresh random bits. Rank 0 posts without waiting and reads its
 * answers later (as nonblocking calls will), rank 2 only posts (a rank without CUDA), the others agree
 * one by one; rank 1 starts 0.3 s late, so rank 0 and rank 2 fill the window ahead of it: rank 0 with
 * its own unread agreements, rank 2 with agreements rank 1 has not read. */
static void window_phase(coll_gpu_agree_t *a, MPI_Comm comm, const coll_gpu_agree_watch_t *watch) {
  enum { K = 3 * COLL_GPU_AGREE_WINDOW };
  uint32_t bits[K], got[K], *every = malloc(sizeof(bits) * nranks);
  for (int i = 0; i < K; ++i) bits[i] = (uint32_t)(rand() & 0xffff);
  const uint64_t first = coll_gpu_agree_last(a) + 1;
  int failed_at = -1;
  MPI_Barrier(comm);
  if (rank == 0) {
    int posted = 0, answered = 0;
    while (answered < K) {
      uint64_t n;
      if (posted < K && coll_gpu_agree_try_post(a, bits[posted], 1, &n)) {
        EXPECT(n == first + (uint64_t)posted, "agreement %llu posted as %llu", (unsigned long long)(first + posted),
               (unsigned long long)n);
        ++posted;
        continue;
      }
      if (posted < K && failed_at < 0) {
        failed_at = posted;
        /* the window is full of this rank's own unread agreements (none can be read before rank 1 posts),
         * and a blocking agreement now would wait for this rank itself */
        uint8_t late[64] = {0}, missing[64] = {0}, missing2[64] = {0};
        EXPECT(!coll_gpu_agree_late(a, first + posted, 1, late, missing), "nobody is gone");
        EXPECT(late[0] == 1 && (nranks < 2 || late[1] == 1), "ranks 0 and 1 hold the window up (late %d %d)", late[0],
               nranks > 1 ? late[1] : -1);
        uint32_t all;
        EXPECT(coll_gpu_agree(a, 1, watch, &all, missing2) == COLL_GPU_INTERNAL_ERROR,
               "a blocking agreement behind this rank's own unread ones fails at once");
        EXPECT(coll_gpu_agree_last(a) == first + (uint64_t)posted - 1, "and posts nothing");
      }
      if (answered < posted && coll_gpu_agree_test(a, first + (uint64_t)answered, &got[answered])) ++answered;
    }
    EXPECT(nranks < 2 || failed_at == COLL_GPU_AGREE_WINDOW, "the window filled after %d posts, not %d", failed_at,
           COLL_GPU_AGREE_WINDOW);
  } else if (rank == 2) {
    /* it reads nothing, so only the others' reads hold it: rank 1's, asleep */
    for (int i = 0; i < K; ++i) {
      uint8_t missing[64] = {0};
      uint64_t n;
      if (coll_gpu_agree_try_post(a, bits[i], 0, &n)) continue;
      if (failed_at < 0) {
        failed_at = i;
        uint8_t late[64] = {0};
        EXPECT(!coll_gpu_agree_late(a, first + i, 1, late, missing), "nobody is gone");
        EXPECT(late[1] == 1 && late[2] == 0, "rank 1 holds the window up, not rank 2 (late %d %d)", late[1], late[2]);
      }
      EXPECT(coll_gpu_agree_post(a, bits[i], watch, missing) == COLL_GPU_SUCCESS, "post-only agreement %d", i);
    }
    EXPECT(failed_at == COLL_GPU_AGREE_WINDOW, "the window filled after %d posts, not %d", failed_at,
           COLL_GPU_AGREE_WINDOW);
  } else {
    if (rank == 1) usleep(300000);
    for (int i = 0; i < K; ++i) {
      uint8_t missing[64] = {0};
      EXPECT(coll_gpu_agree(a, bits[i], watch, &got[i], missing) == COLL_GPU_SUCCESS, "agreement %d", i);
    }
  }
  MPI_Allgather(bits, K, MPI_UINT32_T, every, K, MPI_UINT32_T, comm);
  int wrong = 0;
  for (int i = 0; i < K && rank != 2; ++i) {
    uint32_t ref = 0;
    for (int r = 0; r < nranks; ++r) ref |= every[r * K + i];
    wrong += got[i] != ref;
  }
  EXPECT(wrong == 0, "%d of %d answers in the window phase differ from the OR", wrong, K);
  free(every);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  coll_gpu_bootstrap_t b = {rank, nranks, &comm, mpi_allgather, mpi_bcast, mpi_barrier};

  /* the unique id: drawn by rank 0, the same everywhere, fresh per draw */
  uint8_t id[COLL_GPU_UNIQUE_ID_BYTES], id2[COLL_GPU_UNIQUE_ID_BYTES], root[COLL_GPU_UNIQUE_ID_BYTES];
  EXPECT(coll_gpu_unique_id(&b, id) == COLL_GPU_SUCCESS, "unique id");
  EXPECT(coll_gpu_unique_id(&b, id2) == COLL_GPU_SUCCESS, "unique id");
  memcpy(root, id, sizeof(id));
  MPI_Bcast(root, sizeof(root), MPI_BYTE, 0, comm);
  EXPECT(memcmp(root, id, sizeof(id)) == 0, "every rank has rank 0's id");
  EXPECT(memcmp(id, id2, sizeof(id)) != 0, "two draws differ");

  /* the peer exchange */
  coll_gpu_peer_t me = {.host = coll_gpu_host_id(), .pid = getpid(), .device = rank, .ok = 1};
  coll_gpu_peer_t *peers = calloc(nranks, sizeof(*peers));
  EXPECT(coll_gpu_peers_exchange(&b, &me, peers) == COLL_GPU_SUCCESS, "exchange");
  for (int r = 0; r < nranks; ++r) {
    int pid = peers[r].pid;
    MPI_Bcast(&pid, 1, MPI_INT, r, comm);
    EXPECT(pid == peers[r].pid && peers[r].device == r, "peer %d's info", r);
  }
  for (int r = 0; r < nranks; ++r) EXPECT(peers[r].host == me.host, "rank %d on another host", r);

  /* the agreement segment: mapped by all, then gone from the namespace */
  coll_gpu_agree_t *a = NULL;
  char why[256] = "";
  EXPECT(coll_gpu_agree_create(&b, id, &a, why, sizeof(why)) == COLL_GPU_SUCCESS, "create: %s", why);
  if (a != NULL) {
    int fd = shm_open(coll_gpu_agree_name(a), O_RDONLY, 0);
    EXPECT(fd < 0 && errno == ENOENT, "segment %s unlinked once mapped", coll_gpu_agree_name(a));
    if (fd >= 0) close(fd);
    /* agreements against MPI_Allreduce(MPI_BOR) */
    srand((unsigned)(time(NULL) ^ (rank * 7919)));
    coll_gpu_agree_watch_t watch = {{0, 300000000ULL, count_progress}, report, NULL};
    int wrong = 0;
    for (int i = 0; i < 5000; ++i) {
      uint32_t bits = (uint32_t)(rand() % 8), all = 0, ref = 0;
      uint8_t missing[64] = {0};
      if (coll_gpu_agree(a, bits, &watch, &all, missing) != COLL_GPU_SUCCESS) ++wrong;
      MPI_Allreduce(&bits, &ref, 1, MPI_UINT32_T, MPI_BOR, comm);
      if (all != ref) ++wrong;
    }
    EXPECT(wrong == 0, "%d of 5000 agreements differ from MPI_BOR", wrong);
    EXPECT(reports == 0, "no report when nobody is late (%d)", reports);
    /* late is not dead: rank 1 comes 1.5 s late, 5 times the watchdog's 0.3 s; the others wait for it,
     * report it once, and agree on its bits */
    if (nranks > 1) {
      uint32_t mine = 1u << (rank % 3), all = 0, ref = 0;
      uint8_t missing[64] = {0};
      if (rank == 1) usleep(1500000);
      progress_calls = 0;
      double t0 = MPI_Wtime();
      coll_gpu_status_t rc = coll_gpu_agree(a, mine, &watch, &all, missing);
      double waited = MPI_Wtime() - t0;
      MPI_Allreduce(&mine, &ref, 1, MPI_UINT32_T, MPI_BOR, comm);
      EXPECT(rc == COLL_GPU_SUCCESS && all == ref, "late rank: rc %d, 0x%x against 0x%x", rc, all, ref);
      if (rank != 1) {
        EXPECT(waited >= 1.0, "waited %.2f s for the late rank", waited);
        EXPECT(reports == 1 && named_rank1, "%d report(s), rank 1 %snamed alone", reports, named_rank1 ? "" : "not ");
        /* at least every 10 us once past the first polls, and every pause after 1 ms (sleeps of 50 us) */
        EXPECT(progress_calls >= 1000, "the wait ran the progress hook %ld times in %.2f s", progress_calls, waited);
      }
    }
    window_phase(a, comm, &watch);
    coll_gpu_agree_destroy(a);
  }
  /* a second segment from the same id cannot be created while the name is free: it can (unlinked) */
  coll_gpu_agree_t *again = NULL;
  EXPECT(coll_gpu_agree_create(&b, id, &again, why, sizeof(why)) == COLL_GPU_SUCCESS, "the name is free again: %s",
         why);
  coll_gpu_agree_destroy(again);

  int all_failures = 0;
  MPI_Reduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, 0, comm);
  if (rank == 0) printf("test_agree: %d ranks, %d failed\n", nranks, all_failures);
  free(peers);
  MPI_Comm_free(&comm);
  MPI_Finalize();
  return all_failures == 0 ? 0 : 1;
}
