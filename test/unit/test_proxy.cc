/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The network proxy alone (proxy/proxy.h) between two processes over UCX or its sockets, a host thread playing the
// kernel on both sides: steps arrive in order, whole and unchanged, on many connections at once; a slow
// receiver holds the sender back through the FIFO (back-pressure) and the proxy never frees a slot early;
// partial and empty steps keep their sizes; steps that arrive before their receives (a receiver whose FIFOs
// come late) are held for them; addresses that are not a peer's are refused; teardown with
// steps in flight returns; a peer killed mid-transfer is reported, naming it, instead of a hang.
// Each case runs over UCX's tcp transport (loopback) and over its shared-memory transports, with a thread per
// proxy and with several (a different number at each end: the connections spread over the fewer).
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/ll.h"
#include "common/wait.h"
#include "proxy/proxy.h"
#include "proxy/trace.h"
#include "test/common/fd_io.h"
#include "test/perf/step_trace.h"

namespace {

// The byte at `at` of step `step` of connection `ch` from rank `sender` (a hash, so that a step in the
// wrong slot, from the wrong connection or shifted shows).
uint8_t pattern(uint64_t seed, int sender, int ch, uint64_t step, size_t at) {
  uint64_t x = seed ^ ((uint64_t)sender << 56) ^ ((uint64_t)ch << 40) ^ (step << 20) ^ (at / 8);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (uint8_t)(x >> (8 * (at % 8)));
}

struct Options {
  int channels = 4;
  int depth = 8;
  size_t slot = 64 << 10;
  uint64_t steps = 100;
  uint64_t seed = 1;
  uint64_t slow_recv_ns = 0;  // rank 1 sleeps this long before consuming each step
  uint64_t late_recv_ns = 0;  // rank 1 adds its receiving FIFOs this long after its sending ones
  // memory both processes see (MAP_SHARED, made before the fork): rank 1's steps consumed, per connection
  volatile uint64_t *consumed = nullptr;
  uint64_t die_after = 0;   // rank 1 kills itself once it has sent this many steps on connection 0 (0: never)
  bool consume = true;      // false: post everything, consume nothing, tear down at once
  bool same_host = false;   // connect as peers of one host (unwatched: UCX may use shared memory)
  bool trace = false;       // each rank writes its step timestamps at the end (proxy/trace.h, started before)
  int threads[2] = {1, 1};  // each rank's proxy threads
  coll_gpu_proxy_net_t net = COLL_GPU_PROXY_NET_UCX;
  size_t ll_bytes = 0;  // > 0: the FIFOs have LL slots, and steps of at most this many bytes go as LL lines or not,
                        // at random, each end choosing alone (common/ll.h)
};

// The size of step `step` of a connection: random, at most a slot; the last step partial, some empty.
size_t step_bytes(const Options &o, int sender, int ch, uint64_t step) {
  std::mt19937_64 r(o.seed ^ ((uint64_t)sender << 48) ^ ((uint64_t)ch << 32) ^ step);
  if (step + 1 == o.steps) return 1 + r() % (o.slot - 1);
  const uint64_t k = r() % 16;
  if (k == 0) return 0;
  if (k < 8) return o.slot;
  return 1 + r() % o.slot;
}

struct Report {
  int errors = 0;
  std::string first;
  int failed_peer = -2;  // what coll_gpu_proxy_failed named, -2: nothing failed
  std::string failed_why;
  uint64_t max_ahead = 0;      // the most steps the sender had posted and not got back as sent
  uint64_t max_in_flight = 0;  // the most steps rank 0 had posted that rank 1 had not consumed (o.consumed)
  void error(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
    if (errors++ > 0) return;
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    first = buf;
  }
};

// Whether the kernel's end `end` (0: sender, 1: receiver) of step `step` of connection `ch` from rank `sender`
// takes LL lines: half the steps that may (0 < bytes <= ll_bytes), at random.
bool ll_end(const Options &o, int sender, int ch, uint64_t step, size_t bytes, int end) {
  if (o.ll_bytes == 0 || bytes == 0 || bytes > o.ll_bytes) return false;
  std::mt19937_64 r(~o.seed ^ ((uint64_t)sender << 48) ^ ((uint64_t)ch << 32) ^ step);
  return (r() >> (8 + end)) & 1;
}

// One connection's two FIFOs at one rank, as the kernel and the proxy share them.
struct Conn {
  std::vector<char> send_buf, recv_buf;
  std::vector<uint64_t> send_ll, recv_ll;  // the LL slots (o.ll_bytes > 0)
  uint64_t words[6 + 2 * COLL_GPU_PROXY_MAX_DEPTH] = {};
  volatile uint64_t *send_tail() { return &words[0]; }
  volatile uint64_t *send_head() { return &words[1]; }
  volatile uint64_t *recv_tail() { return &words[2]; }
  volatile uint64_t *recv_head() { return &words[3]; }
  volatile uint64_t *send_sizes() { return &words[6]; }
  volatile uint64_t *recv_sizes() { return &words[6 + COLL_GPU_PROXY_MAX_DEPTH]; }
  uint64_t sent = 0, received = 0;
};

char *ll_slots(const Options &o, std::vector<uint64_t> &words) {
  return o.ll_bytes > 0 ? (char *)words.data() : nullptr;
}
volatile uint64_t *ll_line(const Options &o, std::vector<uint64_t> &words, int slot, size_t i) {
  return (volatile uint64_t *)((char *)words.data() + (size_t)slot * coll_gpu_ll_stride(o.ll_bytes) +
                               i * COLL_GPU_LL_LINE);
}

// The kernel's LL post of step `step` (n bytes): the header line first, then the lines, so that the proxy
// may see a step whose lines are not all there yet; neither tail nor sizes.
void ll_post(const Options &o, Conn &k, int slot, int sender, int ch, uint64_t step, size_t n) {
  const uint64_t flag = (uint64_t)coll_gpu_ll_flag(step) << 32;
  volatile uint64_t *h = ll_line(o, k.send_ll, slot, 0);
  h[0] = flag | (uint32_t)n;
  h[1] = flag | (uint32_t)((uint64_t)n >> 32);
  for (size_t i = 0; i < 2 * coll_gpu_ll_packs(n); ++i) {  // i: the 8 data bytes from 8 i
    uint32_t d[2];
    for (int w = 0; w < 2; ++w) {
      d[w] = 0;
      for (int b = 0; b < 4; ++b) {
        const size_t at = i * COLL_GPU_LL_LINE_DATA + 4 * w + b;
        if (at < n) d[w] |= (uint32_t)pattern(o.seed, sender, ch, step, at) << (8 * b);
      }
    }
    volatile uint64_t *l = ll_line(o, k.send_ll, slot, 1 + coll_gpu_ll_line(i / 2, (int)(i % 2)));
    l[0] = flag | d[0];
    l[1] = flag | d[1];
    if (i == 0) sched_yield();
  }
}

// The kernel's LL receive of step `step` (n bytes from `sender`): false while some line lacks the step's flag;
// else checks the data, poisons the lines (an even flag is no step's) and the slot, true.
bool ll_consume(const Options &o, Conn &k, int sender, int ch, uint64_t step, size_t n, Report *rep) {
  const int slot = (int)(step % (uint64_t)o.depth);
  const uint32_t flag = coll_gpu_ll_flag(step);
  const size_t halves = 2 * coll_gpu_ll_packs(n);  // i below: the 8 data bytes from 8 i
  for (size_t i = 0; i < halves; ++i) {
    volatile uint64_t *l = ll_line(o, k.recv_ll, slot, 1 + coll_gpu_ll_line(i / 2, (int)(i % 2)));
    if ((uint32_t)(l[0] >> 32) != flag || (uint32_t)(l[1] >> 32) != flag) return false;
  }
  for (size_t i = 0; i < halves; ++i) {
    volatile uint64_t *l = ll_line(o, k.recv_ll, slot, 1 + coll_gpu_ll_line(i / 2, (int)(i % 2)));
    for (size_t at = i * COLL_GPU_LL_LINE_DATA; at < (i + 1) * COLL_GPU_LL_LINE_DATA && at < n; ++at) {
      const size_t b = at % COLL_GPU_LL_LINE_DATA;
      const uint8_t got = (uint8_t)(l[b / 4] >> (8 * (b % 4)));
      if (got != pattern(o.seed, sender, ch, step, at)) {
        rep->error("conn %d LL step %llu: byte %zu of %zu is %u, not %u", ch, (unsigned long long)step, at, n, got,
                   pattern(o.seed, sender, ch, step, at));
        return true;
      }
    }
    l[0] = 0xA5A5A5A4A5A5A5A5ull;
    l[1] = 0xA5A5A5A4A5A5A5A5ull;
  }
  memset(k.recv_buf.data() + (size_t)slot * o.slot, 0xA5, o.slot);
  return true;
}

// Rank `rank` of 2: a proxy, its address traded over `fd`, every connection both ways, and the kernel's
// part played here until every step has gone both ways (or the deadline, or a failure).
Report run_rank(int rank, int fd, const Options &o) {
  Report rep;
  char why[512] = "";
  coll_gpu_proxy_config_t cfg{};
  cfg.rank = rank;
  cfg.nranks = 2;
  cfg.threads = o.threads[rank];
  cfg.spin_ns = 1000000;
  cfg.sleep_ns = 1000000;
  cfg.net = o.net;
  cfg.ifname = "lo";  // sockets: loopback, whatever else this machine has
  coll_gpu_proxy_t *p = nullptr;
  if (coll_gpu_proxy_create(&cfg, &p, why, sizeof(why)) != COLL_GPU_SUCCESS) {
    rep.error("rank %d: create: %s", rank, why);
    return rep;
  }
  if (coll_gpu_proxy_threads(p) != o.threads[rank])
    rep.error("rank %d: %d proxy threads, %d asked for", rank, coll_gpu_proxy_threads(p), o.threads[rank]);
  std::vector<uint8_t> mine(COLL_GPU_PROXY_ADDRESS_BYTES), theirs(COLL_GPU_PROXY_ADDRESS_BYTES);
  coll_gpu_proxy_address(p, mine.data());
  if (!write_all(fd, mine.data(), mine.size()) || !read_all(fd, theirs.data(), theirs.size())) {
    rep.error("rank %d: address exchange", rank);
    coll_gpu_proxy_destroy(p);
    return rep;
  }
  const int peer = 1 - rank;
  if (coll_gpu_proxy_connect(p, peer, theirs.data(), o.same_host, why, sizeof(why)) != COLL_GPU_SUCCESS) {
    rep.error("rank %d: connect: %s", rank, why);
    coll_gpu_proxy_destroy(p);
    return rep;
  }
  std::vector<Conn> conns(o.channels);
  for (int c = 0; c < o.channels && rep.errors == 0; ++c) {
    Conn &k = conns[c];
    k.send_buf.assign((size_t)o.depth * o.slot, 0);
    k.recv_buf.assign((size_t)o.depth * o.slot, 0);
    const size_t ll_words = o.ll_bytes > 0 ? (size_t)o.depth * coll_gpu_ll_stride(o.ll_bytes) / 8 : 0;
    k.send_ll.assign(ll_words, 0);
    k.recv_ll.assign(ll_words, 0);
    coll_gpu_proxy_fifo_t s{COLL_GPU_PROXY_SEND,    peer,          c,
                            k.send_buf.data(),      o.slot,        o.depth,
                            k.send_tail(),          k.send_head(), k.send_sizes(),
                            ll_slots(o, k.send_ll), o.ll_bytes};
    if (coll_gpu_proxy_add(p, &s, why, sizeof(why)) != COLL_GPU_SUCCESS)
      rep.error("rank %d: add connection %d: %s", rank, c, why);
  }
  if (rank == 1 && o.late_recv_ns > 0) {  // meanwhile rank 0's first steps arrive, before their receives
    const struct timespec t = {(time_t)(o.late_recv_ns / 1000000000), (long)(o.late_recv_ns % 1000000000)};
    nanosleep(&t, nullptr);
  }
  for (int c = 0; c < o.channels && rep.errors == 0; ++c) {
    Conn &k = conns[c];
    coll_gpu_proxy_fifo_t r{COLL_GPU_PROXY_RECV,    peer,          c,
                            k.recv_buf.data(),      o.slot,        o.depth,
                            k.recv_tail(),          k.recv_head(), k.recv_sizes(),
                            ll_slots(o, k.recv_ll), o.ll_bytes};
    if (coll_gpu_proxy_add(p, &r, why, sizeof(why)) != COLL_GPU_SUCCESS)
      rep.error("rank %d: add connection %d: %s", rank, c, why);
  }
  // the kernel's part: post what the FIFO has room for, consume what arrived, on every connection in turn
  const uint64_t deadline = coll_gpu_now_ns() + 60000000000ull;
  bool done = rep.errors > 0 || !o.consume;
  while (!done) {
    done = true;
    coll_gpu_proxy_wake(p, 0, o.channels);
    for (int c = 0; c < o.channels; ++c) {
      Conn &k = conns[c];
      const uint64_t head = load_acquire(k.send_head());
      if (head > k.sent)
        rep.error("rank %d conn %d: head %llu past tail %llu", rank, c, (unsigned long long)head,
                  (unsigned long long)k.sent);
      if (k.sent - head > rep.max_ahead) rep.max_ahead = k.sent - head;
      if (k.sent < o.steps && k.sent + 1 <= head + (uint64_t)o.depth) {
        if (rank == 1 && o.die_after > 0 && c == 0 && k.sent == o.die_after) raise(SIGKILL);
        const int slot = (int)(k.sent % (uint64_t)o.depth);
        const size_t n = step_bytes(o, rank, c, k.sent);
        if (ll_end(o, rank, c, k.sent, n, 0)) {
          ll_post(o, k, slot, rank, c, k.sent, n);
          ++k.sent;
        } else {
          char *dst = k.send_buf.data() + (size_t)slot * o.slot;
          for (size_t i = 0; i < n; ++i) dst[i] = (char)pattern(o.seed, rank, c, k.sent, i);
          k.send_sizes()[slot] = n;
          store_release(k.send_tail(), ++k.sent);
        }
        if (rank == 0 && o.consumed != nullptr) {
          const uint64_t behind = k.sent - load_acquire(&o.consumed[c]);
          if (behind > rep.max_in_flight) rep.max_in_flight = behind;
        }
      }
      const uint64_t tail = load_acquire(k.recv_tail());
      if (tail > k.received + (uint64_t)o.depth || tail > o.steps)
        rep.error("rank %d conn %d: tail %llu with %llu consumed, depth %d", rank, c, (unsigned long long)tail,
                  (unsigned long long)k.received, o.depth);
      const size_t next = k.received < o.steps ? step_bytes(o, peer, c, k.received) : 0;
      if (k.received < o.steps && ll_end(o, peer, c, k.received, next, 1)) {  // the lines, never the tail
        if (ll_consume(o, k, peer, c, k.received, next, &rep)) {
          store_release(k.recv_head(), ++k.received);
          if (rank == 1 && o.consumed != nullptr) store_release(&o.consumed[c], k.received);
        }
      } else if (k.received < tail) {
        if (rank == 1 && o.slow_recv_ns > 0) {
          const struct timespec t = {0, (long)o.slow_recv_ns};
          nanosleep(&t, nullptr);
        }
        const int slot = (int)(k.received % (uint64_t)o.depth);
        const size_t n = step_bytes(o, peer, c, k.received);
        if (k.recv_sizes()[slot] != n)
          rep.error("rank %d conn %d step %llu: %llu bytes arrived, %zu sent", rank, c, (unsigned long long)k.received,
                    (unsigned long long)k.recv_sizes()[slot], n);
        const char *src = k.recv_buf.data() + (size_t)slot * o.slot;
        for (size_t i = 0; i < n; ++i)
          if ((uint8_t)src[i] != pattern(o.seed, peer, c, k.received, i)) {
            rep.error("rank %d conn %d step %llu: byte %zu of %zu is %u, not %u", rank, c,
                      (unsigned long long)k.received, i, n, (uint8_t)src[i], pattern(o.seed, peer, c, k.received, i));
            break;
          }
        memset((void *)src, 0xA5, o.slot);  // poison: a step delivered twice or left in place shows
        store_release(k.recv_head(), ++k.received);
        if (rank == 1 && o.consumed != nullptr) store_release(&o.consumed[c], k.received);
      }
      if (k.sent < o.steps || k.received < o.steps || load_acquire(k.send_head()) < o.steps) done = false;
    }
    int failed_peer = -1;
    if (coll_gpu_proxy_failed(p, &failed_peer, why, sizeof(why)) != COLL_GPU_SUCCESS) {
      rep.failed_peer = failed_peer;
      rep.failed_why = why;
      break;
    }
    if (coll_gpu_now_ns() > deadline) {
      rep.error("rank %d: not done after 60 s", rank);
      break;
    }
    if (rep.errors > 0) break;
  }
  if (!o.consume) {  // a moment for the proxy to post and receive some, then teardown with them in flight
    for (int c = 0; c < o.channels; ++c) {
      for (int s = 0; s < o.depth; ++s) conns[c].send_sizes()[s] = o.slot;
      store_release(conns[c].send_tail(), (uint64_t)o.depth);
    }
    coll_gpu_proxy_wake(p, 0, o.channels);
    usleep(20000);
  }
  // both ranks done before either tears down (a closing peer may look like a failed one)
  char byte = 1;
  if (o.die_after == 0 && (!write_all(fd, &byte, 1) || !read_all(fd, &byte, 1)))
    rep.error("rank %d: closing handshake", rank);
  const uint64_t t0 = coll_gpu_now_ns();
  coll_gpu_proxy_destroy(p);
  if (coll_gpu_now_ns() - t0 > 10000000000ull)
    rep.error("rank %d: teardown took %.1f s", rank, (coll_gpu_now_ns() - t0) / 1e9);
  return rep;
}

// Runs rank 0 here and rank 1 in a child; the child's verdict comes back as its exit status.
struct Pair {
  Report r0;
  int child_status = -1;
};
Pair run_pair(const Options &o) {
  Pair out;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    out.r0.error("socketpair");
    return out;
  }
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    const Report r1 = run_rank(1, sv[1], o);
    if (o.trace && coll_gpu_trace_write() != 0) fprintf(stderr, "rank 1: cannot write its step timestamps\n");
    if (r1.errors > 0) fprintf(stderr, "rank 1: %d errors, first: %s\n", r1.errors, r1.first.c_str());
    if (r1.failed_peer != -2) fprintf(stderr, "rank 1: proxy failed: %s\n", r1.failed_why.c_str());
    _exit(r1.errors > 0 ? 1 : r1.failed_peer != -2 ? 2 : 0);
  }
  close(sv[1]);
  out.r0 = run_rank(0, sv[0], o);
  if (o.trace && coll_gpu_trace_write() != 0) out.r0.error("rank 0: cannot write its step timestamps");
  close(sv[0]);
  int status = 0;
  for (int i = 0; i < 300; ++i) {  // 30 s for the child to finish after rank 0 did
    if (waitpid(pid, &status, WNOHANG) == pid) {
      out.child_status = status;
      return out;
    }
    usleep(100000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  out.r0.error("rank 1 did not finish");
  return out;
}

uint64_t fresh_seed() {
  const uint64_t s = coll_gpu_now_ns() ^ ((uint64_t)getpid() << 32);
  printf("seed %llu\n", (unsigned long long)s);
  return s;
}

// The transports a case runs over (COLL_GPU_UCX_TLS, which steers the proxy's UCX only; "sockets": the
// proxy's own TCP sockets instead of UCX), whether the ranks connect as peers of one host (UCX's shared
// memory needs it) or of two (watched by UCX; sockets watch both), and each rank's proxy threads.
struct Over {
  const char *tls;
  bool same_host;
  int threads0, threads1;
};
void PrintTo(const Over &o, std::ostream *os) {
  *os << o.tls << (o.same_host ? ", one host" : ", two hosts") << ", " << o.threads0 << " and " << o.threads1
      << " threads";
}
class ProxyOver : public ::testing::TestWithParam<Over> {
 protected:
  void SetUp() override { setenv("COLL_GPU_UCX_TLS", GetParam().tls, 1); }
  void TearDown() override { unsetenv("COLL_GPU_UCX_TLS"); }
  Options options() const {
    Options o;
    o.same_host = GetParam().same_host;
    o.threads[0] = GetParam().threads0;
    o.threads[1] = GetParam().threads1;
    o.net = strcmp(GetParam().tls, "sockets") == 0 ? COLL_GPU_PROXY_NET_SOCKET : COLL_GPU_PROXY_NET_UCX;
    return o;
  }
};

void expect_clean(const Pair &p) {
  EXPECT_EQ(p.r0.errors, 0) << p.r0.first;
  EXPECT_EQ(p.r0.failed_peer, -2) << p.r0.failed_why;
  ASSERT_TRUE(WIFEXITED(p.child_status)) << "rank 1 ended by a signal or not at all: " << p.child_status;
  EXPECT_EQ(WEXITSTATUS(p.child_status), 0) << "rank 1 failed (its message is above)";
}

TEST_P(ProxyOver, StepsArriveInOrderOnManyConnections) {
  Options o = options();
  o.channels = 16;
  o.slot = 16 << 10;
  o.steps = 150;
  expect_clean(run_pair(o));
}

// With the step timestamps on (proxy/trace.h), every step of every connection is there at both ends: handed
// to the network (S) and its send completed (H) at the sender, arrived (R) at the receiver, neither before S.
TEST_P(ProxyOver, StepTimestampsCoverEveryStep) {
  char dir[] = "/tmp/coll_gpu_trace.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ASSERT_EQ(0, coll_gpu_trace_start(dir));
  Options o = options();
  o.channels = 3;
  o.steps = 40;
  o.trace = true;
  expect_clean(run_pair(o));
  coll_gpu_trace_stop();
  using Key = std::tuple<char, int, int, int, uint64_t>;  // kind, rank, peer, connection, step
  std::map<Key, uint64_t> seen;
  std::vector<std::string> paths;
  size_t bad = 0;
  for (const step_trace::Event &e : step_trace::read_dir(dir, &paths, &bad))
    EXPECT_TRUE(seen.emplace(Key(e.kind, e.rank, e.peer, e.conn, e.step), e.ns).second)
        << "twice: " << e.kind << " " << e.rank << " " << e.peer << " " << e.conn << " " << e.step;
  EXPECT_EQ(0u, bad);
  for (const std::string &p : paths) unlink(p.c_str());
  rmdir(dir);
  EXPECT_EQ(2u, paths.size());
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < o.channels; ++c)
      for (uint64_t st = 0; st < o.steps; ++st) {
        auto s = seen.find(Key('S', r, 1 - r, c, st)), h = seen.find(Key('H', r, 1 - r, c, st)),
             a = seen.find(Key('R', 1 - r, r, c, st));
        ASSERT_NE(s, seen.end()) << r << " " << c << " " << st;
        ASSERT_NE(h, seen.end()) << r << " " << c << " " << st;
        ASSERT_NE(a, seen.end()) << r << " " << c << " " << st;
        EXPECT_GE(h->second, s->second);
        EXPECT_GE(a->second, s->second);
      }
  EXPECT_EQ((size_t)(3 * 2 * o.channels * o.steps), seen.size());  // nothing else
}

