/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The path agreement's table and protocol in one process: ranks simulated by handles of their own, the
// order of their calls chosen by the test. The file: created mode 0600, never through a symbolic link, no
// FIFO or file of another size taken. The protocol: a rank that only posts skips agreements until the
// table is marked; a reader waits a while for ranks that have not joined, then answers UNKNOWN; ranks that
// joined after an agreement are not waited for; posts overwritten before they were read come back
// UNKNOWN; a communicator's next instance never reads the last one's slots. Across nodes, over a simulated
// wire: posts read exactly, kept however far ahead their sender runs, other instances' dropped, a rank of an
// unmarked node waited for once.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "engine/agree.h"

namespace {

// Nodes, each with its own table, and the messages between their ranks' handles: what the glue does over
// the communicator's point-to-point layer, delivered when a handle polls (in order per sender, as MPI).
struct Wire;
struct End {
  Wire *wire;
  int rank;
};
struct Wire {
  struct Msg {
    int from;
    uint64_t instance, word;
  };
  std::vector<Msg> queue[8];  // to each rank
  End ends[8];
  int sent = 0;
};

void wire_send(void *ctx, int to, uint64_t instance, uint64_t word) {
  End *e = (End *)ctx;
  e->wire->queue[to].push_back({e->rank, instance, word});
  ++e->wire->sent;
}
void wire_poll(void *ctx, coll_gpu_agree_t *a) {
  End *e = (End *)ctx;
  std::vector<Wire::Msg> q;
  q.swap(e->wire->queue[e->rank]);
  for (const auto &m : q) coll_gpu_agree_deliver(a, m.from, m.instance, m.word);
}

class Table : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coll_gpu_agree_unit.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/" + COLL_GPU_AGREE_TABLE_NAME;
  }
  void TearDown() override {
    for (auto *a : handles_) coll_gpu_agree_destroy(a);
    for (auto *t : tables_) coll_gpu_agree_table_close(t);
    std::string rm = "rm -rf " + dir_;
    ASSERT_EQ(system(rm.c_str()), 0);
  }
  coll_gpu_agree_table_t *open_table(const std::string &path) {
    coll_gpu_agree_table_t *t = nullptr;
    char why[512] = "";
    if (coll_gpu_agree_table_open(path.c_str(), &t, why, sizeof(why)) != COLL_GPU_SUCCESS) {
      why_ = why;
      return nullptr;
    }
    tables_.push_back(t);
    return t;
  }
  // Rank `rank` of a communicator of `n` ranks (cid 5), instance `instance`.
  coll_gpu_agree_t *rank_of(coll_gpu_agree_table_t *t, int rank, int n = 2, uint64_t instance = 1) {
    coll_gpu_agree_key_t key;
    memset(&key, 0, sizeof(key));
    key.cid = 5;
    key.size = (uint32_t)n;
    key.members = 77;
    coll_gpu_agree_t *a = nullptr;
    EXPECT_EQ(coll_gpu_agree_create(t, &key, instance, rank, &a), COLL_GPU_SUCCESS);
    handles_.push_back(a);
    return a;
  }
  // Ranks 0 and 1 of a communicator on two nodes, each with a table of its own (both marked when `marked`;
  // the second node's in *t1), their posts over w.
  bool two_nodes(Wire *w, bool marked, coll_gpu_agree_t **a0, coll_gpu_agree_t **a1, coll_gpu_agree_table_t **t1) {
    coll_gpu_agree_table_t *t0 = open_table(path_);
    *t1 = open_table(dir_ + "/other");
    if (t0 == nullptr || *t1 == nullptr) return false;
    if (marked) {
      coll_gpu_agree_table_mark(t0);
      coll_gpu_agree_table_mark(*t1);
    }
    *a0 = rank_of(t0, 0);
    *a1 = rank_of(*t1, 1);
    w->ends[0] = {w, 0};
    w->ends[1] = {w, 1};
    const uint8_t remote0[2] = {0, 1}, remote1[2] = {1, 0};
    const coll_gpu_agree_net_t n0 = {&w->ends[0], wire_send, wire_poll}, n1 = {&w->ends[1], wire_send, wire_poll};
    return coll_gpu_agree_set_net(*a0, remote0, &n0) == COLL_GPU_SUCCESS &&
           coll_gpu_agree_set_net(*a1, remote1, &n1) == COLL_GPU_SUCCESS;
  }
  std::string dir_, path_, why_;
  std::vector<coll_gpu_agree_table_t *> tables_;
  std::vector<coll_gpu_agree_t *> handles_;
};

