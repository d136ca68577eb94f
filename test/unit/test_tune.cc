/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The tuning model: its cost table, the choices it makes by collective and size, what the parameters and rules
// force, and what the scratch sizes allow (the layout itself: test_layout.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/tune.h"

namespace {

coll_gpu_tune_config_t defaults() {
  coll_gpu_tune_config_t c;
  for (int &p : c.protocol) p = -1;
  c.nchannels = 0;
  c.max_channels = 16;
  c.oneshot_max_bytes = 512 << 10;
  c.twoshot_max_bytes = 16 << 20;
  c.ring_chunk_bytes = 0;
  for (int &a : c.algorithm) a = -1;
  c.min_sms = 0;
  c.max_blocks = 0;
  c.net = 0;
  c.nodes = 0;
  c.net_ring_channels = 0;
  c.shm = 0;
  c.link_gbps = 0;
  c.rules = nullptr;
  c.nrules = 0;
  return c;
}

// The defaults, where `given` takes algo for coll: 0 the rules built in (nothing set), 1 the user's rules `r`, 2 the
// parameter.
coll_gpu_tune_config_t given_config(int given, const coll_gpu_tune_rule_t *r, int nrules, coll_gpu_coll_t coll,
                                    coll_gpu_algo_t algo) {
  coll_gpu_tune_config_t c = defaults();
  if (given == 1) {
    c.rules = r;
    c.nrules = nrules;
  } else if (given == 2) {
    c.algorithm[coll] = algo;
  }
  return c;
}

// The least modelled time of algo over the protocols the table has it run.
double fastest(const coll_gpu_tune_config_t &c, coll_gpu_coll_t coll, coll_gpu_algo_t algo, int n, size_t bytes) {
  double best = 1e30;
  for (int p = 0; p < COLL_GPU_NPROTOS; ++p)
    best = std::min(best, coll_gpu_tune_time_us(&c, coll, algo, (coll_gpu_proto_t)p, n, bytes));
  return best;
}

// As messages grow the choice moves one way: one-shot, then two-shot, then ring; never back.
TEST(Tune, ChoicesGrowWithSize) {
  coll_gpu_tune_config_t c = defaults();
  for (int n : {2, 3, 4, 8}) {
    int last = COLL_GPU_ALGO_ONESHOT;
    for (size_t bytes = 8; bytes <= (1ul << 31); bytes *= 2) {
      coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, bytes);
      EXPECT_GE((int)ch.algo, last) << n << " ranks, " << bytes << " bytes";
      last = ch.algo;
      EXPECT_TRUE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, ch.algo, n, bytes));
      EXPECT_GE(ch.nchannels, 1);
      EXPECT_LE(ch.nchannels, ch.algo == COLL_GPU_ALGO_RING ? c.max_channels : 2 * COLL_GPU_MAX_CHANNELS);
      EXPECT_LT(coll_gpu_tune_time_us(&c, COLL_GPU_COLL_ALLREDUCE, ch.algo, ch.proto, n, bytes), 1e30);
    }
    EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, 8).algo);
    EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, 1ul << 30).algo);
  }
}

// Where nothing is forced or ruled, the choice of every collective is the pair of algorithm and protocol with the least
// modelled time among those that fit, over NVLink, a narrower link and shared host memory.
TEST(Tune, ChoiceMinimizesTheTable) {
  for (int link = 0; link < 3; ++link) {
    coll_gpu_tune_config_t c = defaults();
    c.link_gbps = link == 1 ? 24 : 0;
    c.shm = link == 2;
    for (int k = 0; k < COLL_GPU_NCOLLS; ++k)
      for (int n : {2, 3, 8, 16})
        for (size_t bytes = 8; bytes <= (1ul << 28); bytes *= 4) {
          const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
          const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, coll, n, bytes);
          ASSERT_TRUE(coll_gpu_tune_fits(&c, coll, ch.algo, n, bytes)) << k << " " << n << " " << bytes;
          const double t = coll_gpu_tune_time_us(&c, coll, ch.algo, ch.proto, n, bytes);
          ASSERT_LT(t, 1e30);
          for (int a = 0; a < COLL_GPU_NALGOS; ++a)
            for (int p = 0; p < COLL_GPU_NPROTOS; ++p)
              if (coll_gpu_tune_fits(&c, coll, (coll_gpu_algo_t)a, n, bytes)) {
                EXPECT_LE(t, coll_gpu_tune_time_us(&c, coll, (coll_gpu_algo_t)a, (coll_gpu_proto_t)p, n, bytes))
                    << link << " " << k << " " << n << " " << bytes << " " << a << " " << p;
              }
        }
  }
}

// The table: every algorithm a collective has runs in some protocol on every link (one-shot in LL, the others in
// Simple), so whatever is forced or ruled has a time; the pairs it lacks take 1e30, and so do algorithms that are not.
TEST(Tune, TableHasEveryAlgorithm) {
  for (int shm = 0; shm < 2; ++shm) {
    coll_gpu_tune_config_t c = defaults();
    c.shm = shm;
    for (int k = 0; k < COLL_GPU_NCOLLS; ++k)
      for (int a = 0; a < COLL_GPU_NALGOS; ++a) {
        if (!coll_gpu_coll_has((coll_gpu_coll_t)k, (coll_gpu_algo_t)a)) continue;
        const coll_gpu_proto_t runs = a == COLL_GPU_ALGO_ONESHOT ? COLL_GPU_PROTO_LL : COLL_GPU_PROTO_SIMPLE;
        for (int p = 0; p < COLL_GPU_NPROTOS; ++p) {
          const double t =
              coll_gpu_tune_time_us(&c, (coll_gpu_coll_t)k, (coll_gpu_algo_t)a, (coll_gpu_proto_t)p, 4, 4096);
          if (p == runs) {
            EXPECT_GT(t, 0) << shm << " " << k << " " << a;
            EXPECT_LT(t, 1e30) << shm << " " << k << " " << a;
          } else {
            EXPECT_EQ(1e30, t) << shm << " " << k << " " << a << " " << p;
          }
        }
      }
    EXPECT_EQ(1e30, coll_gpu_tune_time_us(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_NALGOS, COLL_GPU_PROTO_LL, 4, 8));
    EXPECT_EQ(1e30, coll_gpu_tune_time_us(&c, COLL_GPU_NCOLLS, COLL_GPU_ALGO_RING, COLL_GPU_PROTO_SIMPLE, 4, 8));
  }
}

// Choices the H200 measurements back (engine/tune.cc): one-shot up to 512 KiB at 2 ranks and 256 KiB
// at 4, where two-shot took 30 us and one-shot 12 at 32 KiB; two-shot for 1 MiB at 2 ranks (22.6 us
// against 23.4) and at 8, where one-shot pushes 7 MiB of LL lines; two-shot at 16 MiB on 2 ranks (75 us
// against the ring's 80).
TEST(Tune, MeasuredChoices) {
  coll_gpu_tune_config_t c = defaults();
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 512 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 1 << 20).algo);
  for (int n : {2, 3, 4})
    EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, 256 << 10).algo) << n;
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, 1 << 20).algo);
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 16 << 20).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 32 << 20).algo);
}