// LL steps (common/ll.h) among plain ones, each end choosing per step and alone: every step arrives whole and
// unchanged either way, in its lines or its slot, on connections whose slots are larger than an LL step and on
// ones whose every step may be one.
TEST_P(ProxyOver, LLStepsAmongPlainOnes) {
  Options o = options();
  o.seed = fresh_seed();
  o.channels = 3;
  o.slot = 8 << 10;
  o.ll_bytes = 4 << 10;
  o.steps = 200;
  expect_clean(run_pair(o));
  o.slot = o.ll_bytes = 1 << 10;
  expect_clean(run_pair(o));
}

TEST_P(ProxyOver, LargeSlotsWholeAndPartial) {
  Options o = options();
  o.channels = 2;
  o.slot = 512 << 10;  // NCCL's Simple slot: UCX's rendezvous protocol
  o.steps = 40;
  expect_clean(run_pair(o));
}

// Rank 1 consumes a step every 2 ms of slot-byte slots; rank 0 posts as fast as the FIFO lets it. Rank 0
// fills its FIFO and waits for rank 1 to free slots, never more than depth ahead of its proxy; end to end at
// most both FIFOs' worth is between rank 0's kernel and rank 1's, and more than one FIFO's (the receiving
// FIFO fills up too). Rank 1's progress reaches rank 0 through memory both processes map.
void expect_back_pressure(Options o, size_t slot) {
  o.channels = 1;
  o.depth = 4;
  o.slot = slot;
  o.steps = 60;
  o.slow_recv_ns = 2000000;
  void *shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  o.consumed = (volatile uint64_t *)shared;
  const Pair p = run_pair(o);
  munmap(shared, 4096);
  expect_clean(p);
  EXPECT_EQ(p.r0.max_ahead, (uint64_t)o.depth);
  EXPECT_LE(p.r0.max_in_flight, 2 * (uint64_t)o.depth);
  EXPECT_GT(p.r0.max_in_flight, (uint64_t)o.depth);
}

