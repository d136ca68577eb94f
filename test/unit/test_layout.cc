/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The scratch layout the tuning model implies (engine/tune.h, kernels/kernels.h): its parts inside the scratch
// without overlap, and coll_gpu_tune_fit_layout's fit into a bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "engine/tune.h"

namespace {

// Every part of the scratch lies inside it, the parts do not overlap, and they grow with the sizes.
TEST(Layout, PartsInsideTheScratch) {
  coll_gpu_scratch_layout_t l = {8, 256 << 10, 16 << 20, 128 << 10, 16};
  size_t total = coll_gpu_scratch_bytes(&l);
  // one-shot: 2 parities x 8 senders x 2 x bytes; two-shot: 2 x 2 x 8 slots of bytes / 8; ring FIFOs;
  // point-to-point FIFOs (more than 2 ranks): 8 senders x connections x slots
  const size_t p2p = (size_t)8 * COLL_GPU_P2P_CONNS * COLL_GPU_RING_SLOTS * COLL_GPU_P2P_SLOT_BYTES;
  size_t least = 2 * 8 * 2 * l.ll_bytes + 4 * l.twoshot_bytes + (size_t)16 * COLL_GPU_RING_SLOTS * l.slot_bytes + p2p;
  EXPECT_GE(total, least);
  EXPECT_LT(total, least + (2 << 20));
  coll_gpu_scratch_layout_t small = l;
  small.nchannels = 1;
  EXPECT_LT(coll_gpu_scratch_bytes(&small), total);
  // the point-to-point part comes with the third rank: 3 senders' FIFOs at once
  coll_gpu_scratch_layout_t two = l, three = l;
  two.nranks = 2;
  three.nranks = 3;
  EXPECT_GE(coll_gpu_scratch_bytes(&three) - coll_gpu_scratch_bytes(&two), 3 * p2p / 8);
}

// The scratch bound: whatever the sizes, a layout that fits stays as it was; one that does not gives up
// ring slot bytes (multiples of 4 KiB, down to 64 KiB), then channels, as few as it must and no more,
// and fits; one whose other parts alone do not fit is refused and left as it was. Fresh random layouts
// each run (the seed is printed).
TEST(Layout, FitsTheScratchBound) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto below = [&](size_t n) { return (size_t)(rng() % n); };
  auto total = [](coll_gpu_scratch_layout_t l) { return coll_gpu_scratch_bytes(&l); };
  int fitted = 0, shrunk = 0, fewer = 0, smaller = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    coll_gpu_scratch_layout_t l = {};
    l.nranks = 1 + (int)below(i % 2 ? 16 : 1024);
    l.ll_bytes = below(3) == 0 ? 0 : 16 * (1 + below(64 << 10));
    l.twoshot_bytes = below(3) == 0 ? 0 : 16 * (1 + below(2 << 20));
    l.slot_bytes = 4096 * (1 + below(1024));
    l.nchannels = 1 + (int)below(COLL_GPU_MAX_CHANNELS);
    coll_gpu_scratch_layout_t rest = l;
    rest.nchannels = 0;
    const size_t fixed = total(rest), whole = total(l);
    // bounds around every threshold: none, below the other parts, between, above the whole
    const size_t most = below(8) == 0 ? 0 : fixed / 2 + below(whole + (whole - fixed) / 4 - fixed / 2 + 1);
    coll_gpu_scratch_layout_t got = l;
    const int ok = coll_gpu_tune_fit_layout(&got, most);
    if (most == 0 || whole <= most) {
      ASSERT_EQ(1, ok);
      ASSERT_EQ(0, memcmp(&got, &l, sizeof(l)));
      ++fitted;
      continue;
    }
    if (fixed + (size_t)COLL_GPU_RING_SLOTS * 4096 > most) {
      ASSERT_EQ(0, ok) << most;
      ASSERT_EQ(0, memcmp(&got, &l, sizeof(l)));
      ++refused;
      continue;
    }
    ASSERT_EQ(1, ok);
    ASSERT_LE(total(got), most);
    ASSERT_EQ(got.nranks, l.nranks);
    ASSERT_EQ(got.ll_bytes, l.ll_bytes);
    ASSERT_EQ(got.twoshot_bytes, l.twoshot_bytes);
    ASSERT_EQ(0u, got.slot_bytes % 4096);
    ASSERT_GE(got.nchannels, 1);
    ASSERT_LE(got.nchannels, l.nchannels);
    ASSERT_LE(got.slot_bytes, l.slot_bytes);
    coll_gpu_scratch_layout_t more = got;
    if (got.nchannels == l.nchannels && got.slot_bytes >= (size_t)64 << 10) {
      // only the slots shrank, to no less than 64 KiB: as little as they must
      more.slot_bytes += 4096;
      ASSERT_GT(total(more), most);
      ++shrunk;
    } else if (got.slot_bytes == std::min(l.slot_bytes, (size_t)64 << 10)) {
      // 64 KiB slots (or the smaller ones the user set) on as many channels as fit
      ASSERT_LT(got.nchannels, l.nchannels);
      more.nchannels += 1;
      ASSERT_GT(total(more), most);
      ++fewer;
    } else {  // not even one channel of those: one of the largest slots that fit
      ASSERT_EQ(1, got.nchannels);
      ASSERT_LT(got.slot_bytes, std::min(l.slot_bytes, (size_t)64 << 10));
      more.slot_bytes += 4096;
      ASSERT_GT(total(more), most);
      ++smaller;
    }
  }
  // every branch ran
  EXPECT_GT(fitted, 100);
  EXPECT_GT(shrunk, 100);
  EXPECT_GT(fewer, 100);
  EXPECT_GT(smaller, 10);
  EXPECT_GT(refused, 100);
}

// At the defaults (128 channels of 256 KiB slots, one-shot 512 KiB, two-shot 16 MiB, 256 MiB) every
// communicator size from 2 to 1024 ranks keeps its 128 channels within 256 MiB, on the slots that
// docs/parameters.md names at 2, 4 and 8 ranks.
TEST(Layout, DefaultsFit256MiB) {
  for (int n = 2; n <= 1024; ++n) {
    coll_gpu_scratch_layout_t l = {n, 512 << 10, 16 << 20, 256 << 10, COLL_GPU_MAX_CHANNELS};
    if (n > COLL_GPU_MAX_DIRECT) l.ll_bytes = l.twoshot_bytes = 0;
    ASSERT_EQ(1, coll_gpu_tune_fit_layout(&l, 256 << 20));
    ASSERT_LE(coll_gpu_scratch_bytes(&l), (size_t)256 << 20) << n;
    ASSERT_EQ(COLL_GPU_MAX_CHANNELS, l.nchannels) << n;
    if (n == 2) {
      EXPECT_EQ((size_t)184 << 10, l.slot_bytes);
    }
    if (n == 4) {
      EXPECT_EQ((size_t)172 << 10, l.slot_bytes);
    }
    if (n == 8) {
      EXPECT_EQ((size_t)156 << 10, l.slot_bytes);
    }
  }
}

}  // namespace
