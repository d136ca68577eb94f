/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The host side of the zero-copy calls: the IPC caches (engine/ipc_cache.h) over stand-in IPC calls that record
// what is exported, opened and closed, and the node's mailbox (engine/mailbox.h) between threads of this process.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "engine/ipc_cache.h"
#include "engine/mailbox.h"
#include "engine/shm_segment.h"
#include "engine/zero_copy.h"

namespace {

using coll_gpu::IpcExports;
using coll_gpu::IpcImports;
using coll_gpu::IpcOps;
using coll_gpu::kIpcHandleBytes;

// Stand-in IPC: a handle names its base; open hands out a fresh address per open, and remembers which handle
// each open mapping came from; errors on demand.
struct FakeIpc {
  int gets = 0;
  std::map<void *, std::vector<unsigned char>> open;  // mapping -> handle
  uintptr_t next = 0x100000;
  coll_gpu_status_t fail_open = COLL_GPU_SUCCESS;
  int opened = 0;
  static coll_gpu_status_t get(void *ctx, void *base, unsigned char *h) {
    auto *f = (FakeIpc *)ctx;
    ++f->gets;
    memset(h, 0, kIpcHandleBytes);
    memcpy(h, &base, sizeof(base));
    return COLL_GPU_SUCCESS;
  }
  static coll_gpu_status_t opens(void *ctx, const unsigned char *h, void **mapped) {
    auto *f = (FakeIpc *)ctx;
    if (f->fail_open != COLL_GPU_SUCCESS) return f->fail_open;
    *mapped = (void *)(f->next += 0x1000);
    ++f->opened;
    f->open[*mapped] = std::vector<unsigned char>(h, h + kIpcHandleBytes);
    return COLL_GPU_SUCCESS;
  }
  static coll_gpu_status_t close(void *ctx, void *mapped) {
    auto *f = (FakeIpc *)ctx;
    return f->open.erase(mapped) == 1 ? COLL_GPU_SUCCESS : COLL_GPU_INVALID_INPUT;
  }
  IpcOps ops() { return IpcOps{this, get, opens, close}; }
};

std::vector<unsigned char> handle_of(uintptr_t base) {
  std::vector<unsigned char> h(kIpcHandleBytes, 0);
  memcpy(h.data(), &base, sizeof(base));
  return h;
}

// An allocation is exported once, by its id: sub-allocations of it, and later calls, take the kept handle; a new
// id at the same base (freed and allocated again) is exported again.
TEST(IpcCache, ExportsOncePerAllocation) {
  FakeIpc f;
  IpcExports x;
  unsigned char h[kIpcHandleBytes];
  ASSERT_EQ(COLL_GPU_SUCCESS, x.handle(f.ops(), 7, (void *)0x5000, h));
  EXPECT_EQ(handle_of(0x5000), std::vector<unsigned char>(h, h + kIpcHandleBytes));
  for (int i = 0; i < 10; ++i) ASSERT_EQ(COLL_GPU_SUCCESS, x.handle(f.ops(), 7, (void *)0x5000, h));
  EXPECT_EQ(1, f.gets);
  ASSERT_EQ(COLL_GPU_SUCCESS, x.handle(f.ops(), 8, (void *)0x5000, h));
  EXPECT_EQ(2, f.gets);
  // more allocations than entries: the least recently used is dropped, and exported again when it comes back
  for (unsigned long long id = 100; id < 100 + IpcExports::kEntries; ++id)
    ASSERT_EQ(COLL_GPU_SUCCESS, x.handle(f.ops(), id, (void *)(uintptr_t)(id << 12), h));
  EXPECT_EQ(IpcExports::kEntries, x.count());
  const int before = f.gets;
  ASSERT_EQ(COLL_GPU_SUCCESS, x.handle(f.ops(), 7, (void *)0x5000, h));
  EXPECT_EQ(before + 1, f.gets);
  EXPECT_EQ(handle_of(0x5000), std::vector<unsigned char>(h, h + kIpcHandleBytes));
}

// A peer's allocation is mapped once, by (peer, id): the same id of another peer, or another id of the same peer
// at the same base, gets a mapping of its own, opened from its own handle.
TEST(IpcCache, MapsOncePerPeerAndAllocation) {
  FakeIpc f;
  IpcImports m(1ul << 30);
  void *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  const auto h1 = handle_of(0x1000), h2 = handle_of(0x2000), h3 = handle_of(0x1000);
  ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 1, 5, 4096, h1.data(), 1, &a));
  ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 1, 5, 4096, h1.data(), 2, &b));
  EXPECT_EQ(a, b);
  ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 2, 5, 4096, h2.data(), 2, &c));
  EXPECT_NE(a, c);
  ASSERT_EQ(COLL_GPU_SUCCESS,
            m.map(f.ops(), 1, 6, 4096, h3.data(), 3, &d));  // freed and allocated again at the same base
  EXPECT_NE(a, d);
  EXPECT_EQ(3u, f.open.size());
  EXPECT_EQ(h2, f.open[c]);
  EXPECT_EQ(3, m.count());
  EXPECT_EQ(3u * 4096, m.bytes());
  m.clear(f.ops());
  EXPECT_TRUE(f.open.empty());
  EXPECT_EQ(0, m.count());
  EXPECT_EQ(0u, m.bytes());
}

