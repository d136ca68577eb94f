/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// Unit tests of the MPI-free staging core: spans of datatype layouts, staging through the host copy
// engine (what runs for device buffers, with memcpy in place of CUDA copies), the bounce buffer cache,
// error paths through a failing engine, and memory classification in a process without CUDA.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "engine/stage.h"

namespace {

std::mt19937_64 &rng() {
  static std::mt19937_64 r{std::random_device{}()};
  return r;
}

std::vector<unsigned char> random_bytes(size_t n) {
  std::vector<unsigned char> v(n);
  for (auto &b : v) b = static_cast<unsigned char>(rng()());
  return v;
}

const coll_gpu_meminfo_t kHost = {COLL_GPU_MEM_HOST, -1, nullptr};

TEST(Span, ContiguousType) {
  coll_gpu_span_t s = coll_gpu_span_of(0, 8, 8, 10);
  EXPECT_EQ(s.lo, 0);
  EXPECT_EQ(s.len, 80u);
}

TEST(Span, ZeroCountAndZeroSizeTouchNothing) {
  EXPECT_EQ(coll_gpu_span_of(0, 8, 8, 0).len, 0u);
  EXPECT_EQ(coll_gpu_span_of(0, 0, 0, 5).len, 0u);
}

TEST(Span, HolesInsideAndAfterEachElement) {
  // two ints at 0 and 8, extent resized to 16: the last element ends at its true extent (12)
  coll_gpu_span_t s = coll_gpu_span_of(0, 12, 16, 3);
  EXPECT_EQ(s.lo, 0);
  EXPECT_EQ(s.len, 2u * 16 + 12);
}

TEST(Span, NegativeLowerBound) {
  // ints at -8 and +4: true lb -8, true extent 16, extent 16
  coll_gpu_span_t s = coll_gpu_span_of(-8, 16, 16, 4);
  EXPECT_EQ(s.lo, -8);
  EXPECT_EQ(s.len, 64u);
}

TEST(Span, NegativeExtentRunsDownwards) {
  coll_gpu_span_t s = coll_gpu_span_of(0, 4, -4, 3);
  EXPECT_EQ(s.lo, -8);
  EXPECT_EQ(s.len, 12u);
}

TEST(Span, AboveTwoGigabytes) {
  size_t count = (size_t{1} << 28) + 3;  // doubles: 2^31 + 24 bytes
  coll_gpu_span_t s = coll_gpu_span_of(0, 8, 8, count);
  EXPECT_EQ(s.len, count * 8);
  EXPECT_GT(s.len, size_t{1} << 31);
}

TEST(Span, ShiftAndUnion) {
  coll_gpu_span_t a = coll_gpu_span_shift(coll_gpu_span_of(0, 4, 4, 2), 100);  // [100, 108)
  coll_gpu_span_t b = coll_gpu_span_of(0, 4, 4, 1);                            // [0, 4)
  coll_gpu_span_t u = coll_gpu_span_union(a, b);
  EXPECT_EQ(u.lo, 0);
  EXPECT_EQ(u.len, 108u);
  coll_gpu_span_t empty = {0, 0, nullptr, 0};
  EXPECT_EQ(coll_gpu_span_union(empty, a).lo, 100);
  EXPECT_EQ(coll_gpu_span_union(a, empty).len, 8u);
  EXPECT_EQ(coll_gpu_span_shift(empty, 50).lo, 0);  // an empty span stays empty at 0
}

// Stages a buffer of `bytes` at offset lo of an allocation, like a datatype with a negative lower bound.
struct Staged {
  std::vector<unsigned char> user;
  coll_gpu_span_t span;
  char *base;
  Staged(ptrdiff_t lo, size_t bytes) : user(random_bytes(bytes + 64)), span{lo, bytes, nullptr, 0} {
    base = reinterpret_cast<char *>(user.data()) + 32 - lo;  // base + lo is 32 bytes into user
  }
};

TEST(Stage, InCopiesTheSpanAndMapsTheBase) {
  Staged b(-8, 100);
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *host = nullptr;
  ASSERT_EQ(coll_gpu_stage_buffer(&st, b.base, b.span, COLL_GPU_IN, &kHost, &coll_gpu_host_engine, &host),
            COLL_GPU_SUCCESS);
  ASSERT_NE(host, b.base);
  // every byte of the span reads the same through the host pointer
  EXPECT_EQ(0, memcmp(static_cast<char *>(host) - 8, b.base - 8, 100));
  std::vector<unsigned char> before = b.user;
  memset(static_cast<char *>(host) - 8, 0x5a, 100);  // a collective writing an IN buffer: never copied back
  ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
  EXPECT_EQ(before, b.user);
}

TEST(Stage, OutCopiesBackOnlyOnSuccess) {
  for (bool ok : {true, false}) {
    Staged b(0, 4096 + 7);
    std::vector<unsigned char> before = b.user;
    coll_gpu_stage_t st;
    coll_gpu_stage_init(&st);
    void *host = nullptr;
    ASSERT_EQ(coll_gpu_stage_buffer(&st, b.base, b.span, COLL_GPU_OUT, &kHost, &coll_gpu_host_engine, &host),
              COLL_GPU_SUCCESS);
    std::vector<unsigned char> result = random_bytes(b.span.len);
    memcpy(host, result.data(), result.size());
    ASSERT_EQ(coll_gpu_stage_finish(&st, ok), COLL_GPU_SUCCESS);
    if (ok) {
      EXPECT_EQ(0, memcmp(b.base, result.data(), result.size()));
    } else {
      EXPECT_EQ(before, b.user);
    }
    // nothing outside the span is touched
    EXPECT_EQ(0, memcmp(b.user.data(), before.data(), 32));
    EXPECT_EQ(0, memcmp(b.user.data() + 32 + b.span.len, before.data() + 32 + b.span.len, 32));
  }
}

TEST(Stage, InOutKeepsBytesTheCollectiveDoesNotWrite) {
  Staged b(0, 64);
  std::vector<unsigned char> before = b.user;
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *host = nullptr;
  ASSERT_EQ(coll_gpu_stage_buffer(&st, b.base, b.span, COLL_GPU_INOUT, &kHost, &coll_gpu_host_engine, &host),
            COLL_GPU_SUCCESS);
  static_cast<char *>(host)[10] = 42;  // the collective writes one byte; the holes keep theirs
  ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
  before[32 + 10] = 42;
  EXPECT_EQ(before, b.user);
}

TEST(Stage, EmptySpanPassesThePointerUnchanged) {
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  char x;
  void *host = nullptr;
  coll_gpu_span_t empty = {0, 0, nullptr, 0};
  ASSERT_EQ(coll_gpu_stage_buffer(&st, &x, empty, COLL_GPU_INOUT, &kHost, &coll_gpu_host_engine, &host),
            COLL_GPU_SUCCESS);
  EXPECT_EQ(host, &x);
  EXPECT_EQ(st.count, 0);
}

TEST(Stage, AboveTwoGigabytes) {
  const size_t n = (size_t{1} << 31) + 4096 + 3;
  std::vector<unsigned char> user(n);
  for (size_t i = 0; i < n; i += 4093) user[i] = static_cast<unsigned char>(i * 7 + 1);
  user[n - 1] = 0x77;
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *host = nullptr;
  coll_gpu_span_t span = {0, n, nullptr, 0};
  ASSERT_EQ(coll_gpu_stage_buffer(&st, user.data(), span, COLL_GPU_INOUT, &kHost, &coll_gpu_host_engine, &host),
            COLL_GPU_SUCCESS);
  auto *h = static_cast<unsigned char *>(host);
  EXPECT_EQ(h[n - 1], 0x77);
  EXPECT_EQ(h[4093 * 3], user[4093 * 3]);
  h[n - 2] = 0x66;
  ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
  EXPECT_EQ(user[n - 2], 0x66);
  EXPECT_EQ(user[n - 1], 0x77);
  coll_gpu_stage_cache_flush();
}

TEST(Stage, SparseLayoutMovesItsPiecesOnly) {
  // three pieces over 1 MiB: in, the pieces reach the bounce buffer; out, only the pieces come back, and
  // the bytes between them keep theirs although the collective wrote there
  const size_t n = size_t{1} << 20;
  std::vector<unsigned char> user = random_bytes(n);
  const std::vector<unsigned char> before = user;
  auto *pieces = static_cast<coll_gpu_piece_t *>(malloc(3 * sizeof(coll_gpu_piece_t)));
  pieces[0] = {16, 8};
  pieces[1] = {4096 * 10 + 3, 100};
  pieces[2] = {static_cast<ptrdiff_t>(n) - 16, 16};
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *host = nullptr;
  coll_gpu_span_t span = {16, n - 16, nullptr, 0};
  ASSERT_EQ(
      coll_gpu_stage_pieces(&st, user.data(), span, pieces, 3, COLL_GPU_INOUT, &kHost, &coll_gpu_host_engine, &host),
      COLL_GPU_SUCCESS);
  auto *h = static_cast<unsigned char *>(host);
  EXPECT_EQ(memcmp(h + 16, &user[16], 8), 0);
  EXPECT_EQ(memcmp(h + 40963, &user[40963], 100), 0);
  EXPECT_EQ(memcmp(h + n - 16, &user[n - 16], 16), 0);
  EXPECT_EQ(h[4096 * 100], 0) << "between the pieces: untouched memory, never copied";
  for (size_t i = 16; i < n; ++i) h[i] = static_cast<unsigned char>(~h[i]);  // the collective writes all over
  ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
  size_t changed = 0, wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool in_piece = (i >= 16 && i < 24) || (i >= 40963 && i < 40963 + 100) || i >= n - 16;
    if (user[i] != before[i]) ++changed;
    if (in_piece ? user[i] != static_cast<unsigned char>(~before[i]) : user[i] != before[i]) ++wrong;
  }
  EXPECT_EQ(changed, 124u);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(coll_gpu_stage_cache_bytes(), 0u) << "a sparse bounce buffer is never cached";
}

