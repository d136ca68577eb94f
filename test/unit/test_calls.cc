/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The order of nonblocking and persistent calls (engine/calls.h) among ranks simulated in one process: each rank a
 * queue of its own over a real agreement in one node's table, a stand-in engine that runs one call at a time and
 * completes it after a few tests, and a stand-in previous module. Every call ends once, on every rank in the
 * order the calls were made, on the GPUs exactly where every rank's buffers allow it, with every claim ended; a late
 * rank holds the others' calls back without failing them (its watchdog line once), and a rank whose process is gone
 * fails the call that waits for it.
 */
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "common/wait.h"
#include "engine/calls.h"

namespace {

constexpr uint32_t kGpu = COLL_GPU_PATH_GPU;
constexpr uint32_t kStage = COLL_GPU_PATH_STAGE;
constexpr uint32_t kCounted = COLL_GPU_PATH_GPU | COLL_GPU_PATH_VLAYOUT;

struct Rank;

// A call as the owner holds it: the queue's part first.
struct Call {
  coll_gpu_call_t q;
  int id = 0;
  Rank *rank = nullptr;
  int ended = 0;  // times
  coll_gpu_call_end_t how = COLL_GPU_CALL_DONE;
  std::string why;
  int left = 0;                                  // times the queue let a persistent call go
  int previous = 0;                              // started through the previous module, not ended yet
  coll_gpu_status_t counted = COLL_GPU_SUCCESS;  // what its zero-copy exchange ends with
  int equal_blocks = 0;
  int starts_made = 0;  // a persistent call's MPI_Start calls
};
Call *call_of(coll_gpu_call_t *q) { return reinterpret_cast<Call *>(q); }

// Where a call started: on the engine or through the previous module.
struct Start {
  int id;
  bool gpu;
};

struct Rank {
  coll_gpu_calls_t q{};
  coll_gpu_agree_t *agree = nullptr;
  std::vector<uint8_t> late, missing;
  int claims = 0;
  bool refuse_claims = false;
  bool has_engine = false, engine_off = false;
  int fail_id = -1;  // the call whose start on the engine fails
  int engines_made = 0;
  Call *in_flight = nullptr;
  int polls_left = 0;
  int gpu_polls = 3;  // tests a call on the engine takes to complete
  std::vector<Start> starts;
  std::vector<Call *> running;  // through the previous module
  int reports = 0;
};
Rank *rank_of(void *ctx) { return static_cast<Rank *>(ctx); }

coll_gpu_agree_t *op_agreement(void *ctx) { return rank_of(ctx)->agree; }
void op_nothing(void *) {}
int op_trylock(void *) { return 1; }
int op_claim(void *ctx, uint32_t *mine) {
  Rank *r = rank_of(ctx);
  if (!coll_gpu_path_is_gpu(*mine)) return 0;
  if (r->refuse_claims) {
    *mine = kStage;
    return 0;
  }
  ++r->claims;
  return 1;
}
void op_unclaim(void *ctx) {
  Rank *r = rank_of(ctx);
  --r->claims;
  EXPECT_GE(r->claims, 0) << "an unclaim without its claim";
}
int op_has_engine(void *ctx) { return rank_of(ctx)->has_engine; }
int op_engine_off(void *ctx) { return rank_of(ctx)->engine_off; }
int op_make_engine(void *ctx, coll_gpu_call_t *) {
  Rank *r = rank_of(ctx);
  r->has_engine = true;
  ++r->engines_made;
  return 1;
}
int op_engine_idle(void *ctx) { return rank_of(ctx)->in_flight == nullptr; }
void run_on_engine(Rank *r, Call *c) {
  EXPECT_EQ(nullptr, r->in_flight) << "two calls on the engine at once";
  EXPECT_TRUE(r->has_engine);
  EXPECT_TRUE(coll_gpu_path_is_gpu(c->q.all)) << c->id;
  r->in_flight = c;
  r->polls_left = r->gpu_polls;
  r->starts.push_back({c->id, true});
}
coll_gpu_status_t op_start_gpu(void *ctx, coll_gpu_call_t *q, char *why, size_t len) {
  Rank *r = rank_of(ctx);
  if (call_of(q)->id == r->fail_id) {
    snprintf(why, len, "a stand-in failure");
    return COLL_GPU_CUDA_ERROR;
  }
  run_on_engine(r, call_of(q));
  return COLL_GPU_SUCCESS;
}
coll_gpu_status_t op_start_counted(void *ctx, coll_gpu_call_t *q, int *done, char *why, size_t len) {
  Rank *r = rank_of(ctx);
  Call *c = call_of(q);
  *done = 1;
  if (c->counted == COLL_GPU_SUCCESS) run_on_engine(r, c);
  if (c->counted == COLL_GPU_UNAVAILABLE) snprintf(why, len, "a receive buffer not mapped");
  return c->counted;
}
coll_gpu_status_t op_test_gpu(void *ctx, int *done, char *, size_t) {
  Rank *r = rank_of(ctx);
  EXPECT_NE(nullptr, r->in_flight) << "a test with nothing on the engine";
  *done = --r->polls_left <= 0;
  if (*done) r->in_flight = nullptr;
  return COLL_GPU_SUCCESS;
}
int op_equal_blocks(void *, coll_gpu_call_t *q) { return call_of(q)->equal_blocks; }
void op_start_previous(void *ctx, coll_gpu_call_t *q) {
  Rank *r = rank_of(ctx);
  Call *c = call_of(q);
  EXPECT_EQ(0, c->previous) << c->id;
  c->previous = 1;
  r->running.push_back(c);
  r->starts.push_back({c->id, false});
}
void op_finish(void *, coll_gpu_call_t *q, coll_gpu_call_end_t how, const char *, const char *why) {
  Call *c = call_of(q);
  ++c->ended;
  c->how = how;
  c->why = why != nullptr ? why : "";
}
void op_leave(void *, coll_gpu_call_t *q) { ++call_of(q)->left; }
void op_debug(void *, coll_gpu_call_t *, const char *) {}
void op_report(void *ctx, coll_gpu_call_t *, const uint8_t *) { ++rank_of(ctx)->reports; }

const coll_gpu_calls_ops_t kOps = {op_agreement, op_nothing,       op_trylock,    op_nothing,      op_claim,
                                   op_unclaim,   op_has_engine,    op_engine_off, op_make_engine,  op_engine_idle,
                                   op_start_gpu, op_start_counted, op_test_gpu,   op_equal_blocks, op_start_previous,
                                   op_finish,    op_leave,         op_nothing,    op_debug,        op_report};

class Calls : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coll_gpu_calls_unit.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    char why[512] = "";
    const std::string path = dir_ + "/" + COLL_GPU_AGREE_TABLE_NAME;
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_agree_table_open(path.c_str(), &table_, why, sizeof(why))) << why;
    coll_gpu_agree_table_mark(table_);
  }
  void TearDown() override {
    for (auto &r : ranks_) coll_gpu_agree_destroy(r->agree);
    coll_gpu_agree_table_close(table_);
    const std::string rm = "rm -rf " + dir_;
    ASSERT_EQ(0, system(rm.c_str()));
  }
  coll_gpu_agree_key_t key(int n) const {
    coll_gpu_agree_key_t k;
    memset(&k, 0, sizeof(k));
    k.cid = 9;
    k.size = (uint32_t)n;
    k.members = 1234;
    return k;
  }
  // n ranks, each with its queue over its handle of one agreement (none with `uniform`).
  void make_ranks(int n, bool uniform = false) {
    const coll_gpu_agree_key_t k = key(n);
    for (int i = 0; i < n; ++i) {
      ranks_.push_back(std::make_unique<Rank>());
      Rank &r = *ranks_.back();
      if (!uniform) {
        ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_agree_create(table_, &k, 1, i, &r.agree));
      }
      r.late.assign((size_t)n, 0);
      r.missing.assign((size_t)n, 0);
      r.q.ops = &kOps;
      r.q.ctx = &r;
      r.q.nranks = n;
      r.q.uniform = uniform;
      r.q.timeout_ns = 60ull * 1000000000ull;
      r.q.late = r.late.data();
      r.q.missing = r.missing.data();
    }
  }
  // Rank 1 as a child process that joins, posts `bits` as its first call and exits: a rank whose process is gone.
  void rank_1_posts_and_exits(uint32_t bits) {
    coll_gpu_agree_destroy(ranks_[1]->agree);
    ranks_[1]->agree = nullptr;
    const coll_gpu_agree_key_t k = key(2);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      coll_gpu_agree_t *a = nullptr;
      if (coll_gpu_agree_create(table_, &k, 1, 1, &a) != COLL_GPU_SUCCESS) _exit(1);
      coll_gpu_agree_post(a, bits);
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(child, waitpid(child, &status, 0));
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  Call *new_call(int rank, int id, uint32_t mine) {
    calls_.push_back(std::make_unique<Call>());
    Call *c = calls_.back().get();
    memset(&c->q, 0, sizeof(c->q));
    c->q.planned = 1;
    c->q.mine = mine;
    c->id = id;
    c->rank = ranks_[(size_t)rank].get();
    return c;
  }
  // Nonblocking call `id` on `rank` with path bits `mine`, as the glue's entry makes it.
  Call *icall(int rank, int id, uint32_t mine, coll_gpu_status_t counted = COLL_GPU_SUCCESS, int equal_blocks = 0) {
    Call *c = new_call(rank, id, mine);
    c->counted = counted;
    c->equal_blocks = equal_blocks;
    Rank *r = c->rank;
    switch (coll_gpu_calls_post(&r->q, &c->q)) {
      case COLL_GPU_CALLS_PREVIOUS:
        op_start_previous(r, &c->q);
        break;
      case COLL_GPU_CALLS_DEFER: {
        coll_gpu_call_t fresh;
        memset(&fresh, 0, sizeof(fresh));
        fresh.planned = 1;
        fresh.mine = mine;
        c->q = fresh;
        coll_gpu_calls_enqueue(&r->q, &c->q);
        break;
      }
      case COLL_GPU_CALLS_OWN:
        coll_gpu_calls_begin(&r->q, &c->q);
        break;
    }
    return c;
  }
  // A nonblocking call without a GPU path (MPI_Ibarrier): behind the queued calls, or at once.
  Call *plain(int rank, int id) {
    Call *c = new_call(rank, id, 0);
    c->q.planned = 0;
    if (coll_gpu_calls_queued(&c->rank->q))
      coll_gpu_calls_enqueue(&c->rank->q, &c->q);
    else
      op_start_previous(c->rank, &c->q);
    return c;
  }
  // Progress on one rank: its queue, and its calls through the previous module complete.
  void progress(Rank &r) {
    coll_gpu_calls_progress(&r.q);
    for (Call *c : r.running) {
      c->previous = 0;
      if (!c->q.persistent) coll_gpu_calls_unclaim(&r.q, &c->q);
      op_finish(&r, &c->q, COLL_GPU_CALL_DONE, nullptr, nullptr);
    }
    r.running.clear();
  }
  // Progress on every rank until every call ended (false after `ms` without it).
  bool settle(int ms = 5000) {
    const uint64_t until = coll_gpu_now_ns() + (uint64_t)ms * 1000000ull;
    while (coll_gpu_now_ns() < until) {
      for (auto &r : ranks_) progress(*r);
      bool all = true;
      for (auto &c : calls_) all = all && (c->q.persistent ? c->ended == c->starts_made : c->ended > 0);
      bool pending = false;
      for (auto &r : ranks_) pending = pending || coll_gpu_calls_pending(&r->q) || !r->running.empty();
      if (all && !pending) return true;
    }
    return false;
  }
  // The ids of a rank's starts, in order, and whether each ran on the GPUs.
  static std::string starts(const Rank &r) {
    std::string s;
    for (const Start &st : r.starts) s += std::to_string(st.id) + (st.gpu ? "g " : "p ");
    return s;
  }
  std::string dir_;
  coll_gpu_agree_table_t *table_ = nullptr;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::vector<std::unique_ptr<Call>> calls_;
};

}  // namespace