// Past the bound the least recently used mappings close first, never one of the current call (which may pass the
// bound); an open that fails maps nothing; with every entry the current call's, unavailable.
TEST(IpcCache, BoundClosesLeastRecentlyUsedOfOtherCalls) {
  FakeIpc f;
  const size_t mib = 1 << 20;
  IpcImports m(4 * mib);
  void *p[8];
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), i, 10 + i, mib, handle_of(i).data(), 1, &p[i]));
  EXPECT_EQ(4u, f.open.size());
  // call 2 uses 0 and 2 again, then needs a fifth: 1 (least recently used, not call 2's) goes
  void *q = nullptr;
  ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 0, 10, mib, handle_of(0).data(), 2, &q));
  ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 2, 12, mib, handle_of(2).data(), 2, &q));
  ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 4, 14, mib, handle_of(4).data(), 2, &p[4]));
  EXPECT_EQ(0u, f.open.count(p[1]));
  EXPECT_EQ(1u, f.open.count(p[0]));
  EXPECT_EQ(1u, f.open.count(p[3]));
  EXPECT_EQ(4u * mib, m.bytes());
  // a call larger than the bound keeps its own mappings open
  for (int i = 0; i < 6; ++i)
    ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), 10 + i, 20 + i, mib, handle_of(20 + i).data(), 3, &q));
  EXPECT_EQ(6, m.count());
  EXPECT_EQ(6u * mib, m.bytes());
  // a failed open leaves nothing behind
  f.fail_open = COLL_GPU_CUDA_ERROR;
  EXPECT_EQ(COLL_GPU_CUDA_ERROR, m.map(f.ops(), 30, 40, mib, handle_of(40).data(), 4, &q));
  EXPECT_EQ((size_t)m.count(), f.open.size());
  f.fail_open = COLL_GPU_SUCCESS;
  // every entry the current call's
  IpcImports full(1ul << 40);
  for (int i = 0; i < IpcImports::kEntries; ++i)
    ASSERT_EQ(COLL_GPU_SUCCESS, full.map(f.ops(), i % 8, 1000 + i, 1, handle_of(1000 + i).data(), 9, &q));
  EXPECT_EQ(COLL_GPU_UNAVAILABLE, full.map(f.ops(), 0, 5000, 1, handle_of(5000).data(), 9, &q));
  ASSERT_EQ(COLL_GPU_SUCCESS,
            full.map(f.ops(), 0, 5000, 1, handle_of(5000).data(), 10, &q));  // the next call may evict
  EXPECT_EQ(IpcImports::kEntries, full.count());
  full.clear(f.ops());
  m.clear(f.ops());
  EXPECT_TRUE(f.open.empty());
}

// Drawn calls against a reference of what must be mapped: every answer is the mapping of that peer's allocation
// made from its handle, no mapping is closed while its call lasts, and after each open the bytes mapped pass the
// bound only by the current call's (the bound is kept as mappings open).
TEST(IpcCache, DrawnCallsKeepTheRules) {
  FakeIpc f;
  std::mt19937_64 rng(std::random_device{}());
  const size_t bound = 64 << 10;
  IpcImports m(bound);
  for (uint64_t call = 1; call <= 2000; ++call) {
    std::set<void *> mine;
    size_t call_bytes = 0;
    const int peers = 1 + (int)(rng() % 7);
    for (int k = 0; k < peers; ++k) {
      const int peer = (int)(rng() % 8);
      const unsigned long long id = rng() % 24;
      const size_t bytes = (1 + (size_t)(peer * 31 + id) % 16) << 10;  // an allocation's size is its own
      const auto h = handle_of((uintptr_t)peer << 20 | id);
      void *got = nullptr;
      const int opened = f.opened;
      ASSERT_EQ(COLL_GPU_SUCCESS, m.map(f.ops(), peer, id, bytes, h.data(), call, &got));
      ASSERT_EQ(1u, f.open.count(got));
      ASSERT_EQ(h, f.open[got]);
      for (void *x : mine) ASSERT_EQ(1u, f.open.count(x)) << "a mapping of the current call was closed";
      if (mine.insert(got).second) call_bytes += bytes;
      if (f.opened > opened) {
        ASSERT_LE(m.bytes(), bound + call_bytes);
      }
      ASSERT_EQ((size_t)m.count(), f.open.size());
    }
  }
  m.clear(f.ops());
  EXPECT_TRUE(f.open.empty());
}

// ------------------------------------------------------------------ the mailbox

std::string mbox_name() {
  static int k = 0;
  return "/coll_gpu_mbox_test." + std::to_string(getpid()) + "." + std::to_string(++k);
}