TEST(Cache, ReusesBounceBuffersWithinTheLimit) {
  coll_gpu_stage_cache_flush();
  coll_gpu_stage_cache_limit(size_t{64} << 20);
  std::vector<unsigned char> user = random_bytes(10000);
  coll_gpu_span_t span = {0, user.size(), nullptr, 0};
  size_t allocs0 = coll_gpu_stage_cache_allocs();
  for (int i = 0; i < 5; ++i) {
    coll_gpu_stage_t st;
    coll_gpu_stage_init(&st);
    void *host = nullptr;
    ASSERT_EQ(coll_gpu_stage_buffer(&st, user.data(), span, COLL_GPU_IN, &kHost, &coll_gpu_host_engine, &host),
              COLL_GPU_SUCCESS);
    ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
  }
  EXPECT_EQ(coll_gpu_stage_cache_allocs(), allocs0 + 1);
  EXPECT_EQ(coll_gpu_stage_cache_bytes(), 16384u);  // 10000 rounded up to a power of two
  coll_gpu_stage_cache_flush();
  EXPECT_EQ(coll_gpu_stage_cache_bytes(), 0u);
}

TEST(Cache, EverySizeReusesItsBuffer) {
  // sizes far below a rounded bounce buffer (8 bytes in 4 KiB) must reuse it too
  for (size_t n : {size_t{1}, size_t{8}, size_t{4095}, size_t{4096}, size_t{5000}, (size_t{64} << 20) + 1}) {
    coll_gpu_stage_cache_flush();
    coll_gpu_stage_cache_limit(size_t{256} << 20);
    std::vector<unsigned char> user = random_bytes(n);
    coll_gpu_span_t span = {0, n, nullptr, 0};
    size_t allocs0 = coll_gpu_stage_cache_allocs();
    for (int i = 0; i < 3; ++i) {
      coll_gpu_stage_t st;
      coll_gpu_stage_init(&st);
      void *host = nullptr;
      ASSERT_EQ(coll_gpu_stage_buffer(&st, user.data(), span, COLL_GPU_IN, &kHost, &coll_gpu_host_engine, &host),
                COLL_GPU_SUCCESS);
      ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
    }
    EXPECT_EQ(coll_gpu_stage_cache_allocs(), allocs0 + 1) << "size " << n;
  }
  coll_gpu_stage_cache_flush();
}