// Ranks in step: each call posts on one rank, then on the other. Every call runs on the GPUs, one at a time, in the
// order made, on both ranks; the engine is made once, at the first call, from progress; every claim ends.
TEST_F(Calls, CallsInStepRunOnTheGpusInOrder) {
  make_ranks(2);
  for (int id = 0; id < 12; ++id)
    for (int r = 0; r < 2; ++r) icall(r, id, kGpu);
  ASSERT_TRUE(settle());
  std::string expected;
  for (int id = 0; id < 12; ++id) expected += std::to_string(id) + "g ";
  for (auto &r : ranks_) {
    EXPECT_EQ(expected, starts(*r));
    EXPECT_EQ(1, r->engines_made);
    EXPECT_EQ(0, r->claims);
  }
  for (auto &c : calls_) {
    EXPECT_EQ(1, c->ended) << c->id;
    EXPECT_EQ(COLL_GPU_CALL_DONE, c->how) << c->id;
  }
}

// One rank's buffers need staging for some calls: those calls go through the previous module on every rank, in
// their place; the others stay on the GPUs.
TEST_F(Calls, ARankThatStagesStagesEveryRank) {
  make_ranks(3);
  for (int id = 0; id < 10; ++id)
    for (int r = 0; r < 3; ++r) icall(r, id, r == 1 && id % 3 == 0 ? kStage : kGpu);
  ASSERT_TRUE(settle());
  std::string expected;
  for (int id = 0; id < 10; ++id) expected += std::to_string(id) + (id % 3 == 0 ? "p " : "g ");
  for (auto &r : ranks_) {
    EXPECT_EQ(expected, starts(*r));
    EXPECT_EQ(0, r->claims);
  }
}