// n ranks' mailboxes (objects of this process): made by rank 0 under a fresh name, opened by the others, then
// unlinked, as Mailbox::create does. The name, now gone from the host.
std::string mailboxes(coll_gpu::Mailbox *box, int n) {
  const std::string name = mbox_name();
  char why[256];
  EXPECT_EQ(COLL_GPU_SUCCESS, box[0].make(name.c_str(), n, 0, why, sizeof(why))) << why;
  for (int r = 1; r < n; ++r) EXPECT_EQ(COLL_GPU_SUCCESS, box[r].open(name.c_str(), n, r, why, sizeof(why))) << why;
  coll_gpu::Mailbox::unlink(name.c_str());
  return name;
}

// Made by one rank and opened by the others, unlinked at once: each rank reads the others' messages as posted,
// and none it has not posted yet.
TEST(Mailbox, PostedMessagesReachEveryRank) {
  const int n = 4;
  coll_gpu::Mailbox box[n];
  const std::string name = mailboxes(box, n);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(box[r].ready());
  char why[256];
  coll_gpu::Mailbox late;
  EXPECT_NE(COLL_GPU_SUCCESS, late.open(name.c_str(), n, 1, why, sizeof(why)));  // nothing left on the host
  uint64_t w[coll_gpu::kMailWords];
  for (uint64_t msg = 1; msg <= 3 * coll_gpu::kMailSlots; ++msg) {
    for (int r = 0; r < n; ++r) EXPECT_FALSE(box[(r + 1) % n].read(r, msg, w));
    for (int r = 0; r < n; ++r) {
      uint64_t mine[coll_gpu::kMailWords];
      for (int k = 0; k < coll_gpu::kMailWords; ++k) mine[k] = msg * 1000 + (uint64_t)r * 100 + k;
      box[r].post(msg, mine);
    }
    for (int r = 0; r < n; ++r)
      for (int q = 0; q < n; ++q) {
        ASSERT_TRUE(box[q].read(r, msg, w));
        for (int k = 0; k < coll_gpu::kMailWords; ++k) ASSERT_EQ(msg * 1000 + (uint64_t)r * 100 + k, w[k]);
      }
  }
  // a rank opening a mailbox of another size is refused
  const std::string other = mbox_name();
  coll_gpu::Mailbox a, b;
  ASSERT_EQ(COLL_GPU_SUCCESS, a.make(other.c_str(), 2, 0, why, sizeof(why)));
  EXPECT_NE(COLL_GPU_SUCCESS, b.open(other.c_str(), 3, 1, why, sizeof(why)));
  coll_gpu::Mailbox::unlink(other.c_str());
}

// A sweep of one kind of segment (the SHM transport's scratch, the mailbox) leaves the other kinds alone, and a
// segment opened at another size than it was made is refused.
TEST(ShmSegment, SweepIsByKindAndOpenChecksTheSize) {
  const unsigned k = 4000000001u;  // beyond any count of segments a process makes
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char a[64], b[64], why[256];
    coll_gpu::ShmSegment::name_for("scratch", (int)getpid(), k, a, sizeof(a));
    coll_gpu::ShmSegment::name_for("mbox", (int)getpid(), k, b, sizeof(b));
    coll_gpu::ShmSegment x, y;
    const bool ok = x.make(a, 4096, "a scratch", why, sizeof(why)) == COLL_GPU_SUCCESS &&
                    y.make(b, 8192, "a mailbox", why, sizeof(why)) == COLL_GPU_SUCCESS;
    if (ok) memset(x.base(), 0x5a, 4096);
    _exit(ok ? 0 : 1);  // and never unlinks them
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char scratch[64], mbox[64], why[256];
  coll_gpu::ShmSegment::name_for("scratch", (int)child, k, scratch, sizeof(scratch));
  coll_gpu::ShmSegment::name_for("mbox", (int)child, k, mbox, sizeof(mbox));
  coll_gpu::ShmSegment probe;
  EXPECT_NE(COLL_GPU_SUCCESS, probe.open(scratch, 8192, "a scratch", why, sizeof(why)));  // not its size
  EXPECT_NE(nullptr, strstr(why, "is not 8192 bytes long")) << why;
  ASSERT_EQ(COLL_GPU_SUCCESS, probe.open(scratch, 4096, "a scratch", why, sizeof(why))) << why;
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(0x5a, ((const unsigned char *)probe.base())[i]) << i;
  probe.reset();
  EXPECT_GE(coll_gpu::ShmSegment::sweep("scratch"), 1);
  EXPECT_NE(COLL_GPU_SUCCESS, probe.open(scratch, 4096, "a scratch", why, sizeof(why)));      // gone
  EXPECT_EQ(COLL_GPU_SUCCESS, probe.open(mbox, 8192, "a mailbox", why, sizeof(why))) << why;  // another kind
  probe.reset();
  EXPECT_GE(coll_gpu::ShmSegment::sweep("mbox"), 1);
  EXPECT_NE(COLL_GPU_SUCCESS, probe.open(mbox, 8192, "a mailbox", why, sizeof(why)));
  coll_gpu::ShmSegment::unlink(scratch);
  coll_gpu::ShmSegment::unlink(mbox);
}

