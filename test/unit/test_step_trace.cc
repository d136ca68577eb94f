/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The step timestamps (proxy/trace.h): off unless started; while started every event of every thread is written,
// once; stopped, none. And their summary (test/perf/step_trace.h) on traces whose times the test chose: each
// part of a call found as given, joined across the ranks by step; each part of a step that host threads
// posted and saw (the proxy benchmark's) too.
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "proxy/trace.h"
#include "test/perf/step_trace.h"

namespace {

// The events of every steps.* file in dir, each line one, the files removed after reading.
std::vector<step_trace::Event> read_all(const char *dir, int *files) {
  std::vector<std::string> paths;
  size_t bad = 0;
  std::vector<step_trace::Event> out = step_trace::read_dir(dir, &paths, &bad);
  EXPECT_EQ(0u, bad);
  for (const std::string &p : paths) unlink(p.c_str());
  *files = (int)paths.size();
  return out;
}

// A spread found as that of the times drawn.
void same(const step_trace::Spread &got, const std::vector<uint64_t> &want, const char *what) {
  const step_trace::Spread w = step_trace::spread(want);
  EXPECT_EQ(w.n, got.n) << what;
  EXPECT_DOUBLE_EQ(w.median_us, got.median_us) << what;
  EXPECT_DOUBLE_EQ(w.p10_us, got.p10_us) << what;
  EXPECT_DOUBLE_EQ(w.p90_us, got.p90_us) << what;
}

TEST(StepTrace, EveryThreadsEventsWrittenOnceWhileStarted) {
  char dir[] = "/tmp/coll_gpu_trace.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  unsetenv("COLL_GPU_STEP_TRACE");
  coll_gpu_trace('S', 9, 9, 9, 9);  // not started: nothing
  int files = -1;
  EXPECT_EQ(0, coll_gpu_trace_write());
  EXPECT_TRUE(read_all(dir, &files).empty());
  EXPECT_EQ(0, files);

  ASSERT_EQ(0, coll_gpu_trace_start(dir));
  std::mt19937_64 rng(std::random_device{}());
  const int threads = 4, each = 5000;
  std::vector<std::vector<int>> conns(threads);
  for (auto &c : conns)
    for (int i = 0; i < each; ++i) c.push_back((int)(rng() % 64));
  std::vector<std::thread> ts;
  const char kinds[] = "LADSHR";
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < each; ++i) coll_gpu_trace(kinds[i % 6], t, t + 100, conns[t][i], (uint64_t)i);
    });
  for (auto &t : ts) t.join();
  ASSERT_EQ(0, coll_gpu_trace_write());
  std::vector<step_trace::Event> got = read_all(dir, &files);
  EXPECT_EQ(1, files);
  ASSERT_EQ((size_t)(threads * each), got.size());
  std::vector<uint64_t> last(threads, 0);
  std::vector<int> next(threads, 0);
  for (const step_trace::Event &e : got) {  // each thread's in its order, with times that never go back
    ASSERT_GE(e.rank, 0);
    ASSERT_LT(e.rank, threads);
    const int i = next[e.rank]++;
    EXPECT_EQ((uint64_t)i, e.step);
    EXPECT_EQ(kinds[i % 6], e.kind);
    EXPECT_EQ(e.rank + 100, e.peer);
    EXPECT_EQ(conns[e.rank][i], e.conn);
    EXPECT_GE(e.ns, last[e.rank]);
    last[e.rank] = e.ns;
  }
  coll_gpu_trace_stop();
  coll_gpu_trace('S', 1, 2, 3, 4);
  EXPECT_EQ(0, coll_gpu_trace_write());
  EXPECT_TRUE(read_all(dir, &files).empty());
  rmdir(dir);
}