// Over the SHM node transport (shared host memory) the choices follow its costs, which the run on one H200 under
// MPS backs (engine/tune.cc): at 2 ranks allreduce one-shot at 8 KiB (21 us against two-shot's 25), two-shot
// at 64 KiB (26 against one-shot's 111 and the ring's 33) and the ring at 1 MiB (88 against 98); at 4 ranks
// two-shot at 8 KiB (34 against 39) and the ring at 512 KiB (114 against 141); the others one-shot at 16 KiB
// (bcast at 2 ranks: 23 against 32) and the ring at 32 KiB (44 against 32), and NVLink's choices unchanged.
TEST(Tune, SharedMemoryChoices) {
  coll_gpu_tune_config_t c = defaults();
  c.shm = 1;
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 8 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 64 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 1 << 20).algo);
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 8 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 512 << 10).algo);
  for (int k = COLL_GPU_COLL_BCAST; k < COLL_GPU_NCOLLS; ++k)
    for (int n : {2, 4}) {
      const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
      if (coll != COLL_GPU_COLL_ALLTOALL) {
        EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, coll, n, 16 << 10).algo) << k << " " << n;
      }
      EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, coll, n, 32 << 10).algo) << k << " " << n;
      coll_gpu_tune_config_t nv = c;
      nv.shm = 0;
      EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&nv, coll, n, 32 << 10).algo) << k << " " << n;
    }
  c.shm = 0;
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 64 << 10).algo);
}

// The topology's link: below the reference the bandwidths scale with it; at it, above it, unknown, over SHM or the
// network they keep the measured constants.
TEST(Tune, LinkScale) {
  coll_gpu_tune_config_t c = defaults();
  for (double gbps : {0.0, COLL_GPU_TUNE_REF_GBPS, 5000.0}) {
    c.link_gbps = gbps;
    EXPECT_EQ(1.0, coll_gpu_tune_link_scale(&c)) << gbps;
  }
  c.link_gbps = 24;
  EXPECT_NEAR(24 / 370.8, coll_gpu_tune_link_scale(&c), 1e-12);
  coll_gpu_tune_config_t other = c;
  other.shm = 1;
  EXPECT_EQ(1.0, coll_gpu_tune_link_scale(&other));
  other = c;
  other.net = 1;
  EXPECT_EQ(1.0, coll_gpu_tune_link_scale(&other));
}

// On a narrower link every modelled time keeps its latency (the time of 0 bytes) and its bytes take longer by
// the ratio of the links, for allreduce and the other collectives alike.
TEST(Tune, NarrowLinkScalesTheBandwidthTerms) {
  const coll_gpu_tune_config_t ref = defaults();
  for (double gbps : {24.0, 40.0, 200.0}) {
    coll_gpu_tune_config_t c = defaults();
    c.link_gbps = gbps;
    const double ratio = COLL_GPU_TUNE_REF_GBPS / gbps;
    for (int n : {2, 3, 8})
      for (size_t bytes : {(size_t)8, (size_t)64 << 10, (size_t)16 << 20}) {
        for (coll_gpu_algo_t a : {COLL_GPU_ALGO_ONESHOT, COLL_GPU_ALGO_TWOSHOT, COLL_GPU_ALGO_RING}) {
          const double lat = fastest(ref, COLL_GPU_COLL_ALLREDUCE, a, n, 0);
          EXPECT_NEAR(lat, fastest(c, COLL_GPU_COLL_ALLREDUCE, a, n, 0), 1e-9);
          const double want = lat + (fastest(ref, COLL_GPU_COLL_ALLREDUCE, a, n, bytes) - lat) * ratio;
          EXPECT_NEAR(want, fastest(c, COLL_GPU_COLL_ALLREDUCE, a, n, bytes), 1e-9 * want)
              << gbps << " " << n << " " << a;
        }
        for (int k = COLL_GPU_COLL_BCAST; k < COLL_GPU_NCOLLS; ++k) {
          const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
          const double lat = fastest(ref, coll, COLL_GPU_ALGO_RING, n, 0);
          const double want = lat + (fastest(ref, coll, COLL_GPU_ALGO_RING, n, bytes) - lat) * ratio;
          EXPECT_NEAR(want, fastest(c, coll, COLL_GPU_ALGO_RING, n, bytes), 1e-9 * want) << k;
        }
      }
  }
}

// The narrower the link, the sooner the algorithms that spend fewer bytes take over: the largest message each
// collective runs one-shot (LL, half of each line flags) never grows as the link narrows, and on PCIe Gen4 x16
// (24 GB/s) an allreduce of 64 KiB at 2 ranks runs two-shot, one of 4 MiB the ring, where NVSwitch's link keeps
// one-shot and two-shot (MeasuredChoices).
TEST(Tune, NarrowLinkMovesTheCrossovers) {
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k)
    for (int n : {2, 4, 8}) {
      size_t last = SIZE_MAX;
      for (double gbps : {370.8, 200.0, 100.0, 40.0, 24.0, 10.0}) {
        coll_gpu_tune_config_t c = defaults();
        c.link_gbps = gbps;
        size_t largest = 0;
        for (size_t bytes = 8; bytes <= ((size_t)1 << 30); bytes *= 2)
          if (coll_gpu_tune_choose(&c, (coll_gpu_coll_t)k, n, bytes).algo == COLL_GPU_ALGO_ONESHOT) largest = bytes;
        EXPECT_LE(largest, last) << k << " " << n << " ranks, " << gbps << " GB/s";
        last = largest;
      }
    }
  coll_gpu_tune_config_t c = defaults();
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 64 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 4 << 20).algo);
  c.link_gbps = 24;
  EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 64 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 4 << 20).algo);
}

