/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The SHM transport's set-up (engine/transport.h) with ranks as threads of this process and pins of a test's
 * (the memory's host address as its device view): the scratch segments each rank makes, the peers of its node it
 * maps, what a rank that cannot pin does to its peers, and that nothing stays in /dev/shm. The kernels' side (the
 * GPUs' stores into pinned host memory) runs in the GPU cases colls_shm_np*.
 */
#include <dirent.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/transport.h"

namespace {

constexpr int kMaxRanks = 8;
constexpr size_t kMaxEntry = 64;

// An allgather between the threads of one test: each writes its part between two barriers and reads them all.
struct World {
  int n = 0;
  pthread_barrier_t bar;
  char parts[kMaxRanks * kMaxEntry];
};
struct Rank {
  World *w;
  int rank;
  int calls = 0;
  bool pin_fails = false;
  int pinned = 0, unpinned = 0;
};
int allgather(void *ctx, const void *send, void *recv, size_t bytes) {
  Rank *r = (Rank *)ctx;
  ++r->calls;
  if (bytes > kMaxEntry) return 1;
  pthread_barrier_wait(&r->w->bar);  // every rank has read the last call's parts
  memcpy(r->w->parts + (size_t)r->rank * bytes, send, bytes);
  pthread_barrier_wait(&r->w->bar);
  memcpy(recv, r->w->parts, (size_t)r->w->n * bytes);
  return 0;
}
int bcast(void *ctx, void *, size_t, int) {
  ++((Rank *)ctx)->calls;
  return 1;  // not one of SHM's calls
}
int barrier(void *ctx) { return bcast(ctx, nullptr, 0, 0); }

coll_gpu_status_t fake_pin(void *ctx, void *host, size_t, void **dev) {
  Rank *r = (Rank *)ctx;
  if (r->pin_fails) return coll_gpu_kernels_fail(COLL_GPU_CUDA_ERROR, "out of memory (a stand-in pin)");
  ++r->pinned;
  *dev = host;
  return COLL_GPU_SUCCESS;
}
coll_gpu_status_t fake_unpin(void *ctx, void *) {
  ++((Rank *)ctx)->unpinned;
  return COLL_GPU_SUCCESS;
}

// This process's scratch segments in /dev/shm.
int segments_here() {
  const std::string prefix = "coll_gpu_scratch." + std::to_string(getpid()) + ".";
  int n = 0;
  if (DIR *d = opendir("/dev/shm")) {
    while (const dirent *e = readdir(d)) n += strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    closedir(d);
  }
  return n;
}

constexpr size_t kScratch = 10000;  // not a whole number of pages

struct Job {
  World world;
  Rank ranks[kMaxRanks];
  uint16_t node[kMaxRanks];
  uint8_t linked[kMaxRanks][kMaxRanks];
  coll_gpu_status_t own[kMaxRanks], connected[kMaxRanks];
  std::string why_own[kMaxRanks], why_connect[kMaxRanks];
  int left_after_connect[kMaxRanks];
  // what each rank read at the start of each peer's scratch through its view: -1 not mapped
  int seen[kMaxRanks][kMaxRanks];
};
struct Arg {
  Job *job;
  int rank;
};

void *run_rank(void *p) {
  Arg *a = (Arg *)p;
  Job &j = *a->job;
  const int me = a->rank, n = j.world.n;
  coll_gpu_meminfo_t mem;
  memset(&mem, 0, sizeof(mem));
  mem.device = -1;  // no context to enter: the pins are the test's
  Rank &r = j.ranks[me];
  const coll_gpu_bootstrap_t b = {me, n, &r, allgather, bcast, barrier};
  {
    coll_gpu::Shm shm;
    if (!shm.alloc(me, n, &mem, coll_gpu::PinOps{&r, fake_pin, fake_unpin})) return nullptr;
    char why[256] = "";
    j.own[me] = shm.set_own(kScratch, why, sizeof(why));
    j.why_own[me] = why;
    if (j.own[me] == COLL_GPU_SUCCESS) memset(shm.view()[me], 'a' + me, kScratch);
    why[0] = '\0';
    const coll_gpu::TransportLinks links = {&b, nullptr, j.node, j.linked[me]};
    j.connected[me] = shm.connect(links, why, sizeof(why));
    j.why_connect[me] = why;
    pthread_barrier_wait(&j.world.bar);  // every rank is past its connect: the segments are unlinked
    j.left_after_connect[me] = segments_here();
    for (int q = 0; q < n; ++q) {
      const void *v = shm.view()[q];
      j.seen[me][q] = v == nullptr ? -1 : ((const unsigned char *)v)[kScratch - 1];
    }
    pthread_barrier_wait(&j.world.bar);  // every rank has read before any unmaps
  }
  return nullptr;
}

void run_job(Job *j, int n) {
  j->world.n = n;
  ASSERT_EQ(0, pthread_barrier_init(&j->world.bar, nullptr, (unsigned)n));
  pthread_t t[kMaxRanks];
  Arg args[kMaxRanks];
  for (int r = 0; r < n; ++r) {
    j->ranks[r].w = &j->world;
    j->ranks[r].rank = r;
    args[r] = Arg{j, r};
    ASSERT_EQ(0, pthread_create(&t[r], nullptr, run_rank, &args[r]));
  }
  for (int r = 0; r < n; ++r) pthread_join(t[r], nullptr);
  pthread_barrier_destroy(&j->world.bar);
}

}  // namespace

// Two nodes of two ranks: each rank maps the scratch of the peer of its node it connects to (and nobody's of the
// other node, NET's), sees the bytes that peer wrote into its own, makes two collective calls, and once every rank
// is past its connect no segment is left on the host; every pin is undone when the transport goes.
TEST(ShmTransport, RanksMapTheirNodePeersScratchAndLeaveNothingOnTheHost) {
  Job j = {};
  const int n = 4;
  const uint16_t node[n] = {0, 0, 2, 2};
  for (int r = 0; r < n; ++r) {
    j.node[r] = node[r];
    for (int q = 0; q < n; ++q) j.linked[r][q] = q != r;
  }
  run_job(&j, n);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(COLL_GPU_SUCCESS, j.own[r]) << j.why_own[r];
    EXPECT_EQ(COLL_GPU_SUCCESS, j.connected[r]) << j.why_connect[r];
    EXPECT_EQ(2, j.ranks[r].calls) << "rank " << r;
    EXPECT_EQ(0, j.left_after_connect[r]) << "rank " << r;
    EXPECT_EQ(2, j.ranks[r].pinned) << "rank " << r;  // its own and its node peer's
    EXPECT_EQ(j.ranks[r].pinned, j.ranks[r].unpinned) << "rank " << r;
    for (int q = 0; q < n; ++q) {
      const int want = node[q] == node[r] ? 'a' + q : -1;
      EXPECT_EQ(want, j.seen[r][q]) << "rank " << r << " reading rank " << q;
    }
  }
  EXPECT_EQ(0, segments_here());
}