// A late rank: the other posts many calls (one without a GPU path among them) before it posts any. They queue, and
// start in order once it comes; the plain call starts in its place. Nothing fails, and the watchdog is silent
// within its timeout.
TEST_F(Calls, ALateRankHoldsCallsBackInOrder) {
  make_ranks(2);
  for (int id = 0; id < 8; ++id) {
    if (id == 4)
      plain(0, id);
    else
      icall(0, id, kGpu);
  }
  EXPECT_TRUE(coll_gpu_calls_queued(&ranks_[0]->q));
  for (int i = 0; i < 50; ++i) progress(*ranks_[0]);
  EXPECT_TRUE(ranks_[0]->starts.empty()) << starts(*ranks_[0]);
  for (int id = 0; id < 8; ++id) {
    if (id == 4)
      plain(1, id);
    else
      icall(1, id, kGpu);
  }
  ASSERT_TRUE(settle());
  const std::string expected = "0g 1g 2g 3g 4p 5g 6g 7g ";
  for (auto &r : ranks_) {
    EXPECT_EQ(expected, starts(*r));
    EXPECT_EQ(0, r->claims);
    EXPECT_EQ(0, r->reports);
  }
  for (auto &c : calls_) EXPECT_EQ(COLL_GPU_CALL_DONE, c->how) << c->id;
}