// A segment larger than /dev/shm can hold is refused when it is made, with the reason, and nothing is left.
TEST(ShmSegment, ASegmentThatDoesNotFitIsRefusedAtOnce) {
  char name[64], why[256] = "";
  coll_gpu::ShmSegment::name_for("scratch", (int)getpid(), 4000000002u, name, sizeof(name));
  coll_gpu::ShmSegment big, probe;
  ASSERT_NE(COLL_GPU_SUCCESS, big.make(name, (size_t)1 << 44, "a scratch", why, sizeof(why)));  // 16 TiB
  EXPECT_EQ(nullptr, big.base());
  EXPECT_NE(nullptr, strstr(why, "sizing a scratch")) << why;
  EXPECT_NE(COLL_GPU_SUCCESS, probe.open(name, (size_t)1 << 44, "a scratch", why, sizeof(why)));  // unlinked
}

// A segment whose maker ended before unlinking it (a rank 0 killed inside Mailbox::create) is unlinked by the next
// sweep; one of a live process is not.
TEST(Mailbox, SweepUnlinksOnlyTheSegmentsOfEndedProcesses) {
  const unsigned k = 4000000000u;  // beyond any count of segments a process makes
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char name[64], why[256];
    coll_gpu::Mailbox::name_for((int)getpid(), k, name, sizeof(name));
    coll_gpu::Mailbox box;
    _exit(box.make(name, 2, 0, why, sizeof(why)) == COLL_GPU_SUCCESS ? 0 : 1);  // and never unlinks it
  }
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char left[64], mine[64], why[256];
  coll_gpu::Mailbox::name_for((int)child, k, left, sizeof(left));
  coll_gpu::Mailbox::name_for((int)getpid(), k, mine, sizeof(mine));
  coll_gpu::Mailbox live, probe;
  ASSERT_EQ(COLL_GPU_SUCCESS, live.make(mine, 2, 0, why, sizeof(why))) << why;
  ASSERT_EQ(COLL_GPU_SUCCESS, probe.open(left, 2, 1, why, sizeof(why))) << why;  // left behind
  EXPECT_GE(coll_gpu::Mailbox::sweep(), 1);
  EXPECT_NE(COLL_GPU_SUCCESS, probe.open(left, 2, 1, why, sizeof(why)));         // gone
  EXPECT_EQ(COLL_GPU_SUCCESS, probe.open(mine, 2, 1, why, sizeof(why))) << why;  // still there
  coll_gpu::Mailbox::unlink(mine);
  coll_gpu::Mailbox::unlink(left);
}

// Threads as ranks, each posting its messages and waiting for every peer's before the next, as the zero-copy
// calls do: every message read is whole (its words all of one message).
struct MailRank {
  coll_gpu::Mailbox *box;
  int rank, n, messages;
  int torn = 0;
};

void *mail_rank(void *arg) {
  auto *m = (MailRank *)arg;
  uint64_t w[coll_gpu::kMailWords], mine[coll_gpu::kMailWords];
  for (uint64_t msg = 1; msg <= (uint64_t)m->messages; ++msg) {
    for (int k = 0; k < coll_gpu::kMailWords; ++k) mine[k] = msg << 8 | (uint64_t)m->rank;
    m->box->post(msg, mine);
    for (int q = 0; q < m->n; ++q) {
      while (!m->box->read(q, msg, w)) sched_yield();
      for (int k = 0; k < coll_gpu::kMailWords; ++k) m->torn += w[k] != (msg << 8 | (uint64_t)q);
    }
  }
  return nullptr;
}

TEST(Mailbox, RanksInStepReadWholeMessages) {
  const int n = 3, messages = 500;
  coll_gpu::Mailbox box[n];
  mailboxes(box, n);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(box[r].ready());
  MailRank ranks[n];
  pthread_t t[n];
  for (int r = 0; r < n; ++r) {
    ranks[r] = MailRank{&box[r], r, n, messages};
    ASSERT_EQ(0, pthread_create(&t[r], nullptr, mail_rank, &ranks[r]));
  }
  for (int r = 0; r < n; ++r) pthread_join(t[r], nullptr);
  for (int r = 0; r < n; ++r) EXPECT_EQ(0, ranks[r].torn) << "rank " << r;
}

}  // namespace