// The user's rules: parsed from their text, each entry checked, with the reason where one is wrong.
TEST(Tune, RulesParse) {
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int n = -1;
  char why[256];
  ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules("allreduce:0-64k:oneshot,bcast:1M-:ring,reduce_scatter:"
                                                        "3-3:oneshot,allreduce:2g-4G:chain",
                                                        r, &n, why, sizeof(why)));
  ASSERT_EQ(4, n);
  EXPECT_EQ(COLL_GPU_COLL_ALLREDUCE, r[0].coll);
  EXPECT_EQ(0u, r[0].from);
  EXPECT_EQ(65536u, r[0].to);
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, r[0].algo);
  EXPECT_EQ(COLL_GPU_COLL_BCAST, r[1].coll);
  EXPECT_EQ(1u << 20, r[1].from);
  EXPECT_EQ(SIZE_MAX, r[1].to);
  EXPECT_EQ(COLL_GPU_ALGO_RING, r[1].algo);
  EXPECT_EQ(COLL_GPU_COLL_REDUCE_SCATTER, r[2].coll);
  EXPECT_EQ(3u, r[2].from);
  EXPECT_EQ(3u, r[2].to);
  EXPECT_EQ((size_t)2 << 30, r[3].from);
  EXPECT_EQ((size_t)4 << 30, r[3].to);
  EXPECT_EQ(COLL_GPU_ALGO_CHAIN, r[3].algo);
  for (const char *none : {"", static_cast<const char *>(nullptr)}) {
    n = -1;
    EXPECT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules(none, r, &n, why, sizeof(why)));
    EXPECT_EQ(0, n);
  }
  const struct {
    const char *text, *reason;
  } bad[] = {{"allreduce:0-64k", "is not COLL:FROM-TO:ALGO"},
             {"allreduce:64k:ring", "is not COLL:FROM-TO:ALGO"},
             {"scan:0-:ring", "scan is not allreduce, bcast, allgather, alltoall, reduce or reduce_scatter"},
             {"allreduce:-64k:ring", "is not FROM-TO"},
             {"allreduce:1x-2:ring", "is not FROM-TO"},
             {"allreduce:0-99999999999999999999:ring", "is not FROM-TO"},
             {"allreduce:0-99999999999g:ring", "is not FROM-TO"},
             {"allreduce:2k-1k:ring", "FROM is above TO"},
             {"bcast:0-:twoshot", "bcast has no algorithm twoshot (oneshot, ring)"},
             {"alltoall:0-:chain", "alltoall has no algorithm chain"},
             {"allreduce:0-:Ring", "allreduce has no algorithm Ring (oneshot, twoshot, ring, chain, allgather, tree)"},
             {"allreduce:0-:ring,", "a comma at the end"},
             {"allreduce:0-:ring,,bcast:0-:ring", "\"\" is not COLL:FROM-TO:ALGO"}};
  for (const auto &b : bad) {
    why[0] = '\0';
    EXPECT_EQ(COLL_GPU_INVALID_INPUT, coll_gpu_tune_parse_rules(b.text, r, &n, why, sizeof(why))) << b.text;
    EXPECT_NE(nullptr, strstr(why, b.reason)) << b.text << ": " << why;
  }
  std::string many;
  for (int i = 0; i <= COLL_GPU_TUNE_MAX_RULES; ++i) many += std::string(i > 0 ? "," : "") + "bcast:0-:ring";
  EXPECT_EQ(COLL_GPU_INVALID_INPUT, coll_gpu_tune_parse_rules(many.c_str(), r, &n, why, sizeof(why)));
  EXPECT_NE(nullptr, strstr(why, "more than"));
  many = many.substr(0, many.rfind(','));  // exactly the most
  EXPECT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules(many.c_str(), r, &n, why, sizeof(why)));
  EXPECT_EQ(COLL_GPU_TUNE_MAX_RULES, n);
}

// A rule takes the calls of its collective in its range where no algorithm is forced and the algorithm fits them;
// the first that matches wins; the model decides the rest.
TEST(Tune, RulesChoose) {
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int n = 0;
  char why[256];
  ASSERT_EQ(COLL_GPU_SUCCESS,
            coll_gpu_tune_parse_rules("allreduce:0-1k:ring,allreduce:0-64k:twoshot,allreduce:1m-:oneshot,"
                                      "bcast:0-16k:ring,alltoall:1m-2m:oneshot",
                                      r, &n, why, sizeof(why)));
  coll_gpu_tune_config_t c = defaults();
  c.rules = r;
  c.nrules = n;
  const coll_gpu_tune_config_t model = defaults();
  for (int ranks : {2, 4, 8}) {
    EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, ranks, 8).algo);
    EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, ranks, 1024).algo);
    EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, ranks, 1025).algo);
    EXPECT_EQ(COLL_GPU_ALGO_TWOSHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, ranks, 64 << 10).algo);
    // between the rules, and where one-shot does not fit (above coll_gpu_oneshot_max_bytes), the model
    for (size_t bytes : {(size_t)128 << 10, (size_t)1 << 20, (size_t)64 << 20}) {
      EXPECT_EQ(coll_gpu_tune_choose(&model, COLL_GPU_COLL_ALLREDUCE, ranks, bytes).algo,
                coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, ranks, bytes).algo)
          << bytes;
    }
    EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, ranks, 16 << 10).algo);
    EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, ranks, (16 << 10) + 1).algo);
    EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, ranks, 1 << 20).algo);
    EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, ranks, 4 << 20).algo);
    // other collectives: the model
    EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, ranks, 8).algo);
  }
  // what a parameter forces wins over the rules
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_ONESHOT;
  c.algorithm[COLL_GPU_COLL_BCAST] = COLL_GPU_ALGO_ONESHOT;
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 8).algo);
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, 8).algo);
  // across nodes: a rule whose algorithm runs there takes its calls, one that does not (one-shot) gives way
  c = defaults();
  c.net = 1;
  c.rules = r;
  c.nrules = n;
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 8).algo);
  // two-shot does not fit there: the rules built in take the call, the allgather where the inputs fit
  EXPECT_EQ(COLL_GPU_ALGO_ALLGATHER, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 2048).algo);
  EXPECT_EQ(COLL_GPU_ALGO_TREE, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 32 << 10).algo);
  EXPECT_EQ(COLL_GPU_ALGO_CHAIN, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 192 << 10).algo);
}

// Where only the rings run (across nodes, beyond 8 ranks), every collective takes the ring whatever is forced or
// ruled; across nodes an allreduce takes the ring, the chain, or the allgather where it fits and the chain is not
// forced.
TEST(Tune, RingOnly) {
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int n = 0;
  char why[256];
  ASSERT_EQ(COLL_GPU_SUCCESS,
            coll_gpu_tune_parse_rules("allreduce:0-:oneshot,bcast:0-:oneshot", r, &n, why, sizeof(why)));
  for (int net : {0, 1})
    for (int forced : {-1, (int)COLL_GPU_ALGO_ONESHOT, (int)COLL_GPU_ALGO_TWOSHOT, (int)COLL_GPU_ALGO_CHAIN,
                       (int)COLL_GPU_ALGO_ALLGATHER}) {
      coll_gpu_tune_config_t c = defaults();
      c.net = net;
      c.algorithm[COLL_GPU_COLL_ALLREDUCE] = forced;
      c.rules = r;
      c.nrules = n;
      for (int k = 0; k < COLL_GPU_NCOLLS; ++k)
        if (k != COLL_GPU_COLL_ALLREDUCE) c.algorithm[k] = forced != COLL_GPU_ALGO_ONESHOT ? -1 : forced;
      for (size_t bytes : {(size_t)8, (size_t)64 << 10, (size_t)1 << 20, (size_t)64 << 20}) {
        const coll_gpu_algo_t a = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 16, bytes).algo;
        if (net) {
          const bool gathers = forced != COLL_GPU_ALGO_CHAIN && 16 * bytes <= COLL_GPU_TUNE_GATHER_BYTES;
          EXPECT_TRUE(gathers ? a == COLL_GPU_ALGO_ALLGATHER : a == COLL_GPU_ALGO_RING || a == COLL_GPU_ALGO_CHAIN)
              << forced << " " << bytes;
        } else {
          EXPECT_EQ(COLL_GPU_ALGO_RING, a) << forced << " " << bytes;
        }
        for (int k = COLL_GPU_COLL_BCAST; k < COLL_GPU_NCOLLS; ++k) {
          EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, (coll_gpu_coll_t)k, 16, bytes).algo)
              << k << " " << forced << " " << bytes;
        }
      }
    }
}

TEST(Tune, ForcedAlgorithmWhereItFits) {
  coll_gpu_tune_config_t c = defaults();
  // staged is not the engine's to run: forced on it, the engine's calls take the model's choice
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_NALGOS;
  EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_NALGOS, 2, 8));
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 8).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 16, 8).algo);
  c = defaults();
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_RING;
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, 8).algo);
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_ONESHOT;
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, c.oneshot_max_bytes).algo);
  // too large for the one-shot scratch: the model decides
  EXPECT_NE(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, c.oneshot_max_bytes + 16).algo);
}