// Posts bits to read (retrying while the join wait runs, which lasts COLL_GPU_AGREE_JOIN_WAIT_NS).
uint64_t post_to_read(coll_gpu_agree_t *a, uint32_t bits, int *tries) {
  uint64_t n = 0;
  *tries = 0;
  while (!coll_gpu_agree_try_post(a, bits, 1, &n)) {
    ++*tries;
    usleep(1000);
  }
  return n;
}

}  // namespace

TEST_F(Table, AFileOfThisUserMode0600SharedByItsOpeners) {
  coll_gpu_agree_table_t *t = open_table(path_), *again = open_table(path_);
  ASSERT_NE(t, nullptr) << why_;
  ASSERT_NE(again, nullptr) << why_;
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(coll_gpu_agree_table_marked(again));
  coll_gpu_agree_table_mark(t);
  EXPECT_TRUE(coll_gpu_agree_table_marked(again)) << "two mappings of one file";
}

TEST_F(Table, NeverThroughASymbolicLinkNorAFifoNorAFileOfAnotherSize) {
  const std::string target = dir_ + "/target", link = dir_ + "/link", fifo = dir_ + "/fifo", odd = dir_ + "/odd";
  FILE *f = fopen(target.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("precious", f);
  fclose(f);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(open_table(link), nullptr);
  struct stat st;
  ASSERT_EQ(stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 8) << "the link's target is left as it was";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(open_table(fifo), nullptr);  // refused, not waited on
  EXPECT_NE(why_.find("not a regular file"), std::string::npos) << why_;
  f = fopen(odd.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("not a table", f);
  fclose(f);
  EXPECT_EQ(open_table(odd), nullptr);
  EXPECT_NE(why_.find("another size"), std::string::npos) << why_;
}

TEST_F(Table, RanksThatOnlyPostSkipUntilAReaderMarksTheTable) {
  coll_gpu_agree_table_t *t = open_table(path_);
  ASSERT_NE(t, nullptr) << why_;
  coll_gpu_agree_t *r0 = rank_of(t, 0), *r1 = rank_of(t, 1);
  uint64_t n;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(coll_gpu_agree_try_post(r1, 1, 0, &n));  // agreements 1-3, skipped
  EXPECT_FALSE(coll_gpu_agree_joined(r1));
  EXPECT_FALSE(coll_gpu_agree_table_marked(t)) << "nothing was posted";
  // rank 0 reads agreement 1: it marks the table and joins; rank 1 has not joined: a wait, then UNKNOWN
  int tries;
  n = post_to_read(r0, 2, &tries);
  EXPECT_EQ(n, 1u);
  EXPECT_TRUE(coll_gpu_agree_table_marked(t) && coll_gpu_agree_joined(r0));
  EXPECT_GT(tries, 10) << "it waited for the rank to join";
  uint32_t all = 0;
  ASSERT_TRUE(coll_gpu_agree_test(r0, 1, &all));
  EXPECT_EQ(all, 2u | COLL_GPU_AGREE_UNKNOWN);
  // rank 1's next post joins (the table is marked): agreement 4
  ASSERT_TRUE(coll_gpu_agree_try_post(r1, 1, 0, &n));
  EXPECT_EQ(n, 4u);
  EXPECT_TRUE(coll_gpu_agree_joined(r1));
  // agreements 2 and 3: rank 1 joined after them and never posts them: UNKNOWN at once, no wait
  for (uint64_t k = 2; k <= 3; ++k) {
    n = post_to_read(r0, 2, &tries);
    EXPECT_EQ(n, k);
    EXPECT_EQ(tries, 0);
    ASSERT_TRUE(coll_gpu_agree_test(r0, k, &all));
    EXPECT_EQ(all, 2u | COLL_GPU_AGREE_UNKNOWN);
  }
  // agreement 4: both posted it
  n = post_to_read(r0, 2, &tries);
  ASSERT_TRUE(coll_gpu_agree_test(r0, n, &all));
  EXPECT_EQ(all, 3u) << "the OR, read exactly";
}

TEST_F(Table, APostOverwrittenBeforeItWasReadComesBackUnknown) {
  coll_gpu_agree_table_t *t = open_table(path_);
  ASSERT_NE(t, nullptr) << why_;
  coll_gpu_agree_table_mark(t);
  coll_gpu_agree_t *r0 = rank_of(t, 0), *r1 = rank_of(t, 1);
  uint64_t n;
  // rank 1 joins and runs COLL_GPU_AGREE_WINDOW + 6 agreements ahead, posting without reading: it never waits
  for (int i = 0; i < COLL_GPU_AGREE_WINDOW + 6; ++i) ASSERT_TRUE(coll_gpu_agree_try_post(r1, 4, 0, &n));
  int tries;
  uint32_t all;
  // rank 0 joins at 1 (it did not skip: the table was marked): agreements 1-6 of rank 1 are overwritten
  for (uint64_t k = 1; k <= COLL_GPU_AGREE_WINDOW + 6; ++k) {
    ASSERT_EQ(post_to_read(r0, 2, &tries), k);
    ASSERT_TRUE(coll_gpu_agree_test(r0, k, &all));
    EXPECT_EQ(all, k <= 6 ? 2u | COLL_GPU_AGREE_UNKNOWN : 6u) << "agreement " << k;
  }
}

// A communicator's ranks on one node take a slot each: with COLL_GPU_AGREE_NODE_RANKS of them a rank joins, with
// one more it never does and reads UNKNOWN (the call stages) at once. Its size alone does not matter.
TEST_F(Table, MoreRanksOnANodeThanTheSlotsNeverJoin) {
  coll_gpu_agree_table_t *t = open_table(path_);
  ASSERT_NE(t, nullptr) << why_;
  coll_gpu_agree_table_mark(t);
  coll_gpu_agree_t *fits = rank_of(t, COLL_GPU_AGREE_NODE_RANKS - 1, COLL_GPU_AGREE_NODE_RANKS);
  int tries;
  uint32_t all = 0;
  const uint64_t n = post_to_read(fits, 2, &tries);
  EXPECT_TRUE(coll_gpu_agree_joined(fits));
  EXPECT_GT(tries, 10) << "it waited for the others to join";
  ASSERT_TRUE(coll_gpu_agree_test(fits, n, &all));
  EXPECT_EQ(all, 2u | COLL_GPU_AGREE_UNKNOWN) << "the others never joined";
  coll_gpu_agree_key_t key;
  memset(&key, 0, sizeof(key));
  key.cid = 6;
  key.size = COLL_GPU_AGREE_NODE_RANKS + 1;
  key.members = 99;
  coll_gpu_agree_t *over = nullptr;
  ASSERT_EQ(coll_gpu_agree_create(t, &key, 1, COLL_GPU_AGREE_NODE_RANKS, &over), COLL_GPU_SUCCESS);
  handles_.push_back(over);
  for (uint64_t k = 1; k <= 3; ++k) {
    EXPECT_EQ(post_to_read(over, 2, &tries), k);
    EXPECT_EQ(tries, 0) << "no wait";
    EXPECT_FALSE(coll_gpu_agree_joined(over));
    ASSERT_TRUE(coll_gpu_agree_test(over, k, &all));
    EXPECT_EQ(all, 2u | COLL_GPU_AGREE_UNKNOWN);
  }
}

TEST_F(Table, TheNextInstanceNeverReadsTheLastOnesSlots) {
  coll_gpu_agree_table_t *t = open_table(path_);
  ASSERT_NE(t, nullptr) << why_;
  coll_gpu_agree_table_mark(t);  // both take part from their first call
  coll_gpu_agree_t *a0 = rank_of(t, 0, 2, 1), *a1 = rank_of(t, 1, 2, 1);
  uint64_t n;
  int tries;
  uint32_t all;
  for (int i = 0; i < 10; ++i) {  // instance 1: both read, in turn
    ASSERT_TRUE(coll_gpu_agree_try_post(a1, 1, 0, &n));
    ASSERT_EQ(post_to_read(a0, 2, &tries), n);
    ASSERT_TRUE(coll_gpu_agree_test(a0, n, &all));
    EXPECT_EQ(all, 3u);
  }
  // instance 2 (the communicator freed and made again): rank 0 first; rank 1's slot still shows
  // instance 1's agreements 1-10, which must not be taken for instance 2's
  coll_gpu_agree_t *b0 = rank_of(t, 0, 2, 2), *b1 = rank_of(t, 1, 2, 2);
  ASSERT_FALSE(coll_gpu_agree_try_post(b0, 2, 1, &n)) << "rank 1 has not joined instance 2: wait";
  ASSERT_TRUE(coll_gpu_agree_try_post(b1, 4, 0, &n));
  EXPECT_EQ(n, 1u);
  ASSERT_EQ(post_to_read(b0, 2, &tries), 1u);
  ASSERT_TRUE(coll_gpu_agree_test(b0, 1, &all));
  EXPECT_EQ(all, 6u) << "instance 2's agreement 1, not instance 1's";
}

// Two nodes of one rank each: posts travel as messages. A reader reads every rank's post exactly; a rank
// that only posts still sends, and never waits.
TEST_F(Table, AcrossNodesPostsTravelAsMessages) {
  Wire w;
  coll_gpu_agree_t *a0, *a1;
  coll_gpu_agree_table_t *t1;
  ASSERT_TRUE(two_nodes(&w, true, &a0, &a1, &t1)) << why_;
  uint64_t n, m;
  uint32_t all = 0;
  for (uint64_t k = 1; k <= 3 * COLL_GPU_AGREE_WINDOW; ++k) {
    const uint32_t bits0 = k % 3 == 0 ? 1 : 2, bits1 = k % 5 == 0 ? 4 : 2;  // host, GPU or stage
    if (k == 1) {  // rank 0 joins and says so, but waits for rank 1 to join: rank 1's join comes with its post
      EXPECT_FALSE(coll_gpu_agree_try_post(a0, bits0, 1, &n));
      ASSERT_TRUE(coll_gpu_agree_try_post(a1, bits1, 1, &m)) << "rank 0's join has come";
    }
    ASSERT_TRUE(coll_gpu_agree_try_post(a0, bits0, 1, &n));
    EXPECT_EQ(n, k);
    if (k > 1) {
      EXPECT_FALSE(coll_gpu_agree_test(a0, k, &all)) << "rank 1's post has not come";
      ASSERT_TRUE(coll_gpu_agree_try_post(a1, bits1, 1, &m));
    }
    ASSERT_TRUE(coll_gpu_agree_test(a1, k, &all));
    EXPECT_EQ(all, bits0 | bits1) << "agreement " << k;
    ASSERT_TRUE(coll_gpu_agree_test(a0, k, &all));
    EXPECT_EQ(all, bits0 | bits1) << "agreement " << k;
  }
  EXPECT_EQ(w.sent, 6 * COLL_GPU_AGREE_WINDOW + 2) << "one message per post, and one per join";
}

// A rank of another node that runs far ahead: its posts are kept until this rank reads them, and a post of
// another instance of the communicator is dropped.
TEST_F(Table, AcrossNodesPostsWaitForTheirReaderHoweverFarAheadTheSenderIs) {
  Wire w;
  coll_gpu_agree_t *a0, *a1;
  coll_gpu_agree_table_t *t1;
  ASSERT_TRUE(two_nodes(&w, true, &a0, &a1, &t1)) << why_;
  w.queue[0].push_back({1, 2, 1ull << 16 | 4});  // instance 2's agreement 1: not this one's
  const int ahead = 5 * COLL_GPU_AGREE_WINDOW;
  uint64_t n;
  for (int i = 0; i < ahead; ++i) ASSERT_TRUE(coll_gpu_agree_try_post(a1, i % 2 ? 2 : 1, 0, &n));
  uint32_t all;
  int tries;
  for (uint64_t k = 1; k <= (uint64_t)ahead; ++k) {
    ASSERT_EQ(post_to_read(a0, 2, &tries), k);
    EXPECT_EQ(tries, 0) << "rank 1 joined at 1: no wait";
    ASSERT_TRUE(coll_gpu_agree_test(a0, k, &all));
    EXPECT_EQ(all, k % 2 ? 3u : 2u) << "agreement " << k;
  }
}

// A rank of another node whose node never marks its table never joins: a reader waits for it once, then
// reads UNKNOWN; once its posts come, it is read exactly from its first one on.
TEST_F(Table, AcrossNodesARankThatNeverJoinedIsWaitedForOnceThenReadUnknown) {
  Wire w;
  coll_gpu_agree_t *a0, *a1;
  coll_gpu_agree_table_t *t1;
  ASSERT_TRUE(two_nodes(&w, false, &a0, &a1, &t1)) << why_;
  uint64_t n;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(coll_gpu_agree_try_post(a1, 1, 0, &n));  // not marked: counted only
  EXPECT_EQ(w.sent, 0) << "a rank that has not joined sends nothing";
  int tries;
  uint32_t all;
  ASSERT_EQ(post_to_read(a0, 2, &tries), 1u);
  EXPECT_GT(tries, 10) << "it waited for rank 1 to join";
  ASSERT_TRUE(coll_gpu_agree_test(a0, 1, &all));
  EXPECT_EQ(all, 2u | COLL_GPU_AGREE_UNKNOWN);
  ASSERT_EQ(post_to_read(a0, 2, &tries), 2u);
  EXPECT_EQ(tries, 0) << "waited for once";
  ASSERT_TRUE(coll_gpu_agree_test(a0, 2, &all));
  EXPECT_EQ(all, 2u | COLL_GPU_AGREE_UNKNOWN);
  coll_gpu_agree_table_mark(t1);  // a process of rank 1's node may pass device memory: it joins at 3
  ASSERT_TRUE(coll_gpu_agree_try_post(a1, 2, 0, &n));
  EXPECT_EQ(n, 3u);
  ASSERT_EQ(post_to_read(a0, 2, &tries), 3u);
  ASSERT_TRUE(coll_gpu_agree_test(a0, 3, &all));
  EXPECT_EQ(all, 2u) << "read exactly from its join on";
}

TEST(AgreeInstance, CountsCreationsPerKey) {
  coll_gpu_agree_key_t a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  a.cid = b.cid = 123456;
  a.size = b.size = 2;
  a.members = 12;
  b.members = 13;  // another communicator with the same context id
  const uint64_t a1 = coll_gpu_agree_instance(&a), b1 = coll_gpu_agree_instance(&b);
  EXPECT_EQ(coll_gpu_agree_instance(&a), a1 + 1);
  EXPECT_EQ(coll_gpu_agree_instance(&b), b1 + 1);
  for (int i = 0; i < 1000; ++i) {  // the map grows: every key keeps its count
    a.cid = 1000 + (uint32_t)i;
    coll_gpu_agree_instance(&a);
  }
  a.cid = 123456;
  EXPECT_EQ(coll_gpu_agree_instance(&a), a1 + 2);
}