// The zero-copy moves' words (engine/zero_copy.h), n ranks in this process: each rank's message 2 told to the
// others, the blocks each rank then writes applied with memcpy, every receive buffer checked against where its
// rank said each sender's block goes, and the bytes around poisoned.
namespace zc {

constexpr unsigned char kPoison = 0xA5;

struct Rank {
  std::vector<unsigned char> send, recv;
  coll_gpu_vlayout_t v{};
  coll_gpu_args_t a{};
};

// Rank r's call: coll from `send` into its receive buffer, by its layout (with_layout; count unused) or in equal
// blocks of `count` bytes.
void set_call(Rank &r, coll_gpu_coll_t coll, const void *send, size_t count, bool with_layout) {
  r.a = coll_gpu_args_t{
      coll, send, r.recv.data(), count, nullptr, COLL_GPU_UINT8, COLL_GPU_SUM, 0, with_layout ? &r.v : nullptr};
}

// Blocks of the given bytes laid out in a buffer in a random order with random gaps: their displacements, and the
// buffer's length.
size_t scatter_blocks(std::mt19937_64 &g, const std::vector<size_t> &bytes, std::vector<size_t> *displ) {
  const size_t n = bytes.size();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), g);
  displ->assign(n, 0);
  size_t at = g() % 5;
  for (size_t i : order) {
    (*displ)[i] = at;
    at += bytes[i] + g() % 9;
  }
  return at + g() % 5;
}

// Runs the exchange and the copies of one call of n ranks; returns each rank's zc_blocks answer (the sender's side
// of counts that disagree), and in *taken each rank's zc_takes_unlike answer (the receiver's).
std::vector<int> run(std::vector<Rank> &ranks, std::vector<int> *taken = nullptr) {
  const int n = (int)ranks.size();
  std::vector<std::vector<uint64_t>> words(n, std::vector<uint64_t>(coll_gpu::kMailWords));
  for (int r = 0; r < n; ++r) coll_gpu::zc_wants_post(r, n, true, ranks[r].a, words[r].data());
  std::vector<int> bad(n);
  std::vector<std::vector<coll_gpu_zc_t>> zc(n, std::vector<coll_gpu_zc_t>(COLL_GPU_MAX_DIRECT));
  for (int r = 0; r < n; ++r) {
    void *peer_recv[COLL_GPU_MAX_DIRECT] = {};
    coll_gpu_vblock_t wants[COLL_GPU_MAX_DIRECT] = {};
    size_t gives[COLL_GPU_MAX_DIRECT] = {};
    for (int q = 0; q < n; ++q) {
      peer_recv[q] = ranks[q].recv.data();
      if (q != r) wants[q] = coll_gpu::zc_wants_of(q, r, n, words[q].data());
      if (q != r) gives[q] = coll_gpu::zc_gives_of(q, r, n, words[q].data());
    }
    bad[r] = coll_gpu::zc_blocks(r, n, ranks[r].a, peer_recv, wants, zc[r].data());
    if (taken != nullptr) taken->push_back(coll_gpu::zc_takes_unlike(r, n, ranks[r].a, gives));
  }
  for (int r = 0; r < n; ++r)
    for (int q = 0; q < n; ++q)
      if (zc[r][q].bytes > 0 && zc[r][q].src != zc[r][q].dst) memcpy(zc[r][q].dst, zc[r][q].src, zc[r][q].bytes);
  return bad;
}

// Sender s's byte i of its block for rank r (alltoallv) or of its one block (allgatherv: r unused).
unsigned char pattern(int s, int r, size_t i) { return (unsigned char)(1 + (s * 31 + r * 7 + i * 13) % 250); }

}  // namespace zc

TEST(ZeroCopyWords, AlltoallvOfAnyCountsAndDisplacements) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    const int n = 2 + (int)(g() % (COLL_GPU_MAX_DIRECT - 1));
    // bytes[s][r]: what s sends r, zeros included
    std::vector<std::vector<size_t>> bytes(n, std::vector<size_t>(n));
    for (auto &row : bytes)
      for (auto &b : row) b = g() % 4 == 0 ? 0 : g() % 70;
    std::vector<zc::Rank> ranks(n);
    for (int r = 0; r < n; ++r) {
      std::vector<size_t> out(n), in(n), sd, rd;
      for (int q = 0; q < n; ++q) {
        out[q] = bytes[r][q];
        in[q] = bytes[q][r];
      }
      ranks[r].send.assign(zc::scatter_blocks(g, out, &sd), zc::kPoison);
      ranks[r].recv.assign(zc::scatter_blocks(g, in, &rd), zc::kPoison);
      for (int q = 0; q < n; ++q) {
        ranks[r].v.send[q] = {sd[q], out[q]};
        ranks[r].v.recv[q] = {rd[q], in[q]};
        for (size_t i = 0; i < out[q]; ++i) ranks[r].send[sd[q] + i] = zc::pattern(r, q, i);
      }
      zc::set_call(ranks[r], COLL_GPU_COLL_ALLTOALL, ranks[r].send.data(), 0, true);
    }
    for (int r = 0; r < n; ++r) {
      size_t most = 0;
      for (int q = 0; q < n; ++q) most = std::max(most, bytes[r][q]);
      ASSERT_EQ(most, coll_gpu::zc_most(n, ranks[r].a));
    }
    std::vector<int> taken;
    const std::vector<int> bad = zc::run(ranks, &taken);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(-1, bad[r]) << "rank " << r;
      ASSERT_EQ(-1, taken[r]) << "rank " << r;
      std::vector<unsigned char> want(ranks[r].recv.size(), zc::kPoison);
      for (int s = 0; s < n; ++s)
        for (size_t i = 0; i < bytes[s][r]; ++i) want[ranks[r].v.recv[s].displ + i] = zc::pattern(s, r, i);
      ASSERT_EQ(want, ranks[r].recv) << "rank " << r << " of " << n << ", round " << round;
    }
  }
}