// Small steps: eager sends within credits.
TEST_P(ProxyOver, SlowReceiverHoldsTheSenderBack) { expect_back_pressure(options(), 4 << 10); }

// Steps of up to 128 KiB: most go synchronously (64 KiB and more), the rest within credits.
TEST_P(ProxyOver, SlowReceiverHoldsTheSenderBackLargeSteps) { expect_back_pressure(options(), 128 << 10); }

// A receiver whose FIFOs come late (its engine set up after the sender's): the sender's first steps, which
// need no credit, arrive before their receives, large ones included, and are held until they are posted.
TEST_P(ProxyOver, StepsBeforeTheirReceivesAreHeld) {
  Options o = options();
  o.seed = fresh_seed();
  o.slot = 192 << 10;
  o.steps = 40;
  o.late_recv_ns = 300000000;
  expect_clean(run_pair(o));
}

TEST_P(ProxyOver, TeardownWithStepsInFlight) {
  Options o = options();
  o.channels = 3;
  o.steps = 1000;
  o.consume = false;
  expect_clean(run_pair(o));
}

TEST_P(ProxyOver, PeerKilledMidTransferIsReported) {
  if (GetParam().same_host && options().net == COLL_GPU_PROXY_NET_UCX)
    GTEST_SKIP() << "UCX does not watch a peer of this host; the engine checks its process";
  Options o = options();
  o.channels = 2;
  o.slot = 8 << 10;
  o.steps = 1000000;  // rank 1 dies long before the end
  o.die_after = 50;
  const Pair p = run_pair(o);
  EXPECT_EQ(p.r0.errors, 0) << p.r0.first;
  EXPECT_EQ(p.r0.failed_peer, 1) << "rank 0 did not learn that rank 1 is gone";
  EXPECT_NE(p.r0.failed_why.find("rank 1"), std::string::npos) << p.r0.failed_why;
  ASSERT_TRUE(WIFSIGNALED(p.child_status));
  EXPECT_EQ(WTERMSIG(p.child_status), SIGKILL);
}