// A rank late past the timeout: its peer's first queued call writes the watchdog line once and goes on waiting; it
// completes once the late rank comes.
TEST_F(Calls, ALateRankIsReportedOnceNotFailed) {
  make_ranks(2);
  ranks_[0]->q.timeout_ns = 1000000;  // 1 ms
  icall(0, 0, kGpu);
  const uint64_t until = coll_gpu_now_ns() + 30000000ull;
  while (coll_gpu_now_ns() < until) progress(*ranks_[0]);
  EXPECT_EQ(1, ranks_[0]->reports);
  EXPECT_EQ(0, calls_[0]->ended);
  icall(1, 0, kGpu);
  ASSERT_TRUE(settle());
  EXPECT_EQ(1, ranks_[0]->reports);
  for (auto &c : calls_) EXPECT_EQ(COLL_GPU_CALL_DONE, c->how);
}

// A rank whose process is gone (a child that joined, posted its first call and exited): the call that waits for it
// fails, naming it, and its claim ends.
TEST_F(Calls, ARankWhoseProcessIsGoneFailsTheCall) {
  make_ranks(2);
  rank_1_posts_and_exits(kGpu);
  icall(0, 0, kGpu);  // read with the child's post
  Call *waits = icall(0, 1, kGpu);
  const uint64_t until = coll_gpu_now_ns() + 2000000000ull;
  while (waits->ended == 0 && coll_gpu_now_ns() < until) progress(*ranks_[0]);
  ASSERT_EQ(1, waits->ended);
  EXPECT_EQ(COLL_GPU_CALL_FAILED, waits->how);
  EXPECT_NE(std::string::npos, waits->why.find("rank(s) 1 ended before it reached the call")) << waits->why;
  EXPECT_EQ(0, ranks_[0]->claims);
  EXPECT_FALSE(coll_gpu_calls_pending(&ranks_[0]->q));
}