TEST(ZeroCopyWords, AllgathervOfAnyCountsInPlaceOrNot) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 200; ++round) {
    const int n = 2 + (int)(g() % (COLL_GPU_MAX_DIRECT - 1));
    const bool in_place = g() % 2 == 0;
    std::vector<size_t> count(n);  // sender s's bytes, the same list on every rank
    for (auto &c : count) c = g() % 4 == 0 ? 0 : g() % 90;
    std::vector<zc::Rank> ranks(n);
    for (int r = 0; r < n; ++r) {
      std::vector<size_t> rd;
      ranks[r].recv.assign(zc::scatter_blocks(g, count, &rd), zc::kPoison);
      ranks[r].send.assign(count[r] + 3, zc::kPoison);
      for (int q = 0; q < n; ++q) ranks[r].v.recv[q] = {rd[q], count[q]};
      unsigned char *mine = in_place ? ranks[r].recv.data() + rd[r] : ranks[r].send.data() + 1;
      for (size_t i = 0; i < count[r]; ++i) mine[i] = zc::pattern(r, 0, i);
      for (int q = 0; q < n; ++q) ranks[r].v.send[q] = {0, count[r]};
      zc::set_call(ranks[r], COLL_GPU_COLL_ALLGATHER, mine, 0, true);
      ASSERT_EQ(count[r], coll_gpu::zc_most(n, ranks[r].a));
    }
    std::vector<int> taken;
    const std::vector<int> bad = zc::run(ranks, &taken);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(-1, bad[r]);
      ASSERT_EQ(-1, taken[r]);
      std::vector<unsigned char> want(ranks[r].recv.size(), zc::kPoison);
      for (int s = 0; s < n; ++s)
        for (size_t i = 0; i < count[s]; ++i) want[ranks[r].v.recv[s].displ + i] = zc::pattern(s, 0, i);
      ASSERT_EQ(want, ranks[r].recv) << "rank " << r << " of " << n << (in_place ? ", in place" : "");
    }
  }
}

TEST(ZeroCopyWords, AlltoallOfEqualBlocks) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 50; ++round) {
    const int n = 2 + (int)(g() % (COLL_GPU_MAX_DIRECT - 1));
    const size_t block = 1 + g() % 40;
    std::vector<zc::Rank> ranks(n);
    for (int r = 0; r < n; ++r) {
      ranks[r].send.resize(n * block);
      ranks[r].recv.assign(n * block, zc::kPoison);
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < block; ++i) ranks[r].send[q * block + i] = zc::pattern(r, q, i);
      zc::set_call(ranks[r], COLL_GPU_COLL_ALLTOALL, ranks[r].send.data(), block, false);
      ASSERT_EQ(block, coll_gpu::zc_most(n, ranks[r].a));
      ASSERT_FALSE(coll_gpu::zc_receives_nothing(r, n, ranks[r].a));
    }
    zc::run(ranks);
    for (int r = 0; r < n; ++r)
      for (int s = 0; s < n; ++s)
        for (size_t i = 0; i < block; ++i) ASSERT_EQ(zc::pattern(s, r, i), ranks[r].recv[s * block + i]);
  }
}

TEST(ZeroCopyWords, AllgatherOfEqualBlocksInPlaceOrNot) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 50; ++round) {
    const int n = 2 + (int)(g() % (COLL_GPU_MAX_DIRECT - 1));
    const size_t block = 1 + g() % 40;
    const bool in_place = g() % 2 == 0;
    std::vector<zc::Rank> ranks(n);
    for (int r = 0; r < n; ++r) {
      ranks[r].send.assign(block, zc::kPoison);
      ranks[r].recv.assign(n * block, zc::kPoison);
      unsigned char *mine = in_place ? ranks[r].recv.data() + r * block : ranks[r].send.data();
      for (size_t i = 0; i < block; ++i) mine[i] = zc::pattern(r, 0, i);
      zc::set_call(ranks[r], COLL_GPU_COLL_ALLGATHER, mine, block, false);
      ASSERT_EQ(block, coll_gpu::zc_most(n, ranks[r].a));
    }
    const std::vector<int> bad = zc::run(ranks);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(-1, bad[r]);
      for (int s = 0; s < n; ++s)
        for (size_t i = 0; i < block; ++i)
          ASSERT_EQ(zc::pattern(s, 0, i), ranks[r].recv[s * block + i])
              << "rank " << r << " of " << n << ", block of " << s << (in_place ? ", in place" : "");
    }
  }
}