std::string over_name(const ::testing::TestParamInfo<Over> &i) {
  std::string name = i.param.tls;
  if (strcmp(i.param.tls, "sockets") == 0) name += i.param.same_host ? "_one_host" : "_two_hosts";
  if (i.param.threads0 > 1 || i.param.threads1 > 1)
    name += "_threads" + std::to_string(i.param.threads0) + "x" + std::to_string(i.param.threads1);
  return name;
}
INSTANTIATE_TEST_SUITE_P(Ucx, ProxyOver,
                         ::testing::Values(Over{"tcp", false, 1, 1}, Over{"sm", true, 1, 1}, Over{"tcp", false, 3, 2},
                                           Over{"sm", true, 4, 4}),
                         over_name);
INSTANTIATE_TEST_SUITE_P(Sockets, ProxyOver,
                         ::testing::Values(Over{"sockets", false, 1, 1}, Over{"sockets", true, 1, 1},
                                           Over{"sockets", false, 3, 2}),
                         over_name);

// common/ll.h's layout, for every size an LL slot may have (fresh random ones and the edges): each half of each
// pack has a line of its own, behind the header and inside the slot's stride (a multiple of 128 bytes); a warp's
// 32 packs have their low halves in 32 lines side by side, and their high halves in the 32 after them.
TEST(LL, EveryHalfHasItsOwnLineInsideTheSlot) {
  std::mt19937_64 r(fresh_seed());
  std::vector<size_t> sizes{16, 32, 496, 512, 528, 1008, 1024, COLL_GPU_LL_MAX_BYTES - 16, COLL_GPU_LL_MAX_BYTES};
  for (int i = 0; i < 64; ++i) sizes.push_back(16 * (1 + r() % (COLL_GPU_LL_MAX_BYTES / 16)));
  for (size_t bytes : sizes) {
    const size_t stride = coll_gpu_ll_stride(bytes), packs = coll_gpu_ll_packs(bytes);
    ASSERT_EQ(packs, bytes / 16) << bytes;
    ASSERT_EQ(stride % 128, 0u) << bytes;
    const size_t lines = stride / COLL_GPU_LL_LINE - 1;  // behind the header
    ASSERT_GE(lines, 2 * packs) << bytes;
    ASSERT_LT(lines, 2 * packs + COLL_GPU_LL_GROUP + 128 / COLL_GPU_LL_LINE) << bytes << ": too much slack";
    std::vector<int> taken(lines, 0);
    for (size_t u = 0; u < packs; ++u)
      for (int half = 0; half < 2; ++half) {
        const size_t l = coll_gpu_ll_line(u, half);
        ASSERT_LT(l, lines) << bytes << " bytes, pack " << u << " half " << half;
        EXPECT_EQ(taken[l]++, 0) << bytes << " bytes: line " << l << " twice";
        const size_t first = u - u % COLL_GPU_LL_GROUP;  // the warp's first pack
        EXPECT_EQ(l, coll_gpu_ll_line(first, half) + u % COLL_GPU_LL_GROUP) << bytes << " bytes, pack " << u;
      }
    for (size_t u = 0; u + COLL_GPU_LL_GROUP <= packs; u += COLL_GPU_LL_GROUP)
      EXPECT_EQ(coll_gpu_ll_line(u, 1), coll_gpu_ll_line(u, 0) + COLL_GPU_LL_GROUP) << bytes << " bytes, pack " << u;
  }
}