// Persistent calls: posted at init, their answers read in progress, started many times, each start on the GPUs;
// the queue lets each go once after its answer; the claim lasts from init to the owner's release.
TEST_F(Calls, PersistentCallsAgreeAtInitAndStartManyTimes) {
  make_ranks(2);
  std::vector<Call *> pc;
  for (int r = 0; r < 2; ++r)
    for (int id = 0; id < 2; ++id) {
      Call *c = new_call(r, id, kGpu);
      ASSERT_EQ(COLL_GPU_CALLS_OWN, coll_gpu_calls_init(&c->rank->q, &c->q));
      coll_gpu_calls_init_done(&c->rank->q, &c->q);
      pc.push_back(c);
    }
  for (int round = 0; round < 3; ++round) {
    for (Call *c : pc) {
      ++c->starts_made;
      coll_gpu_calls_start(&c->rank->q, &c->q);
    }
    ASSERT_TRUE(settle()) << round;
  }
  for (auto &r : ranks_) {
    EXPECT_EQ("0g 1g 0g 1g 0g 1g ", starts(*r));
    EXPECT_EQ(2, r->claims);  // held from init to free
  }
  for (Call *c : pc) {
    EXPECT_EQ(3, c->ended);
    EXPECT_LE(c->left, 1);  // let go after its answer where progress read it, never twice
    EXPECT_FALSE(c->q.queued || c->q.in_answers) << "the queue still holds it";
    coll_gpu_calls_unclaim(&c->rank->q, &c->q);
  }
  for (auto &r : ranks_) EXPECT_EQ(0, r->claims);
}

// A persistent call one rank stages: every start of it on every rank goes through the previous module, and its
// claim ends once the answer is read.
TEST_F(Calls, APersistentCallOneRankStagesIsStagedEverywhere) {
  make_ranks(2);
  std::vector<Call *> pc;
  coll_gpu_call_t staged;  // rank 1's: its own bits decide, and the previous module's request serves every start
  memset(&staged, 0, sizeof(staged));
  staged.planned = 1;
  staged.mine = kStage;
  EXPECT_EQ(COLL_GPU_CALLS_PREVIOUS, coll_gpu_calls_init(&ranks_[1]->q, &staged));
  Call *c = new_call(0, 0, kGpu);
  ASSERT_EQ(COLL_GPU_CALLS_OWN, coll_gpu_calls_init(&c->rank->q, &c->q));
  coll_gpu_calls_init_done(&c->rank->q, &c->q);
  pc.push_back(c);
  EXPECT_EQ(1, ranks_[0]->claims);
  for (int i = 0; i < 10; ++i) progress(*ranks_[0]);  // its answer read before any start: the claim ends
  EXPECT_EQ(0, ranks_[0]->claims);
  EXPECT_EQ(1, c->left);
  for (int round = 0; round < 2; ++round) {
    ++pc[0]->starts_made;
    coll_gpu_calls_start(&pc[0]->rank->q, &pc[0]->q);
    ASSERT_TRUE(settle()) << "posted " << pc[0]->q.posted << " answered " << pc[0]->q.answered << " all "
                          << pc[0]->q.all << " queued " << pc[0]->q.queued << " in_answers " << pc[0]->q.in_answers
                          << " ended " << pc[0]->ended << " starts " << starts(*ranks_[0]);
  }
  EXPECT_EQ("0p 0p ", starts(*ranks_[0]));
  EXPECT_EQ(0, ranks_[0]->claims);
}

// Calls with counts: the zero-copy exchange decides. Done: on the GPUs; unavailable: staged, or (a move of equal
// blocks) through the FIFOs on the GPUs.
TEST_F(Calls, CallsWithCountsGoWhereTheirExchangeSays) {
  make_ranks(2);
  for (int id = 0; id < 3; ++id)
    for (int r = 0; r < 2; ++r) icall(r, id, kCounted, id == 0 ? COLL_GPU_SUCCESS : COLL_GPU_UNAVAILABLE, id == 2);
  ASSERT_TRUE(settle());
  for (auto &r : ranks_) {
    EXPECT_EQ("0g 1p 2g ", starts(*r));
    EXPECT_EQ(0, r->claims);
  }
}