TEST(Tune, ProtocolRestrictsTheChoice) {
  coll_gpu_tune_config_t c = defaults();
  c.protocol[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_PROTO_SIMPLE;
  EXPECT_NE(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, 8).algo);
  c.protocol[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_PROTO_LL;
  EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, c.oneshot_max_bytes).algo);
  // nothing of that protocol fits: any algorithm
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, 1ul << 30).algo);
  // each collective's own: Simple for bcast leaves it the ring, and the others as they were
  c = defaults();
  c.protocol[COLL_GPU_COLL_BCAST] = COLL_GPU_PROTO_SIMPLE;
  const coll_gpu_choice_t bcast = coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, 8);
  EXPECT_EQ(COLL_GPU_ALGO_RING, bcast.algo);
  EXPECT_EQ(COLL_GPU_PROTO_SIMPLE, bcast.proto);
  for (coll_gpu_coll_t coll : {COLL_GPU_COLL_ALLREDUCE, COLL_GPU_COLL_REDUCE}) {
    const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, coll, 4, 8);
    EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, ch.algo) << coll;
    EXPECT_EQ(COLL_GPU_PROTO_LL, ch.proto) << coll;
  }
  // an algorithm forced runs its own protocol whatever protocol is asked for
  c.algorithm[COLL_GPU_COLL_BCAST] = COLL_GPU_ALGO_ONESHOT;
  EXPECT_EQ(COLL_GPU_PROTO_LL, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, 8).proto);
}

TEST(Tune, ZeroSizesDisableAlgorithms) {
  coll_gpu_tune_config_t c = defaults();
  c.oneshot_max_bytes = 0;
  c.twoshot_max_bytes = 0;
  for (size_t bytes : {8ul, 1ul << 20})
    EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, bytes).algo);
}

TEST(Tune, ChannelsForcedAndBounded) {
  coll_gpu_tune_config_t c = defaults();
  c.nchannels = 5;
  EXPECT_EQ(5, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1ul << 30).nchannels);
  c.nchannels = 32;
  EXPECT_EQ(c.max_channels,
            coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1ul << 30).nchannels);    // the ring's FIFOs
  EXPECT_EQ(32, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1 << 20).nchannels);  // two-shot: 32 blocks
  c.nchannels = 0;
  EXPECT_EQ(64,
            coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 8, 1 << 20).nchannels);  // two-shot: a block per 16 KiB
}

// Inside a node a ring that carries more than 512 MiB over each link runs at most 64 channels; what the
// user forces stands, and fewer channels stay fewer.
TEST(Tune, WideRingsRunFewerChannels) {
  coll_gpu_tune_config_t c = defaults();
  c.max_channels = 128;
  const size_t mib = 1ul << 20;
  EXPECT_EQ(128, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 256 * mib).nchannels);  // 384 MiB a link
  EXPECT_EQ(64, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 512 * mib).nchannels);   // 768 MiB a link
  EXPECT_EQ(128, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 512 * mib).nchannels);  // 512 MiB a link
  EXPECT_EQ(64, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 1024 * mib).nchannels);
  for (coll_gpu_coll_t coll : {COLL_GPU_COLL_ALLGATHER, COLL_GPU_COLL_REDUCE_SCATTER}) {
    EXPECT_EQ(128, coll_gpu_tune_choose(&c, coll, 4, 128 * mib).nchannels);  // 3 blocks a link
    EXPECT_EQ(64, coll_gpu_tune_choose(&c, coll, 4, 256 * mib).nchannels);
    EXPECT_EQ(128, coll_gpu_tune_choose(&c, coll, 2, 512 * mib).nchannels);
    EXPECT_EQ(64, coll_gpu_tune_choose(&c, coll, 8, 128 * mib).nchannels);
  }
  EXPECT_EQ(128, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 4, 1024 * mib).nchannels);  // pairs
  for (coll_gpu_coll_t coll : {COLL_GPU_COLL_BCAST, COLL_GPU_COLL_REDUCE}) {  // a chain: the buffer a link
    EXPECT_EQ(128, coll_gpu_tune_choose(&c, coll, 8, 512 * mib).nchannels);
    EXPECT_EQ(64, coll_gpu_tune_choose(&c, coll, 8, 1024 * mib).nchannels);
  }
  c.nchannels = 100;
  EXPECT_EQ(100, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1024 * mib).nchannels);
  c.nchannels = 0;
  c.max_channels = 32;
  EXPECT_EQ(32, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1024 * mib).nchannels);
  c.max_channels = 128;
  c.net = 1;  // over the network the step sets the channels, up to every one
  EXPECT_EQ(128, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1024 * mib).nchannels);
}

// The collectives other than allreduce: direct LL for small blocks, the ring for large ones (alltoall
// beyond 2 ranks: pairwise over point-to-point connections, its Simple algorithm under the same name), the
// modelled faster of the two, and what the parameters force.
TEST(Tune, OtherCollectives) {
  coll_gpu_tune_config_t c = defaults();
  for (int k = COLL_GPU_COLL_BCAST; k < COLL_GPU_NCOLLS; ++k) {
    const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
    for (int n : {2, 3, 4, 8}) {
      EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&c, coll, n, 8).algo) << k << " " << n;
      EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, coll, n, 1ul << 30).algo) << k << " " << n;
      for (size_t bytes = 8; bytes <= (1ul << 30); bytes *= 8) {
        const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, coll, n, bytes);
        EXPECT_LT(coll_gpu_tune_time_us(&c, coll, ch.algo, ch.proto, n, bytes), 1e30);
        const double t = fastest(c, coll, ch.algo, n, bytes);
        EXPECT_LE(t, fastest(c, coll, COLL_GPU_ALGO_RING, n, bytes));
        EXPECT_LE(t, fastest(c, coll, COLL_GPU_ALGO_ONESHOT, n, bytes));
        if (ch.algo == COLL_GPU_ALGO_RING) {
          EXPECT_EQ(0u, ch.chunk % 16);  // whole packs per step
          EXPECT_GE(ch.nchannels, 1);
          EXPECT_LE(ch.nchannels, c.max_channels);
        }
      }
      coll_gpu_tune_config_t f = c;
      f.algorithm[k] = COLL_GPU_ALGO_RING;
      EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&f, coll, n, 8).algo);
      f.algorithm[k] = COLL_GPU_ALGO_ONESHOT;
      EXPECT_EQ(COLL_GPU_ALGO_ONESHOT, coll_gpu_tune_choose(&f, coll, n, 1ul << 30).algo);
      f.oneshot_max_bytes = 0;  // no LL slot: the ring, whatever is forced
      EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&f, coll, n, 8).algo);
    }
  }
  EXPECT_STREQ("reduce_scatter", coll_gpu_coll_name(COLL_GPU_COLL_REDUCE_SCATTER));
  EXPECT_STREQ("MPI_Reduce", coll_gpu_coll_mpi_name(COLL_GPU_COLL_REDUCE));
}