// A rank that cannot pin its scratch makes the same collective calls as its peers; the peers fail their connect
// naming it, it fails its own, and nothing is left on the host.
TEST(ShmTransport, ARankThatCannotPinFailsWithItsPeersAndLeavesNothing) {
  Job j = {};
  const int n = 3;
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q) j.linked[r][q] = q != r;  // one node
  j.ranks[1].pin_fails = true;
  run_job(&j, n);
  EXPECT_NE(COLL_GPU_SUCCESS, j.own[1]);
  EXPECT_NE(std::string::npos, j.why_own[1].find("cannot pin the scratch's shared memory")) << j.why_own[1];
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(2, j.ranks[r].calls) << "rank " << r;
    EXPECT_NE(COLL_GPU_SUCCESS, j.connected[r]) << "rank " << r;
    EXPECT_EQ(0, j.left_after_connect[r]) << "rank " << r;
    EXPECT_EQ(j.ranks[r].pinned, j.ranks[r].unpinned) << "rank " << r;
    if (r != 1) {
      EXPECT_NE(std::string::npos, j.why_connect[r].find("rank 1 could not make or pin its scratch"))
          << j.why_connect[r];
    }
  }
  EXPECT_NE(std::string::npos, j.why_connect[1].find("cannot pin a peer's scratch")) << j.why_connect[1];
  EXPECT_EQ(0, segments_here());
}