// The proxy's threads, found by their name among the process's, run where the configuration says.
TEST(Proxy, ThreadsRunOnTheGivenCpus) {
  cpu_set_t allowed;
  ASSERT_EQ(0, sched_getaffinity(0, sizeof(allowed), &allowed));
  int cpu = CPU_SETSIZE - 1;  // the last CPU this process may use: not where a new thread would start anyway
  while (cpu > 0 && !CPU_ISSET(cpu, &allowed)) --cpu;
  char why[512] = "";
  coll_gpu_proxy_config_t cfg{};
  cfg.rank = 0;
  cfg.nranks = 2;
  cfg.threads = 3;
  cfg.cpus = &cpu;
  cfg.ncpus = 1;
  cfg.spin_ns = 1000000;
  cfg.sleep_ns = 1000000;
  coll_gpu_proxy_t *p = nullptr;
  ASSERT_EQ(coll_gpu_proxy_create(&cfg, &p, why, sizeof(why)), COLL_GPU_SUCCESS) << why;
  int found = 0;
  DIR *d = opendir("/proc/self/task");
  ASSERT_NE(d, nullptr);
  for (struct dirent *t; (t = readdir(d)) != nullptr;) {
    if (t->d_name[0] == '.') continue;
    char path[300], comm[32] = "";
    snprintf(path, sizeof(path), "/proc/self/task/%s/comm", t->d_name);
    FILE *f = fopen(path, "r");
    if (f == nullptr) continue;
    const bool named = fgets(comm, sizeof(comm), f) != nullptr && strcmp(comm, "cgpu-proxy\n") == 0;
    fclose(f);
    if (!named) continue;
    ++found;
    cpu_set_t set;
    ASSERT_EQ(0, sched_getaffinity((pid_t)atoi(t->d_name), sizeof(set), &set));
    EXPECT_EQ(CPU_COUNT(&set), 1) << "thread " << t->d_name;
    EXPECT_TRUE(CPU_ISSET(cpu, &set)) << "thread " << t->d_name << " is not on CPU " << cpu;
  }
  closedir(d);
  EXPECT_EQ(found, 3);
  coll_gpu_proxy_destroy(p);
}