TEST(Cache, LimitZeroKeepsNothing) {
  coll_gpu_stage_cache_flush();
  coll_gpu_stage_cache_limit(0);
  std::vector<unsigned char> user = random_bytes(5000);
  coll_gpu_span_t span = {0, user.size(), nullptr, 0};
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *host = nullptr;
  ASSERT_EQ(coll_gpu_stage_buffer(&st, user.data(), span, COLL_GPU_IN, &kHost, &coll_gpu_host_engine, &host),
            COLL_GPU_SUCCESS);
  ASSERT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_SUCCESS);
  EXPECT_EQ(coll_gpu_stage_cache_bytes(), 0u);
  coll_gpu_stage_cache_limit(size_t{256} << 20);
}

// An engine that fails on demand, for the error paths.
int fail_alloc_after = 1000, fail_copy_after = 1000, releases = 0;
const char *flaky_last = "no error";
coll_gpu_status_t flaky_alloc(void **p, size_t n, const coll_gpu_meminfo_t *o) {
  if (fail_alloc_after-- <= 0) {
    flaky_last = "no memory";
    return COLL_GPU_CUDA_ERROR;
  }
  return coll_gpu_host_engine.alloc(p, n, o);
}
void flaky_release(void *p, const coll_gpu_meminfo_t *o) {
  ++releases;
  coll_gpu_host_engine.release(p, o);
}
coll_gpu_status_t flaky_copy(void *d, const void *s, size_t n, const coll_gpu_meminfo_t *o) {
  if (fail_copy_after-- <= 0) {
    flaky_last = "copy failed";
    return COLL_GPU_CUDA_ERROR;
  }
  return coll_gpu_host_engine.copy(d, s, n, o);
}
const char *flaky_reason() { return flaky_last; }
// A device-like engine: its failures are CUDA errors.
const coll_gpu_copy_engine_t kFlaky = {"flaky", flaky_alloc, flaky_release, flaky_copy, flaky_reason};