TEST(ZeroCopyWords, BcastOfTwoRanksFromEitherRoot) {
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 20; ++round) {
    const int n = 2, root = (int)(g() % 2);
    const size_t bytes = 1 + g() % 60;
    std::vector<zc::Rank> ranks(n);
    for (int r = 0; r < n; ++r) {
      ranks[r].recv.assign(bytes + 8, zc::kPoison);  // the buffer, then 8 bytes nothing may write
      if (r == root)
        for (size_t i = 0; i < bytes; ++i) ranks[r].recv[i] = zc::pattern(r, 0, i);
      zc::set_call(ranks[r], COLL_GPU_COLL_BCAST, ranks[r].recv.data(), bytes, false);
      ranks[r].a.root = root;
      EXPECT_EQ(r == root, coll_gpu::zc_receives_nothing(r, n, ranks[r].a));
      EXPECT_TRUE(coll_gpu::zc_fits(n, ranks[r].a, bytes));
      EXPECT_FALSE(coll_gpu::zc_fits(n, ranks[r].a, bytes - 1));
    }
    const std::vector<int> bad = zc::run(ranks);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(-1, bad[r]);
      for (size_t i = 0; i < bytes + 8; ++i)
        ASSERT_EQ(i < bytes ? zc::pattern(root, 0, i) : zc::kPoison, ranks[r].recv[i])
            << "rank " << r << ", root " << root << ", byte " << i;
    }
  }
}

TEST(ZeroCopyWords, DisagreeingCountsMoveWhatBothAllowAndAreNamed) {
  // 3 ranks of an alltoallv of 8 bytes a block, but rank 2 takes 5 bytes from rank 0 and 12 from rank 1: both
  // senders and the receiver know
  const int n = 3;
  std::vector<zc::Rank> ranks(n);
  for (int r = 0; r < n; ++r) {
    ranks[r].send.resize(3 * 8);
    ranks[r].recv.assign(3 * 16, zc::kPoison);
    for (int q = 0; q < n; ++q) {
      ranks[r].v.send[q] = {(size_t)q * 8, 8};
      ranks[r].v.recv[q] = {(size_t)q * 16, 8};
      for (size_t i = 0; i < 8; ++i) ranks[r].send[q * 8 + i] = zc::pattern(r, q, i);
    }
    zc::set_call(ranks[r], COLL_GPU_COLL_ALLTOALL, ranks[r].send.data(), 0, true);
  }
  ranks[2].v.recv[0].bytes = 5;
  ranks[2].v.recv[1].bytes = 12;
  std::vector<int> taken;
  const std::vector<int> bad = zc::run(ranks, &taken);
  EXPECT_EQ(2, bad[0]);  // the senders name their receiver
  EXPECT_EQ(2, bad[1]);
  EXPECT_EQ(-1, bad[2]);
  EXPECT_EQ(-1, taken[0]);
  EXPECT_EQ(-1, taken[1]);
  EXPECT_EQ(0, taken[2]);  // the receiver names its first sender whose count differs
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(i < 5 ? zc::pattern(0, 2, i) : zc::kPoison, ranks[2].recv[i]) << i;
    EXPECT_EQ(i < 8 ? zc::pattern(1, 2, i) : zc::kPoison, ranks[2].recv[16 + i]) << i;
  }
}

TEST(ZeroCopyWords, ReduceScatterReadsItsBlockOfEveryRanksInput) {
  // each rank exports its send buffer and reads its own block of every rank's, equal blocks or drawn counts (zeros
  // included); the blocks applied as the kernel does (a sum in rank order) against sums taken here by index
  std::mt19937_64 g(std::random_device{}());
  for (int round = 0; round < 100; ++round) {
    const int n = 2 + (int)(g() % (COLL_GPU_MAX_DIRECT - 1));
    const bool equal = g() % 2 == 0;
    std::vector<size_t> counts(n), begin(n + 1, 0);
    const size_t each = 1 + g() % 20;
    for (int q = 0; q < n; ++q) {
      counts[q] = equal ? each : g() % 4 == 0 ? 0 : 1 + g() % 20;
      begin[q + 1] = begin[q] + counts[q];
    }
    const size_t total = begin[n];
    std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(total)), recv(n);
    std::vector<coll_gpu_args_t> a(n);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < total; ++i) send[r][i] = (int32_t)(g() % 2001) - 1000;
      recv[r].assign(counts[r] + 2, -7);  // the block, then 2 elements nothing may write
      a[r] = coll_gpu_args_t{COLL_GPU_COLL_REDUCE_SCATTER,
                             send[r].data(),
                             recv[r].data(),
                             each,
                             equal ? nullptr : counts.data(),
                             COLL_GPU_INT32,
                             COLL_GPU_SUM,
                             0,
                             nullptr};
      EXPECT_EQ(send[r].data(), coll_gpu::zc_exported(a[r]));
      EXPECT_FALSE(coll_gpu::zc_receives_nothing(r, n, a[r]));
      EXPECT_EQ(*std::max_element(counts.begin(), counts.end()) * 4, coll_gpu::zc_most(n, a[r]));
      EXPECT_TRUE(coll_gpu::zc_fits(n, a[r], total * 4));
      if (total > 0) {
        EXPECT_FALSE(coll_gpu::zc_fits(n, a[r], total * 4 - 1));
      }
      // a peer's allocation must hold what this rank reads of it
      EXPECT_TRUE(coll_gpu::zc_reads_fit(r, n, a[r], begin[r + 1] * 4));
      if (counts[r] > 0) {
        EXPECT_FALSE(coll_gpu::zc_reads_fit(r, n, a[r], begin[r + 1] * 4 - 1));
      }
    }
    for (int r = 0; r < n; ++r) {
      void *peer_buf[COLL_GPU_MAX_DIRECT] = {};
      for (int q = 0; q < n; ++q) peer_buf[q] = const_cast<void *>(coll_gpu::zc_exported(a[q]));
      coll_gpu_zc_t zc[COLL_GPU_MAX_DIRECT];
      ASSERT_EQ(-1, coll_gpu::zc_blocks(r, n, a[r], peer_buf, nullptr, zc));
      for (int q = 0; q < n; ++q) {
        ASSERT_EQ(counts[r] * 4, zc[q].bytes);
        ASSERT_EQ(recv[r].data(), zc[q].dst);
        for (size_t i = 0; i < counts[r]; ++i) {
          int32_t v;
          memcpy(&v, (const char *)zc[q].src + i * 4, 4);
          recv[r][i] = q == 0 ? v : recv[r][i] + v;
        }
      }
      for (size_t i = 0; i < counts[r] + 2; ++i) {
        int32_t want = -7;
        if (i < counts[r]) {
          want = 0;
          for (int q = 0; q < n; ++q) want += send[q][begin[r] + i];
        }
        ASSERT_EQ(want, recv[r][i]) << "rank " << r << " of " << n << ", element " << i;
      }
    }
  }
}