// Rank `rank` of 2 in one process: one thread over `net` (the sockets on loopback), polling 1 ms, sleeping 1 ms.
coll_gpu_proxy_config_t pair_config(int rank, coll_gpu_proxy_net_t net) {
  coll_gpu_proxy_config_t cfg{};
  cfg.rank = rank;
  cfg.nranks = 2;
  cfg.threads = 1;
  cfg.spin_ns = 1000000;
  cfg.sleep_ns = 1000000;
  cfg.net = net;
  cfg.ifname = "lo";
  return cfg;
}

// A sleeping proxy thread is woken by a peer's message, over the sockets and over UCX: a step sent 3 s after
// both proxies last moved (their threads sleeping, each sleep twice the one before from 10 us, up to 30 s)
// reaches the receiver, whose proxy nobody wakes, at once. Slept through, it would arrive when the receiving
// thread's sleep ended: the one that began 2.6 s into the idle time, 2.2 s later.
class ASleepingThread : public ::testing::TestWithParam<coll_gpu_proxy_net_t> {};

TEST_P(ASleepingThread, SeesAPeersLateStep) {
  char why[2][512] = {"", ""};
  coll_gpu_proxy_t *p[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    coll_gpu_proxy_config_t cfg = pair_config(i, GetParam());
    cfg.sleep_ns = 30000000000ull;
    ASSERT_EQ(coll_gpu_proxy_create(&cfg, &p[i], why[i], sizeof(why[i])), COLL_GPU_SUCCESS) << why[i];
  }
  std::vector<uint8_t> addr[2] = {std::vector<uint8_t>(COLL_GPU_PROXY_ADDRESS_BYTES),
                                  std::vector<uint8_t>(COLL_GPU_PROXY_ADDRESS_BYTES)};
  for (int i = 0; i < 2; ++i) coll_gpu_proxy_address(p[i], addr[i].data());
  coll_gpu_status_t st[2];
  std::thread other([&] { st[1] = coll_gpu_proxy_connect(p[1], 0, addr[0].data(), 0, why[1], sizeof(why[1])); });
  st[0] = coll_gpu_proxy_connect(p[0], 1, addr[1].data(), 0, why[0], sizeof(why[0]));
  other.join();
  ASSERT_EQ(st[0], COLL_GPU_SUCCESS) << why[0];
  ASSERT_EQ(st[1], COLL_GPU_SUCCESS) << why[1];
  const size_t slot = 4096;
  const int depth = 2;
  Conn k;  // rank 0's send FIFO and rank 1's receive FIFO
  k.send_buf.assign(depth * slot, 0);
  k.recv_buf.assign(depth * slot, 0);
  coll_gpu_proxy_fifo_t s{COLL_GPU_PROXY_SEND, 1,       0, k.send_buf.data(), slot, depth, k.send_tail(), k.send_head(),
                          k.send_sizes(),      nullptr, 0};
  coll_gpu_proxy_fifo_t r{COLL_GPU_PROXY_RECV, 0,       0, k.recv_buf.data(), slot, depth, k.recv_tail(), k.recv_head(),
                          k.recv_sizes(),      nullptr, 0};
  ASSERT_EQ(coll_gpu_proxy_add(p[0], &s, why[0], sizeof(why[0])), COLL_GPU_SUCCESS) << why[0];
  ASSERT_EQ(coll_gpu_proxy_add(p[1], &r, why[1], sizeof(why[1])), COLL_GPU_SUCCESS) << why[1];
  sleep(3);
  const uint64_t word = fresh_seed();
  memcpy(k.send_buf.data(), &word, sizeof(word));
  k.send_sizes()[0] = sizeof(word);
  const uint64_t t0 = coll_gpu_now_ns();
  store_release(k.send_tail(), 1);
  coll_gpu_proxy_wake(p[0], 0, 1);  // the sender's launch; the receiver launched long ago
  while (load_acquire(k.recv_tail()) < 1 && coll_gpu_now_ns() - t0 < 60000000000ull) usleep(100);
  const double ms = (double)(coll_gpu_now_ns() - t0) / 1e6;
  ASSERT_EQ(load_acquire(k.recv_tail()), 1u) << "the step never arrived";
  uint64_t got = 0;
  memcpy(&got, k.recv_buf.data(), sizeof(got));
  EXPECT_EQ(got, word);
  EXPECT_EQ(k.recv_sizes()[0], sizeof(word));
  EXPECT_LT(ms, 250.0) << "the receiving thread slept on after the step arrived";
  for (int i = 0; i < 2; ++i) coll_gpu_proxy_destroy(p[i]);
}

