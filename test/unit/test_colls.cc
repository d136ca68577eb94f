/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The collectives' rows (common/colls.h): every row complete, and what follows from a row (the rules' names and
 * algorithms, the forced algorithm) holding for every collective.
 */
#include <gtest/gtest.h>
#include <string.h>

#include <string>

#include "common/colls.h"
#include "engine/tune.h"

namespace {

coll_gpu_tune_config_t one_node() {
  coll_gpu_tune_config_t c{};
  for (int &a : c.algorithm) a = -1;
  for (int &p : c.protocol) p = -1;
  c.max_channels = 16;
  c.oneshot_max_bytes = 512 << 10;
  c.twoshot_max_bytes = 16 << 20;
  return c;
}

TEST(Colls, EveryRowIsComplete) {
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
    const coll_gpu_coll_info_t *info = coll_gpu_coll_info(coll);
    ASSERT_NE(nullptr, info) << k;
    ASSERT_NE(nullptr, info->name);
    EXPECT_STREQ(info->name, coll_gpu_coll_name(coll));
    EXPECT_STREQ(info->mpi_name, coll_gpu_coll_mpi_name(coll));
    EXPECT_EQ(0, strncmp(info->mpi_name, "MPI_", 4)) << info->mpi_name;
    // every collective has the ring: it is what runs where only rings do (across nodes, beyond 8 ranks)
    EXPECT_TRUE(coll_gpu_coll_has(coll, COLL_GPU_ALGO_RING)) << info->name;
    EXPECT_EQ(0u, info->algos >> COLL_GPU_NALGOS) << info->name;
    // its parameter's text names the collective it is of
    ASSERT_NE(nullptr, info->algorithm_help);
    EXPECT_NE(nullptr, strstr(info->algorithm_help, info->mpi_name)) << info->name;
    EXPECT_EQ(k == COLL_GPU_COLL_ALLREDUCE, info->shape == COLL_GPU_SHAPE_ALLREDUCE) << info->name;
    for (int j = 0; j < k; ++j) EXPECT_STRNE(info->name, coll_gpu_coll_name((coll_gpu_coll_t)j));
  }
  EXPECT_EQ(nullptr, coll_gpu_coll_info(COLL_GPU_NCOLLS));
  EXPECT_EQ(nullptr, coll_gpu_coll_info((coll_gpu_coll_t)-1));
  EXPECT_STREQ("?", coll_gpu_coll_name(COLL_GPU_NCOLLS));
  EXPECT_STREQ("?", coll_gpu_coll_mpi_name((coll_gpu_coll_t)-1));
  EXPECT_STREQ("?", coll_gpu_algo_name(COLL_GPU_NALGOS));
  EXPECT_STREQ("?", coll_gpu_proto_name(COLL_GPU_NPROTOS));
  EXPECT_FALSE(coll_gpu_coll_has(COLL_GPU_NCOLLS, COLL_GPU_ALGO_RING));
  EXPECT_FALSE(coll_gpu_coll_has(COLL_GPU_COLL_BCAST, COLL_GPU_NALGOS));
  EXPECT_FALSE(coll_gpu_coll_has(COLL_GPU_COLL_BCAST, (coll_gpu_algo_t)-1));
}

// A rule names a collective by its row's name and takes exactly the algorithms the row has.
TEST(Colls, RulesTakeWhatTheRowHas) {
  coll_gpu_tune_rule_t r[COLL_GPU_TUNE_MAX_RULES];
  char why[256];
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k)
    for (int a = 0; a < COLL_GPU_NALGOS; ++a) {
      const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
      const std::string text = std::string(coll_gpu_coll_name(coll)) + ":0-:" + coll_gpu_algo_name((coll_gpu_algo_t)a);
      int n = -1;
      const coll_gpu_status_t st = coll_gpu_tune_parse_rules(text.c_str(), r, &n, why, sizeof(why));
      if (coll_gpu_coll_has(coll, (coll_gpu_algo_t)a)) {
        ASSERT_EQ(COLL_GPU_SUCCESS, st) << text << ": " << why;
        ASSERT_EQ(1, n);
        EXPECT_EQ(k, r[0].coll);
        EXPECT_EQ(a, r[0].algo);
      } else {
        EXPECT_EQ(COLL_GPU_INVALID_INPUT, st) << text;
        EXPECT_NE(nullptr, strstr(why, "has no algorithm")) << text << ": " << why;
      }
    }
}

// What a collective's parameter forces, among the algorithms its row has, its calls take where it fits: on one node
// of 2 ranks every algorithm but those across nodes (the chain, the allgather, Bruck's, the pairwise allgather, the
// tree) fits a call of 8 bytes.
TEST(Colls, ForcedAlgorithmsOfEveryRow) {
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k)
    for (int a = 0; a < COLL_GPU_NALGOS; ++a) {
      const coll_gpu_coll_t coll = (coll_gpu_coll_t)k;
      if (!coll_gpu_coll_has(coll, (coll_gpu_algo_t)a) || a == COLL_GPU_ALGO_CHAIN || a == COLL_GPU_ALGO_ALLGATHER ||
          a == COLL_GPU_ALGO_BRUCK || a == COLL_GPU_ALGO_PAIRWISE || a == COLL_GPU_ALGO_TREE)
        continue;
      coll_gpu_tune_config_t c = one_node();
      c.algorithm[k] = a;
      EXPECT_EQ(a, (int)coll_gpu_tune_choose(&c, coll, 2, 8).algo)
          << coll_gpu_coll_name(coll) << " " << coll_gpu_algo_name((coll_gpu_algo_t)a);
      for (int j = 0; j < COLL_GPU_NCOLLS; ++j) {  // and no other collective's calls
        if (j == k) continue;
        coll_gpu_tune_config_t d = one_node();
        d.algorithm[j] = a == COLL_GPU_ALGO_RING ? COLL_GPU_ALGO_ONESHOT : COLL_GPU_ALGO_RING;
        d.algorithm[k] = a;
        EXPECT_EQ(a, (int)coll_gpu_tune_choose(&d, coll, 2, 8).algo) << coll_gpu_coll_name(coll);
      }
    }
}

}  // namespace