TEST(ZeroCopyWords, ARankThatReceivesNothingAndTheParts) {
  coll_gpu_vlayout_t v{};
  v.send[1] = {0, 64};
  coll_gpu_args_t a = {COLL_GPU_COLL_ALLTOALL, nullptr, nullptr, 0, nullptr, COLL_GPU_UINT8, COLL_GPU_SUM, 0, &v};
  EXPECT_TRUE(coll_gpu::zc_receives_nothing(0, 4, a));
  v.recv[3].bytes = 1;
  EXPECT_FALSE(coll_gpu::zc_receives_nothing(0, 4, a));
  coll_gpu_tune_config_t t{};
  for (int &p : t.protocol) p = -1;
  t.max_channels = COLL_GPU_MAX_CHANNELS;
  t.oneshot_max_bytes = 64 << 10;
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) t.algorithm[k] = -1;
  for (int n = 2; n <= COLL_GPU_MAX_DIRECT; ++n)
    for (size_t bytes : {(size_t)0, (size_t)8, (size_t)1 << 20, (size_t)256 << 20}) {
      const int parts = coll_gpu::zc_parts(t, n, bytes);
      EXPECT_GE(parts, 1);
      EXPECT_LE(parts, COLL_GPU_ZC_PARTS);
    }
  // a receive buffer is exported only where every block lies within its allocation
  coll_gpu_args_t all = {COLL_GPU_COLL_ALLTOALL, nullptr,      nullptr, 10,     nullptr,
                         COLL_GPU_UINT8,         COLL_GPU_SUM, 0,       nullptr};
  EXPECT_TRUE(coll_gpu::zc_fits(4, all, 40));
  EXPECT_FALSE(coll_gpu::zc_fits(4, all, 39));
  all.count = SIZE_MAX / 2;  // n blocks of it overflow
  EXPECT_FALSE(coll_gpu::zc_fits(4, all, 1 << 20));
  coll_gpu_vlayout_t fit{};
  const coll_gpu_args_t counted = {COLL_GPU_COLL_ALLTOALL, nullptr,      nullptr, 0,   nullptr,
                                   COLL_GPU_UINT8,         COLL_GPU_SUM, 0,       &fit};
  fit.recv[0] = {90, 10};
  fit.recv[1] = {1000, 0};  // an empty block may lie anywhere
  EXPECT_TRUE(coll_gpu::zc_fits(3, counted, 100));
  EXPECT_FALSE(coll_gpu::zc_fits(3, counted, 99));
  fit.recv[2] = {100, 1};
  EXPECT_FALSE(coll_gpu::zc_fits(3, counted, 100));
  fit.recv[2] = {SIZE_MAX - 1, 5};  // displacement and bytes overflow
  EXPECT_FALSE(coll_gpu::zc_fits(3, counted, 100));
  // copy engines: 2 ranks only, from the bound on the largest block, never with a bound of 0
  EXPECT_TRUE(coll_gpu::zc_engines(1 << 20, 2, 1 << 20));
  EXPECT_FALSE(coll_gpu::zc_engines(1 << 20, 2, (1 << 20) - 1));
  EXPECT_FALSE(coll_gpu::zc_engines(0, 2, (size_t)256 << 20));
  for (int n = 3; n <= COLL_GPU_MAX_DIRECT; ++n) EXPECT_FALSE(coll_gpu::zc_engines(1, n, (size_t)256 << 20));
}