// The ring's bytes per step: short steps for the chains of bcast and reduce, 128 KiB for a 2-rank alltoall
// while a channel's part is below 2 MiB, whole slots (0) otherwise; coll_gpu_ring_chunk_bytes overrides
// every ring's, allreduce's too.
TEST(Tune, RingChunk) {
  coll_gpu_tune_config_t c = defaults();
  c.max_channels = 64;
  const size_t big = 1ul << 30;
  for (int n : {2, 4, 8}) {
    EXPECT_EQ(64u << 10, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, n, big).chunk) << n;
    EXPECT_EQ(64u << 10, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE, n, big).chunk) << n;
    EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, n, big).chunk) << n;
    EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, n, big).chunk) << n;
    EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, big).chunk) << n;
  }
  // 2 ranks, 64 channels: 64 MiB per block is 1 MiB per channel, 128 MiB is 2 MiB
  EXPECT_EQ(128u << 10, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, 64ul << 20).chunk);
  EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, 128ul << 20).chunk);
  EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 4, 64ul << 20).chunk);  // pairwise
  c.ring_chunk_bytes = 4096;
  for (int k = COLL_GPU_COLL_BCAST; k < COLL_GPU_NCOLLS; ++k)
    EXPECT_EQ(4096u, coll_gpu_tune_choose(&c, (coll_gpu_coll_t)k, 2, big).chunk) << k;
  EXPECT_EQ(4096u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, big).chunk);
  EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 2, 8).chunk);  // one-shot: no ring step
}

// Across nodes an allreduce up to 256 KiB runs as the chain of a reduce and a bcast (CHAIN), the ring above, but
// where every rank's input together takes at most COLL_GPU_TUNE_GATHER_BYTES as the allgather, and up to 128 KiB of
// 3 to 8 ranks as the tree; a forced ring or chain holds there, and no direct algorithm fits; inside a node CHAIN
// never fits.
TEST(Tune, NetAllreduceChain) {
  coll_gpu_tune_config_t c = defaults();
  const size_t kib = 1024, mib = kib * kib;
  for (int algorithm : {-1, (int)COLL_GPU_ALGO_ONESHOT, (int)COLL_GPU_ALGO_TWOSHOT, (int)COLL_GPU_ALGO_CHAIN}) {
    c.algorithm[COLL_GPU_COLL_ALLREDUCE] = algorithm;
    c.net = 0;
    for (size_t bytes = 8; bytes <= 256 * mib; bytes *= 4)
      EXPECT_NE(COLL_GPU_ALGO_CHAIN, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, bytes).algo)
          << algorithm << " " << bytes;
    c.net = 1;
    for (int n : {2, 4, 16, 1024}) {
      for (size_t bytes = 8; bytes <= 256 * mib; bytes *= 2) {
        const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, bytes);
        const bool chain = algorithm == COLL_GPU_ALGO_CHAIN || bytes <= 256 * kib;
        const bool gathers = algorithm != COLL_GPU_ALGO_CHAIN && (size_t)n * bytes <= COLL_GPU_TUNE_GATHER_BYTES;
        const bool tree = algorithm != COLL_GPU_ALGO_CHAIN && n >= 3 && n <= 8 && bytes <= 128 * kib;
        EXPECT_EQ(gathers ? COLL_GPU_ALGO_ALLGATHER
                  : tree  ? COLL_GPU_ALGO_TREE
                  : chain ? COLL_GPU_ALGO_CHAIN
                          : COLL_GPU_ALGO_RING,
                  ch.algo)
            << algorithm << " " << n << " " << bytes;
        EXPECT_EQ(COLL_GPU_PROTO_SIMPLE, ch.proto);
      }
    }
  }
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_RING;
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 8).algo);
  EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_ONESHOT, 4, 8));
  EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TWOSHOT, 4, 8));
  EXPECT_STREQ("chain", coll_gpu_algo_name(COLL_GPU_ALGO_CHAIN));
}

// Across nodes an allreduce may run as an allgather of every rank's input, then a reduction on each rank
// (ALLGATHER): forced or ruled, as built in, it takes the calls whose inputs together fit
// COLL_GPU_TUNE_GATHER_BYTES, the others take the rest of what auto takes; inside a node it never fits. It gathers
// n - 1 blocks in n - 1 steps, where the chain takes 2 (n - 1).
TEST(Tune, NetAllreduceAllgather) {
  const size_t kib = 1024;
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int nrules = 0;
  char why[256];
  ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules("allreduce:0-:allgather", r, &nrules, why, sizeof(why)));
  EXPECT_STREQ("allgather", coll_gpu_algo_name(COLL_GPU_ALGO_ALLGATHER));
  for (int ruled : {0, 1}) {
    coll_gpu_tune_config_t c = defaults();
    if (ruled) {
      c.rules = r;
      c.nrules = nrules;
    } else {
      c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_ALLGATHER;
    }
    for (size_t bytes = 8; bytes <= 1024 * kib; bytes *= 2) {
      c.net = 0;
      EXPECT_NE(COLL_GPU_ALGO_ALLGATHER, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, bytes).algo) << bytes;
      EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_ALLGATHER, 2, bytes));
      c.net = 1;
      for (int n : {2, 3, 4, 16, 1024}) {
        const bool fits = (size_t)n * bytes <= COLL_GPU_TUNE_GATHER_BYTES;
        EXPECT_EQ(fits, !!coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_ALLGATHER, n, bytes));
        const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, bytes);
        const coll_gpu_algo_t otherwise = bytes <= 128 * kib && n >= 3 && n <= 8 ? COLL_GPU_ALGO_TREE
                                          : bytes <= 256 * kib                   ? COLL_GPU_ALGO_CHAIN
                                                                                 : COLL_GPU_ALGO_RING;
        EXPECT_EQ(fits ? COLL_GPU_ALGO_ALLGATHER : otherwise, ch.algo) << ruled << " " << n << " " << bytes;
        EXPECT_EQ(COLL_GPU_PROTO_SIMPLE, ch.proto);
        if (fits) {
          EXPECT_EQ(0, ch.nchannels);  // its allgather chooses its own
        }
      }
    }
    // no other collective takes it (reduce-scatter's: Tune.NetReduceScatterAllgather)
    for (int k = COLL_GPU_COLL_BCAST; k < COLL_GPU_NCOLLS; ++k) {
      if (k == COLL_GPU_COLL_REDUCE_SCATTER) continue;
      EXPECT_NE(COLL_GPU_ALGO_ALLGATHER, coll_gpu_tune_choose(&c, (coll_gpu_coll_t)k, 4, 8).algo) << k;
    }
  }
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  EXPECT_LT(coll_gpu_tune_time_us(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_ALLGATHER, COLL_GPU_PROTO_SIMPLE, 4, 8),
            coll_gpu_tune_time_us(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_CHAIN, COLL_GPU_PROTO_SIMPLE, 4, 8));
  EXPECT_EQ(1e30, coll_gpu_tune_time_us(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_ALLGATHER, COLL_GPU_PROTO_LL, 4, 8));
}