// Two ranks call 300 times, each sending one step to the other and receiving one: the times of each part are
// drawn at random, the events made from them, and the summary must find each part's spread as drawn.
TEST(StepTrace, SummaryFindsEachPartAsGiven) {
  std::mt19937_64 rng(std::random_device{}());
  auto draw = [&](uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo); };
  std::vector<step_trace::Event> ev;
  std::vector<uint64_t> launched, first, one_way, sent, to_done, call, between;
  uint64_t t = 1000000;
  uint64_t done_at[2] = {0, 0};
  const int calls = 300;
  for (int i = 0; i < calls; ++i) {
    uint64_t launch[2], send[2], arrive[2];
    for (int r = 0; r < 2; ++r) {
      launch[r] = t + draw(0, 500);  // the ranks come within 0.5 us of each other
      if (i > 0) between.push_back(launch[r] - done_at[r]);
      const uint64_t a = draw(8000, 12000);  // below the quickest arrival: no rank done before it sent
      send[r] = launch[r] + a;
      const uint64_t back = draw(2000, 7000);  // the launch returns before the step leaves
      launched.push_back(back);
      ev.push_back({'A', r, 3, 2, (uint64_t)(100 + i), launch[r] + back});
      first.push_back(a);
      const uint64_t c = draw(3000, 7000);
      sent.push_back(c);
      ev.push_back({'L', r, 3, 2, (uint64_t)(100 + i), launch[r]});
      ev.push_back({'S', r, 1 - r, 128, (uint64_t)i, send[r]});
      ev.push_back({'H', r, 1 - r, 128, (uint64_t)i, send[r] + c});
    }
    for (int r = 0; r < 2; ++r) {
      const uint64_t b = draw(5000, 12000);
      one_way.push_back(b);
      arrive[1 - r] = send[r] + b;
      ev.push_back({'R', 1 - r, r, 128, (uint64_t)i, arrive[1 - r]});
    }
    for (int r = 0; r < 2; ++r) {
      const uint64_t d = draw(4000, 6000);
      to_done.push_back(d);
      done_at[r] = arrive[r] + d;
      call.push_back(done_at[r] - launch[r]);
      ev.push_back({'D', r, 3, 2, (uint64_t)(100 + i), done_at[r]});
    }
    t = std::max(done_at[0], done_at[1]) + draw(600, 2000);
  }
  std::shuffle(ev.begin(), ev.end(), rng);  // the files' order is not the times'
  const step_trace::Summary s = step_trace::summarize(ev, 0.0);
  same(s.launched, launched, "launched");
  same(s.first_send, first, "first send");
  same(s.one_way, one_way, "one way");
  same(s.sent, sent, "sent");
  same(s.last_to_done, to_done, "last step -> done");
  same(s.call, call, "call");
  same(s.between, between, "between");
  EXPECT_EQ(0u, s.unmatched);
  // a lost arrival is counted, not matched with another step
  for (size_t k = 0; k < ev.size(); ++k)
    if (ev[k].kind == 'R') {
      ev.erase(ev.begin() + (long)k);
      break;
    }
  const step_trace::Summary lost = step_trace::summarize(ev, 0.0);
  EXPECT_EQ(1u, lost.unmatched);
  EXPECT_EQ(one_way.size() - 1, lost.one_way.n);
}

// The parts of steps that host threads posted and saw (the proxy benchmark's P and K), either way on one
// connection, found as given; another connection's events are not its.
TEST(StepTrace, PartsOfAStepFoundAsGiven) {
  std::mt19937_64 rng(std::random_device{}());
  auto draw = [&](uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo); };
  std::vector<step_trace::Event> ev;
  std::vector<uint64_t> to_network, one_way, to_seen, sent, whole;
  uint64_t t = 5000000;
  for (uint64_t i = 0; i < 200; ++i)
    for (int from = 0; from < 2; ++from) {
      const int to = 1 - from;
      const uint64_t a = draw(500, 40000), b = draw(2000, 90000), c = draw(300, 8000), h = draw(100, 60000);
      ev.push_back({'P', from, to, 7, i, t});
      ev.push_back({'S', from, to, 7, i, t + a});
      ev.push_back({'H', from, to, 7, i, t + a + h});
      ev.push_back({'R', to, from, 7, i, t + a + b});
      ev.push_back({'K', to, from, 7, i, t + a + b + c});
      ev.push_back({'S', from, to, 8, i, t + 1});  // another connection, its step of the same number
      ev.push_back({'R', to, from, 8, i, t + 2});
      to_network.push_back(a);
      one_way.push_back(b);
      to_seen.push_back(c);
      sent.push_back(h);
      whole.push_back(a + b + c);
      t += a + b + c + draw(1000, 5000);
    }
  std::shuffle(ev.begin(), ev.end(), rng);
  const step_trace::Parts p = step_trace::parts(ev, 7);
  same(p.to_network, to_network, "posted -> to the network");
  same(p.one_way, one_way, "to the network -> at the receiving proxy");
  same(p.to_seen, to_seen, "at the receiving proxy -> seen");
  same(p.sent, sent, "its send completed");
  same(p.whole, whole, "the whole way");
  EXPECT_EQ(0u, p.unmatched);
  EXPECT_EQ(0u, step_trace::parts(ev, 8).whole.n) << "nothing posted there";
  // a step never seen is counted, not matched with another; a send whose completion is missing has its
  // other parts
  bool dropped_k = false, dropped_h = false;
  for (size_t k = 0; k < ev.size() && !(dropped_k && dropped_h);)
    if ((ev[k].kind == 'K' && !dropped_k) || (ev[k].kind == 'H' && !dropped_h)) {
      (ev[k].kind == 'K' ? dropped_k : dropped_h) = true;
      ev.erase(ev.begin() + (long)k);
    } else {
      ++k;
    }
  const step_trace::Parts lost = step_trace::parts(ev, 7);
  EXPECT_EQ(1u, lost.unmatched);
  EXPECT_EQ(whole.size() - 1, lost.whole.n);
  EXPECT_LE(lost.sent.n, whole.size() - 1);
  EXPECT_GE(lost.sent.n, whole.size() - 2);
}

TEST(StepTrace, ParsesItsLinesOnly) {
  step_trace::Event e;
  ASSERT_TRUE(step_trace::parse("R 3 1 130 18446744073709551615 123456789012\n", &e));
  EXPECT_EQ('R', e.kind);
  EXPECT_EQ(3, e.rank);
  EXPECT_EQ(1, e.peer);
  EXPECT_EQ(130, e.conn);
  EXPECT_EQ(18446744073709551615ull, e.step);
  EXPECT_EQ(123456789012ull, e.ns);
  EXPECT_FALSE(step_trace::parse("R 3 1 130\n", &e));
  EXPECT_FALSE(step_trace::parse("\n", &e));
}

}  // namespace