// A failure on the engine ends the call as failed, its claim with it; the calls behind it still end.
TEST_F(Calls, AFailedStartEndsTheCall) {
  make_ranks(2);
  ranks_[0]->fail_id = 0;
  for (int id = 0; id < 2; ++id)
    for (int r = 0; r < 2; ++r) icall(r, id, kGpu);
  ASSERT_TRUE(settle());
  EXPECT_EQ(COLL_GPU_CALL_FAILED, calls_[0]->how);
  EXPECT_EQ("a stand-in failure", calls_[0]->why);
  EXPECT_EQ(0, ranks_[0]->claims);
  EXPECT_EQ(0, ranks_[1]->claims);
}

// A claim refused (another communicator holds a shared engine): the call posts STAGE, and every rank stages it.
TEST_F(Calls, ARefusedClaimStagesTheCallEverywhere) {
  make_ranks(2);
  ranks_[1]->refuse_claims = true;
  for (int r = 0; r < 2; ++r) icall(r, 0, kGpu);
  ranks_[1]->refuse_claims = false;
  for (int r = 0; r < 2; ++r) icall(r, 1, kGpu);
  ASSERT_TRUE(settle());
  for (auto &r : ranks_) {
    EXPECT_EQ("0p 1g ", starts(*r));
    EXPECT_EQ(0, r->claims);
  }
}

// Uniform buffers asserted: no agreement; each rank's own bits decide, and calls on the GPUs still run one at a
// time, in order.
TEST_F(Calls, UniformBuffersNeedNoAgreement) {
  make_ranks(2, true);
  for (int id = 0; id < 4; ++id)
    for (int r = 0; r < 2; ++r) icall(r, id, kGpu);
  ASSERT_TRUE(settle());
  for (auto &r : ranks_) EXPECT_EQ("0g 1g 2g 3g ", starts(*r));
}

// Once the engine is up, a call every rank has posted starts at the call where the engine is free, and queues
// behind the call still on it otherwise; either way one at a time, in order.
TEST_F(Calls, CallsStartAtTheCallOnceTheEngineIsUp) {
  make_ranks(2);
  for (int r = 0; r < 2; ++r) icall(r, 0, kGpu);
  ASSERT_TRUE(settle());
  int at_the_call = 0, behind = 0;
  for (int id = 1; id < 12; ++id) {
    icall(0, id, kGpu);
    Rank &r1 = *ranks_[1];
    const size_t before = r1.starts.size();
    const bool engine_busy = r1.in_flight != nullptr;
    icall(1, id, kGpu);  // rank 0 has posted: answered at the call
    if (r1.starts.size() > before) ++at_the_call;
    if (engine_busy) ++behind;
    progress(*ranks_[0]);
    progress(r1);
  }
  ASSERT_TRUE(settle());
  EXPECT_GT(at_the_call, 0);
  EXPECT_GT(behind, 0);
  std::string expected;
  for (int id = 0; id < 12; ++id) expected += std::to_string(id) + "g ";
  for (auto &r : ranks_) {
    EXPECT_EQ(expected, starts(*r));
    EXPECT_EQ(0, r->claims);
  }
}

// A blocking call's agreement: every rank's bits ORed (the other rank a child that posted and left); the next one,
// which waits for the child gone, fails naming it. With uniform buffers no agreement: this rank's bits.
TEST_F(Calls, ABlockingCallAgreesAndNamesAGoneRank) {
  make_ranks(2);
  rank_1_posts_and_exits(kStage);
  const coll_gpu_agree_watch_t watch = {{0, 60ull * 1000000000ull, nullptr}, nullptr, nullptr};
  uint32_t all = 0;
  char why[256] = "";
  ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_calls_agree(&ranks_[0]->q, kGpu, &watch, &all, why, sizeof(why))) << why;
  EXPECT_EQ(kGpu | kStage, all);
  EXPECT_NE(COLL_GPU_SUCCESS, coll_gpu_calls_agree(&ranks_[0]->q, kGpu, &watch, &all, why, sizeof(why)));
  EXPECT_STREQ("the process of rank(s) 1 ended before it reached the call", why);
  EXPECT_EQ(COLL_GPU_UNAVAILABLE, coll_gpu_calls_agree(&ranks_[1]->q, kGpu, &watch, &all, why, sizeof(why)))
      << "a rank without an agreement";
  ranks_[0]->q.uniform = 1;
  all = 0;
  EXPECT_EQ(COLL_GPU_SUCCESS, coll_gpu_calls_agree(&ranks_[0]->q, kCounted, &watch, &all, why, sizeof(why)));
  EXPECT_EQ(kCounted, all);
}