// A reduce-scatter across nodes as an allgather of the whole inputs and each rank's reduction of its block of them
// (ALLGATHER): it fits where n x n blocks fit COLL_GPU_TUNE_GATHER_BYTES; forced or ruled it takes every call that
// fits, the rule built in only inputs of at most 1 KiB, where that allgather runs pairwise where it pays
// (Tune.NetAllgatherBruckAndPairwise); the model alone keeps the ring, whose steps move a block where these move n.
TEST(Tune, NetReduceScatterAllgather) {
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int nrules = 0;
  char why[256];
  ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules("reduce_scatter:0-:allgather", r, &nrules, why, sizeof(why)));
  for (int given : {0, 1, 2}) {  // the rule built in, a rule of the user's, the parameter
    coll_gpu_tune_config_t c = given_config(given, r, nrules, COLL_GPU_COLL_REDUCE_SCATTER, COLL_GPU_ALGO_ALLGATHER);
    for (size_t bytes = 8; bytes <= COLL_GPU_TUNE_GATHER_BYTES; bytes *= 2) {
      c.net = 0;
      EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_REDUCE_SCATTER, COLL_GPU_ALGO_ALLGATHER, 4, bytes));
      EXPECT_NE(COLL_GPU_ALGO_ALLGATHER, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, bytes).algo);
      c.net = 1;
      for (int n : {2, 3, 4, 5, 8, 9, 16})
        for (int per_node : {1, 2, 4}) {
          c.nodes = (n + per_node - 1) / per_node;
          if (c.nodes < 2) continue;
          const bool fits = (size_t)n * (size_t)n * bytes <= COLL_GPU_TUNE_GATHER_BYTES;
          EXPECT_EQ(fits, !!coll_gpu_tune_fits(&c, COLL_GPU_COLL_REDUCE_SCATTER, COLL_GPU_ALGO_ALLGATHER, n, bytes));
          const bool pays = ((per_node == 1 && n >= 4 && n <= 8) || (per_node == 2 && n >= 7 && n <= 8)) &&
                            (size_t)n * bytes <= 1024;  // inputs of at most 1 KiB
          const bool taken = fits && (given > 0 || pays);
          const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, n, bytes);
          EXPECT_EQ(taken ? COLL_GPU_ALGO_ALLGATHER : COLL_GPU_ALGO_RING, ch.algo)
              << given << " " << n << " ranks, " << c.nodes << " nodes, " << bytes;
          EXPECT_EQ(COLL_GPU_PROTO_SIMPLE, ch.proto);
          if (taken) {
            EXPECT_EQ(0, ch.nchannels);  // its allgather chooses its own
          }
        }
    }
  }
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  c.nodes = 4;
  EXPECT_GT(
      coll_gpu_tune_time_us(&c, COLL_GPU_COLL_REDUCE_SCATTER, COLL_GPU_ALGO_ALLGATHER, COLL_GPU_PROTO_SIMPLE, 4, 4096),
      coll_gpu_tune_time_us(&c, COLL_GPU_COLL_REDUCE_SCATTER, COLL_GPU_ALGO_RING, COLL_GPU_PROTO_SIMPLE, 4, 4096));
  c.algorithm[COLL_GPU_COLL_REDUCE_SCATTER] = COLL_GPU_ALGO_RING;
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, 8).algo);
  c.algorithm[COLL_GPU_COLL_REDUCE_SCATTER] = -1;
  EXPECT_EQ(COLL_GPU_ALGO_ALLGATHER, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, 256).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, 256 + 1).algo);
  c.algorithm[COLL_GPU_COLL_REDUCE_SCATTER] = COLL_GPU_ALGO_ALLGATHER;  // forced: wherever it fits
  EXPECT_EQ(COLL_GPU_ALGO_ALLGATHER, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, 4096).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, 4096 + 1).algo);
}

// The tree allreduce: across nodes of 3 to 8 ranks only (the point-to-point connections), its four blocks on one GPU
// at once where ranks share it; taken where forced or ruled, and by the rule built in up to 128 KiB where the
// allgather of the inputs does not fit (the model alone keeps the ring), with an up and a down block a tree and the
// chains' steps.
TEST(Tune, NetAllreduceTree) {
  const size_t kib = 1024;
  EXPECT_STREQ("tree", coll_gpu_algo_name(COLL_GPU_ALGO_TREE));
  EXPECT_TRUE(coll_gpu_coll_has(COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TREE));
  for (int k = 1; k < COLL_GPU_NCOLLS; ++k) EXPECT_FALSE(coll_gpu_coll_has((coll_gpu_coll_t)k, COLL_GPU_ALGO_TREE));
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int nrules = 0;
  char why[256];
  ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules("allreduce:0-:tree", r, &nrules, why, sizeof(why)));
  for (int given : {0, 1, 2}) {  // none, a rule of the user's, the parameter
    coll_gpu_tune_config_t c = given_config(given, r, nrules, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TREE);
    for (size_t bytes = 8; bytes <= 16384 * kib; bytes *= 8) {
      c.net = 0;
      EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TREE, 4, bytes));
      EXPECT_NE(COLL_GPU_ALGO_TREE, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, bytes).algo);
      c.net = 1;
      for (int n : {2, 3, 4, 5, 8, 9, 16}) {
        c.nodes = n;
        const bool fits = n >= 3 && n <= 8;
        EXPECT_EQ(fits, !!coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TREE, n, bytes)) << n;
        const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, bytes);
        // the rule built in: up to 128 KiB, where the allgather of the inputs does not fit
        const bool ruled = bytes <= 128 * kib && (size_t)n * bytes > COLL_GPU_TUNE_GATHER_BYTES;
        EXPECT_EQ(fits && (given > 0 || ruled), ch.algo == COLL_GPU_ALGO_TREE) << given << " " << n << " " << bytes;
        if (ch.algo != COLL_GPU_ALGO_TREE) continue;
        EXPECT_EQ(COLL_GPU_PROTO_SIMPLE, ch.proto);
        EXPECT_EQ(2 * COLL_GPU_TREES, ch.nchannels);
        EXPECT_EQ(bytes / 2 <= 128 * kib ? 32 * kib : bytes / 2 <= 1024 * kib ? 128 * kib : 256 * kib, ch.chunk);
      }
    }
  }
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  c.max_blocks = 3;
  EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TREE, 4, 8));
  c.max_blocks = 4;
  EXPECT_TRUE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLREDUCE, COLL_GPU_ALGO_TREE, 4, 8));
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_TREE;
  c.ring_chunk_bytes = 16 * kib;  // the user's step
  EXPECT_EQ(16 * kib, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 1024 * kib).chunk);
}