TEST(Errors, FailedAllocationIsReported) {
  coll_gpu_stage_cache_flush();
  fail_alloc_after = 0;
  fail_copy_after = 1000;
  std::vector<unsigned char> user = random_bytes(100);
  coll_gpu_span_t span = {0, user.size(), nullptr, 0};
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *host = nullptr;
  EXPECT_EQ(coll_gpu_stage_buffer(&st, user.data(), span, COLL_GPU_IN, &kHost, &kFlaky, &host), COLL_GPU_CUDA_ERROR);
  EXPECT_EQ(st.status, COLL_GPU_CUDA_ERROR);
  EXPECT_STREQ(st.reason, "no memory");
  EXPECT_STREQ(st.failed, "allocate");
  EXPECT_EQ(st.failed_engine, &kFlaky);
  EXPECT_EQ(coll_gpu_stage_finish(&st, false), COLL_GPU_CUDA_ERROR);
}

TEST(Errors, AThirdBufferIsAnInternalError) {
  std::vector<unsigned char> a = random_bytes(64), b = random_bytes(64), c = random_bytes(64);
  coll_gpu_span_t span = {0, 64, nullptr, 0};
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *ha = nullptr, *hb = nullptr, *hc = nullptr;
  ASSERT_EQ(coll_gpu_stage_buffer(&st, a.data(), span, COLL_GPU_IN, &kHost, &coll_gpu_host_engine, &ha),
            COLL_GPU_SUCCESS);
  ASSERT_EQ(coll_gpu_stage_buffer(&st, b.data(), span, COLL_GPU_OUT, &kHost, &coll_gpu_host_engine, &hb),
            COLL_GPU_SUCCESS);
  EXPECT_EQ(coll_gpu_stage_buffer(&st, c.data(), span, COLL_GPU_IN, &kHost, &coll_gpu_host_engine, &hc),
            COLL_GPU_INTERNAL_ERROR);
  EXPECT_STREQ(st.failed, "track");
  EXPECT_EQ(hc, c.data());  // nothing staged: the caller sees its own buffer
  EXPECT_EQ(coll_gpu_stage_finish(&st, false), COLL_GPU_INTERNAL_ERROR);
  EXPECT_EQ(st.count, 0);
}