INSTANTIATE_TEST_SUITE_P(Proxy, ASleepingThread, ::testing::Values(COLL_GPU_PROXY_NET_SOCKET, COLL_GPU_PROXY_NET_UCX),
                         [](const ::testing::TestParamInfo<coll_gpu_proxy_net_t> &i) {
                           return std::string(i.param == COLL_GPU_PROXY_NET_UCX ? "Ucx" : "Sockets");
                         });

// A peer whose proxy moves steps over the other network (UCX here, sockets there, and the other way) is
// refused, saying so, before either network reads the other's address.
TEST(Proxy, RefusesAPeerOfTheOtherNetwork) {
  char why[512] = "";
  coll_gpu_proxy_t *p[2] = {nullptr, nullptr};
  for (int i = 0; i < 2; ++i) {
    const coll_gpu_proxy_config_t cfg = pair_config(i, i == 0 ? COLL_GPU_PROXY_NET_UCX : COLL_GPU_PROXY_NET_SOCKET);
    ASSERT_EQ(coll_gpu_proxy_create(&cfg, &p[i], why, sizeof(why)), COLL_GPU_SUCCESS) << why;
  }
  std::vector<uint8_t> a0(COLL_GPU_PROXY_ADDRESS_BYTES), a1(COLL_GPU_PROXY_ADDRESS_BYTES);
  coll_gpu_proxy_address(p[0], a0.data());
  coll_gpu_proxy_address(p[1], a1.data());
  EXPECT_EQ(coll_gpu_proxy_connect(p[0], 1, a1.data(), 0, why, sizeof(why)), COLL_GPU_BOOTSTRAP_ERROR);
  EXPECT_NE(strstr(why, "rank 1's network proxy moves steps over sockets, this one over UCX"), nullptr) << why;
  EXPECT_EQ(coll_gpu_proxy_connect(p[1], 0, a0.data(), 0, why, sizeof(why)), COLL_GPU_BOOTSTRAP_ERROR);
  EXPECT_NE(strstr(why, "coll_gpu_proxy_net"), nullptr) << why;
  coll_gpu_proxy_destroy(p[0]);
  coll_gpu_proxy_destroy(p[1]);
}