// Bruck's and the pairwise allgather run across nodes of 3 to 8 ranks (the point-to-point connections), Bruck's in
// one block, the pairwise in a sending and a receiving block per peer, where they are forced or ruled; the rule built
// in takes the pairwise up to 4 KiB a block wherever it fits and up to 32 KiB (docs/parameters.md) where the ring's
// furthest block crosses the network more than ceil(log2 n) times in a row (min(nodes, n - 1)); the model alone keeps
// the ring. No other collective has them.
TEST(Tune, NetAllgatherBruckAndPairwise) {
  const size_t kib = 1024;
  EXPECT_STREQ("bruck", coll_gpu_algo_name(COLL_GPU_ALGO_BRUCK));
  EXPECT_STREQ("pairwise", coll_gpu_algo_name(COLL_GPU_ALGO_PAIRWISE));
  for (coll_gpu_algo_t algo : {COLL_GPU_ALGO_BRUCK, COLL_GPU_ALGO_PAIRWISE}) {
    coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
    int nrules = 0;
    char text[64], why[256];
    snprintf(text, sizeof(text), "allgather:0-:%s", coll_gpu_algo_name(algo));
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules(text, r, &nrules, why, sizeof(why)));
    for (int given : {0, 1, 2}) {  // the rule built in, a rule of the user's, the parameter
      coll_gpu_tune_config_t c = given_config(given, r, nrules, COLL_GPU_COLL_ALLGATHER, algo);
      for (size_t bytes = 8; bytes <= 4096 * kib; bytes *= 4) {
        c.net = 0;
        EXPECT_FALSE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLGATHER, algo, 4, bytes));
        EXPECT_NE(algo, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, bytes).algo) << bytes;
        c.net = 1;
        for (int n : {2, 3, 4, 5, 6, 8, 9, 16})
          for (int per_node : {1, 2, 4}) {
            c.nodes = (n + per_node - 1) / per_node;
            if (c.nodes < 2) continue;
            const bool fits = n >= 3 && n <= 8;
            EXPECT_EQ(fits, !!coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLGATHER, algo, n, bytes)) << n;
            // up to 4 KiB wherever it fits, to 32 KiB where the ring's furthest block crosses the network more than
            // log2 n times: 4-8 nodes of 1, 4 of 2
            const bool pays = (per_node == 1 && n >= 4) || (per_node == 2 && n >= 7);
            const bool taken = fits && (given > 0 || bytes <= 4 * kib || (bytes <= 32 * kib && pays));
            const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, n, bytes);
            const coll_gpu_algo_t want = !taken ? COLL_GPU_ALGO_RING : given > 0 ? algo : COLL_GPU_ALGO_PAIRWISE;
            EXPECT_EQ(want, ch.algo) << given << " " << coll_gpu_algo_name(algo) << " " << n << " ranks, " << c.nodes
                                     << " nodes, " << bytes;
            EXPECT_EQ(COLL_GPU_PROTO_SIMPLE, ch.proto);
            if (taken) {
              EXPECT_EQ(want == COLL_GPU_ALGO_BRUCK ? 1 : n - 1, ch.nchannels);  // one block; a connection a peer
            }
          }
      }
    }
    // its blocks on one GPU at once: 2 (n - 1) where ranks share it
    coll_gpu_tune_config_t c = defaults();
    c.net = 1;
    c.max_blocks = 13;
    EXPECT_EQ(algo == COLL_GPU_ALGO_BRUCK, !!coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLGATHER, algo, 8, 8));
    c.max_blocks = 14;
    EXPECT_TRUE(coll_gpu_tune_fits(&c, COLL_GPU_COLL_ALLGATHER, algo, 8, 8));
  }
  // the edge of the rule built in, and the model alone
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  c.nodes = 4;
  EXPECT_EQ(COLL_GPU_ALGO_PAIRWISE, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, 32 * kib).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, 32 * kib + 1).algo);
  c.nodes = 3;  // 3 nodes of 1: up to 4 KiB only
  EXPECT_EQ(COLL_GPU_ALGO_PAIRWISE, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 3, 4 * kib).algo);
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 3, 4 * kib + 1).algo);
  c.algorithm[COLL_GPU_COLL_ALLGATHER] = COLL_GPU_ALGO_RING;
  EXPECT_EQ(COLL_GPU_ALGO_RING, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, 8).algo);
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  int nrules = 0;
  char why[256];
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    EXPECT_EQ(k == COLL_GPU_COLL_ALLGATHER, !!coll_gpu_coll_has((coll_gpu_coll_t)k, COLL_GPU_ALGO_BRUCK)) << k;
    EXPECT_EQ(k == COLL_GPU_COLL_ALLGATHER, !!coll_gpu_coll_has((coll_gpu_coll_t)k, COLL_GPU_ALGO_PAIRWISE)) << k;
  }
  EXPECT_NE(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules("reduce_scatter:0-:bruck", r, &nrules, why, sizeof(why)));
  EXPECT_NE(COLL_GPU_SUCCESS, coll_gpu_tune_parse_rules("alltoall:0-:pairwise", r, &nrules, why, sizeof(why)));
}

// Over the network the chains' steps grow with each channel's part: 32 KiB up to 128 KiB a channel, 128
// KiB up to 1 MiB, 256 KiB beyond; the other collectives keep whole slots, the parameter overrides.
TEST(Tune, NetChainChunk) {
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  for (int &a : c.algorithm) a = COLL_GPU_ALGO_RING;  // a communicator across nodes runs rings only
  const size_t kib = 1024, mib = kib * kib;
  for (int coll : {COLL_GPU_COLL_BCAST, COLL_GPU_COLL_REDUCE}) {
    for (int n : {2, 4, 16}) {
      for (size_t bytes = 256 * kib; bytes <= 256 * mib; bytes *= 2) {
        const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, (coll_gpu_coll_t)coll, n, bytes);
        ASSERT_EQ(COLL_GPU_ALGO_RING, ch.algo) << bytes;
        const size_t part = bytes / (size_t)ch.nchannels;
        const size_t want = part <= 128 * kib ? 32 * kib : part <= mib ? 128 * kib : 256 * kib;
        EXPECT_EQ(want, ch.chunk) << coll << " " << n << " ranks, " << bytes << " bytes on " << ch.nchannels;
      }
    }
  }
  // 16 channels from 64 KiB a ring step: 1 MiB is 64 KiB a channel, 8 MiB 512 KiB, 64 MiB 4 MiB
  EXPECT_EQ(32 * kib, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, mib).chunk);
  EXPECT_EQ(128 * kib, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE, 4, 8 * mib).chunk);
  EXPECT_EQ(256 * kib, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, 64 * mib).chunk);
  EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, 64 * mib).chunk);
  EXPECT_EQ(0u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 64 * mib).chunk);
  c.ring_chunk_bytes = 4096;
  EXPECT_EQ(4096u, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, 64 * mib).chunk);
}

// Over the network allreduce, allgather and reduce-scatter take a channel per proxy thread at most while a
// ring step is below 16 MiB, the chains of bcast and reduce up to 256 KiB; coll_gpu_nchannels, or no bound
// given, leave them alone.
TEST(Tune, NetRingChannels) {
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  for (int &a : c.algorithm) a = COLL_GPU_ALGO_RING;
  const size_t kib = 1024, mib = kib * kib;
  for (int bound : {0, 1, 5, 8, 16}) {
    c.net_ring_channels = bound;
    for (size_t bytes = 8; bytes <= 256 * mib; bytes *= 4) {
      // a channel per 4 KiB of a ring step, up to all 16
      const int allreduce = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, bytes).nchannels;
      const int want = (int)std::min<size_t>(16, std::max<size_t>(1, (bytes / 4 + 4 * kib - 1) / (4 * kib)));
      const bool bounded = bound > 0 && bytes / 4 < 16 * mib;  // the step: a quarter of the buffer
      EXPECT_EQ(bounded ? std::min(want, bound) : want, allreduce) << bound << " " << bytes;
      for (int coll : {COLL_GPU_COLL_ALLGATHER, COLL_GPU_COLL_REDUCE_SCATTER}) {
        const int n = coll_gpu_tune_choose(&c, (coll_gpu_coll_t)coll, 4, bytes).nchannels;
        const int all = (int)std::min<size_t>(16, std::max<size_t>(1, (bytes + 4 * kib - 1) / (4 * kib)));
        EXPECT_EQ(bound > 0 && bytes < 16 * mib ? std::min(all, bound) : all, n) << coll << " " << bytes;
      }
    }
    for (int coll : {COLL_GPU_COLL_BCAST, COLL_GPU_COLL_REDUCE}) {
      EXPECT_EQ(16, coll_gpu_tune_choose(&c, (coll_gpu_coll_t)coll, 4, mib).nchannels) << bound;
      // the chains: a channel per 4 KiB of the buffer, bounded up to 256 KiB
      for (size_t bytes = 8; bytes <= 4 * mib; bytes *= 2) {
        const int all = (int)std::min<size_t>(16, std::max<size_t>(1, (bytes + 4 * kib - 1) / (4 * kib)));
        EXPECT_EQ(bound > 0 && bytes <= 256 * kib ? std::min(all, bound) : all,
                  coll_gpu_tune_choose(&c, (coll_gpu_coll_t)coll, 4, bytes).nchannels)
            << coll << " " << bytes << " bound " << bound;
      }
    }
    EXPECT_EQ(bound > 0 ? bound : 16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, mib).nchannels);
    EXPECT_EQ(bound > 0 ? bound : 16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 64 * mib - 4).nchannels);
    EXPECT_EQ(bound > 0 ? bound : 16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 4, 8 * mib).nchannels);
    EXPECT_EQ(16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, 16 * mib).nchannels);
    EXPECT_EQ(16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, 64 * mib).nchannels);
  }
  c.net_ring_channels = 8;
  c.nchannels = 12;  // the parameter: every ring collective takes it
  EXPECT_EQ(12, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, mib).nchannels);
  EXPECT_EQ(12, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE_SCATTER, 4, mib).nchannels);
  EXPECT_EQ(12, coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 4, 128 * kib).nchannels);
  c.nchannels = 0;
  c.net = 0;  // inside a node: no bound
  EXPECT_EQ(16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 4, mib).nchannels);
  EXPECT_EQ(16, coll_gpu_tune_choose(&c, COLL_GPU_COLL_REDUCE, 4, 128 * kib).nchannels);
}

