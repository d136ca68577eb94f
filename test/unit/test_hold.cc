/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// A communicator's hold on the GPU path (engine/hold.h) before its engine exists: the states, the claims counted for
// the engine to come and handed to its creation, from several threads at once, and the states a failure leaves.
// (Once an engine is made its claims are the engine's, coll_gpu_engine_claim, which needs a GPU.)
#include <gtest/gtest.h>

#include <string.h>

#include <set>
#include <thread>
#include <vector>

#include "engine/calls.h"
#include "engine/hold.h"

// A new hold has nothing made and a tag of its own, never 0.
TEST(Hold, InitGivesEachCommunicatorItsTag) {
  std::set<uint32_t> tags;
  for (int i = 0; i < 1000; ++i) {
    coll_gpu_hold_t h;
    memset(&h, 0xa5, sizeof(h));  // poisoned: init must set every field
    coll_gpu_hold_init(&h);
    EXPECT_EQ(nullptr, h.engine);
    EXPECT_EQ(COLL_GPU_STATE_NONE, h.engine_state);
    EXPECT_EQ(COLL_GPU_STATE_NONE, h.agree_state);
    EXPECT_EQ(0u, h.claims);
    EXPECT_NE(0u, h.tag);
    tags.insert(h.tag);
  }
  EXPECT_EQ(1000u, tags.size());
}

// Only a post of the GPU path claims; before the engine each claim is counted, and the creation is told the count
// with the members and the tag.
TEST(Hold, ClaimsBeforeTheEngineAreCounted) {
  coll_gpu_hold_t h;
  coll_gpu_hold_init(&h);
  for (uint32_t bits : {0u, (uint32_t)COLL_GPU_PATH_HOST, (uint32_t)COLL_GPU_PATH_STAGE,
                        (uint32_t)(COLL_GPU_PATH_GPU | COLL_GPU_PATH_HOST), (uint32_t)COLL_GPU_PATH_VLAYOUT}) {
    uint32_t mine = bits;
    EXPECT_EQ(0, coll_gpu_hold_claim(&h, &mine)) << bits;
    EXPECT_EQ(bits, mine);
  }
  EXPECT_EQ(0u, h.claims);
  uint32_t gpu = COLL_GPU_PATH_GPU, counted = COLL_GPU_PATH_GPU | COLL_GPU_PATH_VLAYOUT;
  EXPECT_EQ(1, coll_gpu_hold_claim(&h, &gpu));
  EXPECT_EQ(1, coll_gpu_hold_claim(&h, &counted));
  EXPECT_EQ((uint32_t)COLL_GPU_PATH_GPU, gpu);
  EXPECT_EQ((uint32_t)(COLL_GPU_PATH_GPU | COLL_GPU_PATH_VLAYOUT), counted);
  const coll_gpu_engine_share_t s = coll_gpu_hold_share(&h, 0x1234, 1);
  EXPECT_EQ(0x1234u, s.members);
  EXPECT_EQ(h.tag, s.owner);
  EXPECT_EQ(2u, s.claims);
  EXPECT_EQ(1, s.own_ok);
  coll_gpu_hold_unclaim(&h);
  EXPECT_EQ(1u, coll_gpu_hold_share(&h, 0, 0).claims);
  coll_gpu_hold_unclaim(&h);
  EXPECT_EQ(0u, h.claims);
}

// Threads that claim and end claims at once lose none of them.
TEST(Hold, ClaimsFromThreads) {
  coll_gpu_hold_t h;
  coll_gpu_hold_init(&h);
  constexpr int kThreads = 4, kEach = 20000;
  std::vector<std::thread> t;
  for (int i = 0; i < kThreads; ++i)
    t.emplace_back([&h, i] {
      for (int k = 0; k < kEach; ++k) {
        uint32_t mine = COLL_GPU_PATH_GPU;
        coll_gpu_hold_claim(&h, &mine);
        if (i % 2 == 0) coll_gpu_hold_unclaim(&h);  // half of them end each claim at once, half keep theirs
      }
    });
  for (auto &th : t) th.join();
  EXPECT_EQ((uint64_t)kThreads / 2 * kEach, h.claims);
}

// A creation that made nothing turns the engine off and leaves the claims to end as their calls do; a failure, or a
// communicator without a GPU path, turns both the engine and the agreement off.
TEST(Hold, FailuresTurnItOff) {
  coll_gpu_hold_t h;
  coll_gpu_hold_init(&h);
  h.agree_state = COLL_GPU_STATE_READY;
  uint32_t mine = COLL_GPU_PATH_GPU;
  ASSERT_EQ(1, coll_gpu_hold_claim(&h, &mine));
  coll_gpu_hold_made(&h, nullptr);
  EXPECT_EQ(COLL_GPU_STATE_OFF, h.engine_state);
  EXPECT_EQ(COLL_GPU_STATE_READY, h.agree_state);
  EXPECT_EQ(nullptr, h.engine);
  EXPECT_EQ(1u, h.claims);
  coll_gpu_hold_unclaim(&h);
  EXPECT_EQ(0u, h.claims);
  coll_gpu_hold_off(&h);
  EXPECT_EQ(COLL_GPU_STATE_OFF, h.engine_state);
  EXPECT_EQ(COLL_GPU_STATE_OFF, h.agree_state);
  coll_gpu_hold_t none;
  coll_gpu_hold_init(&none);
  coll_gpu_hold_off(&none);
  EXPECT_EQ(COLL_GPU_STATE_OFF, none.engine_state);
  EXPECT_EQ(COLL_GPU_STATE_OFF, none.agree_state);
}