// One process: what is not a peer's address, or not a FIFO, is refused with a reason, and nothing breaks.
TEST(Proxy, RefusesWhatIsNotAnAddressOrAFifo) {
  char why[512] = "";
  coll_gpu_proxy_config_t cfg{};
  cfg.rank = 0;
  cfg.nranks = 3;
  cfg.spin_ns = 1000000;
  cfg.sleep_ns = 1000000;
  coll_gpu_proxy_t *p = nullptr;
  ASSERT_EQ(coll_gpu_proxy_create(&cfg, &p, why, sizeof(why)), COLL_GPU_SUCCESS) << why;
  std::vector<uint8_t> addr(COLL_GPU_PROXY_ADDRESS_BYTES);
  coll_gpu_proxy_address(p, addr.data());

  std::vector<uint8_t> junk(COLL_GPU_PROXY_ADDRESS_BYTES);
  std::mt19937_64 r(fresh_seed());
  for (auto &b : junk) b = (uint8_t)r();
  EXPECT_EQ(coll_gpu_proxy_connect(p, 1, junk.data(), 0, why, sizeof(why)), COLL_GPU_BOOTSTRAP_ERROR);
  EXPECT_NE(strstr(why, "rank 1"), nullptr) << why;
  // rank 0's own address, handed over as rank 1's
  EXPECT_EQ(coll_gpu_proxy_connect(p, 1, addr.data(), 0, why, sizeof(why)), COLL_GPU_BOOTSTRAP_ERROR);
  EXPECT_NE(strstr(why, "rank 0's"), nullptr) << why;
  // rank 0's address relabelled as rank 2's, one byte of UCX's part changed on the way
  std::vector<uint8_t> cut = addr;
  const int32_t two = 2;
  memcpy(&cut[8], &two, sizeof(two));  // the envelope: magic, version, rank, threads, bytes of each, hash, net
  const size_t envelope = (16 + 4 * COLL_GPU_PROXY_MAX_THREADS + 8 + 4 + 7) / 8 * 8;
  cut[envelope] ^= 0x40;  // the first byte past the envelope: UCX's part
  EXPECT_EQ(coll_gpu_proxy_connect(p, 2, cut.data(), 0, why, sizeof(why)), COLL_GPU_BOOTSTRAP_ERROR);
  EXPECT_NE(strstr(why, "damaged"), nullptr) << why;
  // the same, its thread count changed: 0, and more than a proxy has
  for (uint32_t threads : {0u, (uint32_t)COLL_GPU_PROXY_MAX_THREADS + 1}) {
    std::vector<uint8_t> bad = addr;
    memcpy(&bad[8], &two, sizeof(two));
    memcpy(&bad[12], &threads, sizeof(threads));
    EXPECT_EQ(coll_gpu_proxy_connect(p, 2, bad.data(), 0, why, sizeof(why)), COLL_GPU_BOOTSTRAP_ERROR) << threads;
    EXPECT_NE(strstr(why, "damaged"), nullptr) << why;
  }
  EXPECT_EQ(coll_gpu_proxy_connect(p, 0, addr.data(), 0, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "itself";
  EXPECT_EQ(coll_gpu_proxy_connect(p, 3, addr.data(), 0, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "no rank 3";

  std::vector<char> buf(4096);
  uint64_t w[4 + COLL_GPU_PROXY_MAX_DEPTH] = {};
  coll_gpu_proxy_fifo_t f{COLL_GPU_PROXY_SEND, 1, 0, buf.data(), 512, 8, &w[0], &w[1], &w[4], nullptr, 0};
  EXPECT_EQ(coll_gpu_proxy_add(p, &f, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "peer not connected";
  EXPECT_NE(strstr(why, "before connecting"), nullptr) << why;
  f.depth = COLL_GPU_PROXY_MAX_DEPTH + 1;
  EXPECT_EQ(coll_gpu_proxy_add(p, &f, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "too deep";
  f.depth = 8;
  std::vector<uint64_t> ll(8 * coll_gpu_ll_stride(1024) / 8);
  f.ll = (char *)ll.data();
  f.ll_bytes = 1024;  // LL steps larger than a slot
  EXPECT_EQ(coll_gpu_proxy_add(p, &f, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "LL steps above the slot";
  EXPECT_NE(strstr(why, "LL steps of 1024"), nullptr) << why;
  f.ll_bytes = 0;
  EXPECT_EQ(coll_gpu_proxy_add(p, &f, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "LL slots for no bytes";
  f.ll_bytes = 256;
  f.ll += 8;
  EXPECT_EQ(coll_gpu_proxy_add(p, &f, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "LL lines not on 16 bytes";
  int peer = -1;
  EXPECT_EQ(coll_gpu_proxy_failed(p, &peer, why, sizeof(why)), COLL_GPU_SUCCESS) << why;
  coll_gpu_proxy_destroy(p);

  coll_gpu_proxy_t *q = nullptr;
  cfg.threads = COLL_GPU_PROXY_MAX_THREADS + 1;
  EXPECT_EQ(coll_gpu_proxy_create(&cfg, &q, why, sizeof(why)), COLL_GPU_INTERNAL_ERROR) << "too many threads";
  EXPECT_EQ(q, nullptr);
}

}  // namespace