// Alltoall's two blocks per channel (2 ranks) or per connection (pairwise, at most a connection per
// channel): fewer channels than the smallest GPU has multiprocessors, so that every sender's receiver on
// the peer gets a multiprocessor; other collectives keep theirs.
TEST(Tune, AlltoallFitsTheGpu) {
  coll_gpu_tune_config_t c = defaults();
  c.max_channels = 64;
  const size_t big = 1ul << 30;
  // not known, then an H100's or H200's 132
  EXPECT_EQ(64, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, big).nchannels);
  c.min_sms = 132;
  EXPECT_EQ(64, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, big).nchannels);
  c.min_sms = 40;
  EXPECT_EQ(39, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, big).nchannels);
  EXPECT_EQ(64, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 2, big).nchannels);
  EXPECT_EQ(39, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 3, big).nchannels);
  EXPECT_EQ(39, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 8, big).nchannels);
  c.nchannels = 48;  // forced: still capped
  EXPECT_EQ(39, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, big).nchannels);
  c.min_sms = 1;  // no channel count fits one multiprocessor: left as it is
  EXPECT_EQ(48, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, big).nchannels);
  // 128 channels: the 2-rank alltoall takes 64 (256 blocks would not fit an H200), the others all
  c.nchannels = 0;
  c.max_channels = 128;
  c.min_sms = 132;
  EXPECT_EQ(64, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, big).nchannels);
  EXPECT_EQ(128, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLGATHER, 2, big / 2).nchannels);  // not wide
  EXPECT_EQ(128, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 3, big).nchannels);
}

// Ranks sharing a GPU (max_blocks): no ring or two-shot kernel takes more blocks, forced or not; alltoall's
// two blocks per channel (2 ranks) or per connection (pairwise: at most as many as channels) count twice.
TEST(Tune, SharedGpuBoundsTheBlocks) {
  coll_gpu_tune_config_t c = defaults();
  c.max_channels = 128;
  c.min_sms = 132;
  c.max_blocks = 32;  // 4 ranks on a 132-multiprocessor GPU
  for (int n : {2, 3, 4, 8, 16}) {
    for (size_t bytes = 8; bytes <= (1ul << 30); bytes *= 4) {
      const coll_gpu_choice_t ch = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, n, bytes);
      EXPECT_LE(ch.nchannels, 32) << n << " ranks, " << bytes << " bytes, " << coll_gpu_algo_name(ch.algo);
      for (int coll = 0; coll < COLL_GPU_NCOLLS; ++coll) {
        const coll_gpu_choice_t mv = coll_gpu_tune_choose(&c, (coll_gpu_coll_t)coll, n, bytes);
        if (mv.algo != COLL_GPU_ALGO_RING) continue;
        EXPECT_LE(mv.nchannels * (coll == COLL_GPU_COLL_ALLTOALL ? 2 : 1), 32)
            << coll_gpu_coll_name((coll_gpu_coll_t)coll) << ", " << n << " ranks, " << bytes << " bytes";
      }
    }
  }
  EXPECT_EQ(32, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 1ul << 30).nchannels);
  c.algorithm[COLL_GPU_COLL_ALLREDUCE] = COLL_GPU_ALGO_TWOSHOT;
  EXPECT_EQ(32, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 16ul << 20).nchannels);
  c.nchannels = 100;  // forced
  EXPECT_EQ(32, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 16ul << 20).nchannels);
  c.max_blocks = 1;  // one block: the 2-rank alltoall still gets a channel
  EXPECT_EQ(1, coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLTOALL, 2, 1ul << 30).nchannels);
}

// Over the network proxy a ring call takes a channel per 4 KiB of its ring step, from one up to the
// channels there are; the moves count a block (or the chain's buffer) as the step, allreduce a rank's
// share; a channel count the user set stays as it was.
TEST(Tune, NetChannelsGrowWithTheStep) {
  coll_gpu_tune_config_t c = defaults();
  c.net = 1;
  c.max_channels = 8;
  for (int &a : c.algorithm) a = COLL_GPU_ALGO_RING;
  struct Case {
    int nranks;
    size_t bytes;
    int allreduce, allgather;
  } cases[] = {
      {2, 8, 1, 1},       {2, 8 << 10, 1, 2},  {2, 8 << 10 | 4, 2, 3}, {2, 16 << 10, 2, 4},       {2, 64 << 10, 8, 8},
      {2, 1 << 30, 8, 8}, {4, 16 << 10, 1, 4}, {8, 128 << 10, 4, 8},   {8, (32 << 10) + 8, 2, 8}, {3, 12 << 10, 1, 3}};
  for (const Case &k : cases) {
    const coll_gpu_choice_t ar = coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, k.nranks, k.bytes);
    EXPECT_EQ(ar.algo, COLL_GPU_ALGO_RING);
    EXPECT_EQ(ar.nchannels, k.allreduce) << k.nranks << " ranks, " << k.bytes << " bytes";
    for (coll_gpu_coll_t m : {COLL_GPU_COLL_ALLGATHER, COLL_GPU_COLL_BCAST, COLL_GPU_COLL_REDUCE_SCATTER})
      EXPECT_EQ(coll_gpu_tune_choose(&c, m, k.nranks, k.bytes).nchannels, k.allgather)
          << coll_gpu_coll_name(m) << ", " << k.nranks << " ranks, " << k.bytes << " bytes";
  }
  c.nchannels = 3;
  EXPECT_EQ(coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 8).nchannels, 3);
  EXPECT_EQ(coll_gpu_tune_choose(&c, COLL_GPU_COLL_BCAST, 2, 1 << 30).nchannels, 3);
  c.nchannels = 0;
  c.net = 0;  // within a node the ring runs every channel at every size
  EXPECT_EQ(coll_gpu_tune_choose(&c, COLL_GPU_COLL_ALLREDUCE, 2, 8).nchannels, 8);
}

}  // namespace