TEST(Errors, FailedCopyBackIsReportedAndEveryBufferReturned) {
  coll_gpu_stage_cache_flush();
  coll_gpu_stage_cache_limit(0);
  releases = 0;
  fail_alloc_after = 1000;
  fail_copy_after = 1;  // the copy in works, the copy back fails
  std::vector<unsigned char> a = random_bytes(100), b = random_bytes(100);
  coll_gpu_span_t span = {0, 100, nullptr, 0};
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *ha = nullptr, *hb = nullptr;
  ASSERT_EQ(coll_gpu_stage_buffer(&st, a.data(), span, COLL_GPU_IN, &kHost, &kFlaky, &ha), COLL_GPU_SUCCESS);
  ASSERT_EQ(coll_gpu_stage_buffer(&st, b.data(), span, COLL_GPU_OUT, &kHost, &kFlaky, &hb), COLL_GPU_SUCCESS);
  EXPECT_EQ(coll_gpu_stage_finish(&st, true), COLL_GPU_CUDA_ERROR);
  EXPECT_STREQ(st.reason, "copy failed");
  EXPECT_STREQ(st.failed, "copy to device");
  EXPECT_EQ(releases, 2);
  coll_gpu_stage_cache_limit(size_t{256} << 20);
}

TEST(Classify, ProcessWithoutCudaSeesHostMemoryOnly) {
  // the unit tests never load libcuda (the CUDA runtime is linked but not called)
  ASSERT_EQ(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), nullptr);
  EXPECT_FALSE(coll_gpu_mem_cuda_loaded());
  // loading another library moves the loader's counter and triggers one new look, which finds none
  void *h = dlopen("libm.so.6", RTLD_NOW);
  EXPECT_FALSE(coll_gpu_mem_cuda_loaded());
  if (h) dlclose(h);
  std::vector<int> v(10);
  coll_gpu_meminfo_t info;
  coll_gpu_mem_classify(v.data(), &info);
  EXPECT_EQ(info.kind, COLL_GPU_MEM_HOST);
  EXPECT_EQ(info.device, -1);
  coll_gpu_mem_classify(nullptr, &info);
  EXPECT_EQ(info.kind, COLL_GPU_MEM_HOST);
}

// Runs after the test above (same file, declared later): the sentinel is named only now.
TEST(Classify, SentinelMakesTheCheckOnePointerRead) {
  coll_gpu_mem_init(COLL_GPU_TEST_SENTINEL);
  EXPECT_FALSE(coll_gpu_mem_cuda_loaded());  // loads the sentinel, looks for libcuda once more
  unsigned long slow = coll_gpu_mem_slow_checks();
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(coll_gpu_mem_cuda_loaded());
  EXPECT_EQ(coll_gpu_mem_slow_checks(), slow) << "nothing was loaded: the fast path must answer";
  // a library loaded after the sentinel sends every later check to the counter, which finds no libcuda
  void *h = nullptr;
  for (const char *lib : {"libhwloc.so.15", "libz.so.1", "libgomp.so.1"}) {
    if (dlopen(lib, RTLD_NOW | RTLD_NOLOAD) == nullptr && (h = dlopen(lib, RTLD_NOW)) != nullptr) break;
  }
  if (h == nullptr) GTEST_SKIP() << "no library here that is not loaded yet";
  EXPECT_FALSE(coll_gpu_mem_cuda_loaded());
  EXPECT_GT(coll_gpu_mem_slow_checks(), slow);
}

}  // namespace
