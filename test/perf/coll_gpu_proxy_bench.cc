/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The network proxy alone (proxy/proxy.h): what it can move between two processes of this machine over UCX,
// without GPUs, and how long one small step takes. A host thread plays the kernel on each side; both ranks
// stream steps to each other on every connection at once, as the two ranks of a ring do, so the rate each
// way is the bus bandwidth a 2-rank allreduce over NET could reach at most. Then a ping-pong on one
// connection gives the one-way time of a step, kernel side -> proxy -> UCX -> proxy -> kernel side, for
// steps of 8 B to 128 KiB; then the same for an 8-byte step that follows 20 ms of nothing (the proxies
// asleep, woken as at a launch), and with the receiver's proxy left asleep (a sender later than its peer).
// Last, where the time of those 8-byte steps went, from the step timestamps (proxy/trace.h, recorded into a
// directory of its own under $TMPDIR or /tmp, removed at the end): from the post to the sending proxy handing
// the step to the network, from there to the receiving proxy publishing it, and from there to the receiving
// side seeing it.
// The proxy's transports come from COLL_GPU_UCX_TLS (as in the component), or -N sockets moves the steps over
// the proxy's own TCP sockets (loopback) instead of UCX; -H connects the two processes as
// peers of two hosts (watched by UCX, so its shared-memory transports are left out).
//
// usage: coll_gpu_proxy_bench [-N ucx|sockets] [-T THREADS] [-c CHANNELS] [-s SLOT_BYTES] [-d DEPTH] [-m MIB] [-t] [-H]
//                             [-S SPIN_US]
//   -T: the proxy's threads (default 1; the engine's coll_gpu_proxy_threads);
//   -c, -s: one configuration (default: a sweep over 1, 2, 4 channels and 128 KiB, 512 KiB slots);
//   -d: FIFO depth (default 8, the engine's); -m: MiB each way per configuration (default 1024);
//   -t: the kernel side copies each step in and out of its slot (default: it only writes a step number);
//   -S: how long the proxy polls after its last movement before it naps, in us (default 1000, the engine's).
// Each step carries its number in its first 8 bytes, checked on arrival: a wrong or lost step is an error. The
// kernel side yields the CPU while it waits (a kernel's waits take none), so that the proxies run where the
// machine has fewer cores than busy threads.
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "common/wait.h"
#include "proxy/proxy.h"
#include "proxy/trace.h"
#include "test/common/fd_io.h"
#include "test/perf/step_trace.h"

namespace {

// Both processes reach this point before either goes on.
bool handshake(int fd) {
  char b = 1;
  return write_all(fd, &b, 1) && read_all(fd, &b, 1);
}

struct Options {
  int threads = 1;
  int channels = 0;  // 0: the sweep
  size_t slot = 0;
  int depth = 8;
  size_t mib = 1024;
  bool touch = false;
  bool two_hosts = false;
  uint64_t spin_us = 1000;
  const char *trace_dir = nullptr;  // where the step timestamps go
  coll_gpu_proxy_net_t net = COLL_GPU_PROXY_NET_UCX;
};

// One connection's two FIFOs at one rank.
struct Conn {
  char *send_buf = nullptr, *recv_buf = nullptr;
  uint64_t words[4 + 2 * COLL_GPU_PROXY_MAX_DEPTH] = {};
  volatile uint64_t *send_tail() { return &words[0]; }
  volatile uint64_t *send_head() { return &words[1]; }
  volatile uint64_t *recv_tail() { return &words[2]; }
  volatile uint64_t *recv_head() { return &words[3]; }
  volatile uint64_t *send_sizes() { return &words[4]; }
  volatile uint64_t *recv_sizes() { return &words[4 + COLL_GPU_PROXY_MAX_DEPTH]; }
  uint64_t sent = 0, received = 0;
};

class Rank {
 public:
  Rank(int rank, int fd, const Options &o) : rank_(rank), fd_(fd), o_(o) {}
  ~Rank() {
    coll_gpu_proxy_destroy(p_);  // first: the proxy reads the FIFOs until then
    for (Conn *k : conns_) {
      free(k->send_buf);
      free(k->recv_buf);
      delete k;
    }
  }
  bool start();
  // Streams `steps` steps each way on `channels` connections of `slot`-byte slots: the seconds it took.
  double stream(int channels, size_t slot, uint64_t steps, int first_id);
  // One-way microseconds of a `bytes`-byte step, the median of `iters` round trips.
  double ping(int iters, int id, size_t bytes);
  // The same for a step after `pause_ns` without any (the proxies asleep): both ranks wake their proxy, as
  // the engine does at each launch, and rank 0 sends one step stamped with the clock, which rank 1 reads on
  // arrival; the median of `iters` (at rank 1; 0 at rank 0).
  double cold(int iters, int id, uint64_t pause_ns, bool receiver_wakes);
  int errors = 0;

 private:
  // A connection's FIFOs, added to the proxy, which keeps them until it is destroyed.
  Conn *add(int id, size_t slot);
  void error(const char *what) {
    if (errors++ == 0) fprintf(stderr, "rank %d: %s\n", rank_, what);
  }
  int rank_, fd_;
  Options o_;
  coll_gpu_proxy_t *p_ = nullptr;
  std::vector<Conn *> conns_;
};

bool Rank::start() {
  char why[512] = "";
  coll_gpu_proxy_config_t cfg{};
  cfg.rank = rank_;
  cfg.nranks = 2;
  cfg.threads = o_.threads;
  cfg.spin_ns = o_.spin_us * 1000;  // 1 ms by default: the engine's settings
  cfg.sleep_ns = 1000000;
  cfg.net = o_.net;
  cfg.ifname = "lo";
  if (coll_gpu_proxy_create(&cfg, &p_, why, sizeof(why)) != COLL_GPU_SUCCESS) {
    error(why);
    return false;
  }
  std::vector<uint8_t> mine(COLL_GPU_PROXY_ADDRESS_BYTES), theirs(COLL_GPU_PROXY_ADDRESS_BYTES);
  coll_gpu_proxy_address(p_, mine.data());
  if (!write_all(fd_, mine.data(), mine.size()) || !read_all(fd_, theirs.data(), theirs.size())) {
    error("address exchange");
    return false;
  }
  if (coll_gpu_proxy_connect(p_, 1 - rank_, theirs.data(), !o_.two_hosts, why, sizeof(why)) != COLL_GPU_SUCCESS) {
    error(why);
    return false;
  }
  return true;
}

Conn *Rank::add(int id, size_t slot) {
  char why[512] = "";
  Conn *k = new Conn();
  conns_.push_back(k);
  const size_t bytes = (size_t)o_.depth * slot;
  k->send_buf = (char *)aligned_alloc(4096, bytes);
  k->recv_buf = (char *)aligned_alloc(4096, bytes);
  if (k->send_buf == nullptr || k->recv_buf == nullptr) {
    error("out of host memory");
    return nullptr;
  }
  memset(k->send_buf, 0, bytes);
  memset(k->recv_buf, 0, bytes);
  const coll_gpu_proxy_fifo_t s{
      COLL_GPU_PROXY_SEND, 1 - rank_, id, k->send_buf, slot, o_.depth, k->send_tail(), k->send_head(),
      k->send_sizes(),     nullptr,   0};
  const coll_gpu_proxy_fifo_t r{
      COLL_GPU_PROXY_RECV, 1 - rank_, id, k->recv_buf, slot, o_.depth, k->recv_tail(), k->recv_head(),
      k->recv_sizes(),     nullptr,   0};
  if (coll_gpu_proxy_add(p_, &s, why, sizeof(why)) != COLL_GPU_SUCCESS ||
      coll_gpu_proxy_add(p_, &r, why, sizeof(why)) != COLL_GPU_SUCCESS) {
    error(why);
    return nullptr;
  }
  return k;
}

double Rank::stream(int channels, size_t slot, uint64_t steps, int first_id) {
  std::vector<Conn *> conns(channels);
  for (int c = 0; c < channels; ++c)
    if ((conns[c] = add(first_id + c, slot)) == nullptr) return 0;
  std::vector<char> src(o_.touch ? slot : 0), dst(o_.touch ? slot : 0);
  if (!handshake(fd_)) error("handshake");
  const uint64_t t0 = coll_gpu_now_ns(), deadline = t0 + 120000000000ull;
  coll_gpu_proxy_wake(p_, first_id, channels);
  for (bool done = errors > 0; !done;) {
    done = true;
    bool moved = false;
    for (int c = 0; c < channels; ++c) {
      Conn &k = *conns[c];
      if (k.sent < steps && k.sent < load_acquire(k.send_head()) + (uint64_t)o_.depth) {
        const int s = (int)(k.sent % (uint64_t)o_.depth);
        char *at = k.send_buf + (size_t)s * slot;
        if (o_.touch) memcpy(at, src.data(), slot);
        memcpy(at, &k.sent, sizeof(k.sent));
        k.send_sizes()[s] = slot;
        store_release(k.send_tail(), ++k.sent);
        moved = true;
      }
      if (k.received < load_acquire(k.recv_tail())) {
        const int s = (int)(k.received % (uint64_t)o_.depth);
        const char *at = k.recv_buf + (size_t)s * slot;
        uint64_t n;
        memcpy(&n, at, sizeof(n));
        if (n != k.received || k.recv_sizes()[s] != slot) error("a step arrived wrong");
        if (o_.touch) memcpy(dst.data(), at, slot);
        store_release(k.recv_head(), ++k.received);
        moved = true;
      }
      if (k.received < steps || load_acquire(k.send_head()) < steps) done = false;
    }
    if (!moved) sched_yield();  // a kernel's waits take no CPU from the proxy
    int peer = -1;
    char why[512];
    if (coll_gpu_proxy_failed(p_, &peer, why, sizeof(why)) != COLL_GPU_SUCCESS) {
      error(why);
      break;
    }
    if (coll_gpu_now_ns() > deadline) {
      error("not done after 120 s");
      break;
    }
    if (errors > 0) break;
  }
  return (double)(coll_gpu_now_ns() - t0) / 1e9;
}

double Rank::ping(int iters, int id, size_t bytes) {
  const size_t slot = std::max<size_t>(bytes, 4096);
  Conn *k = add(id, slot);
  if (k == nullptr) return 0;
  std::vector<double> times;
  if (!handshake(fd_)) error("handshake");
  const uint64_t deadline = coll_gpu_now_ns() + 60000000000ull;
  for (int i = 0; i < iters && errors == 0; ++i) {
    const uint64_t t0 = coll_gpu_now_ns();
    for (int leg = 0; leg < 2; ++leg) {
      if ((leg == 0) == (rank_ == 0)) {  // rank 0 sends first, rank 1 answers
        const int s = (int)(k->sent % (uint64_t)o_.depth);
        memcpy(k->send_buf + (size_t)s * slot, &k->sent, sizeof(uint64_t));
        k->send_sizes()[s] = bytes;
        coll_gpu_trace('P', rank_, 1 - rank_, id, k->sent);
        store_release(k->send_tail(), ++k->sent);
        coll_gpu_proxy_wake(p_, id, 1);  // as the engine does at each launch
      } else {
        while (load_acquire(k->recv_tail()) <= k->received && coll_gpu_now_ns() < deadline) sched_yield();
        const int s = (int)(k->received % (uint64_t)o_.depth);
        uint64_t n;
        memcpy(&n, k->recv_buf + (size_t)s * slot, sizeof(n));
        coll_gpu_trace('K', rank_, 1 - rank_, id, k->received);
        if (n != k->received || k->recv_sizes()[s] != bytes) error("a ping step arrived wrong");
        store_release(k->recv_head(), ++k->received);
      }
    }
    times.push_back((double)(coll_gpu_now_ns() - t0) / 2e3);
  }
  if (coll_gpu_now_ns() >= deadline) error("ping-pong not done after 60 s");
  if (times.empty()) return 0;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// An 8-byte step after pause_ns of nothing: both proxies woken first (as at a launch on both ranks), or the
// sender's only (receiver_wakes false: a receiver that launched long before, its proxy asleep).
double Rank::cold(int iters, int id, uint64_t pause_ns, bool receiver_wakes) {
  Conn *k = add(id, 4096);
  if (k == nullptr) return 0;
  std::vector<double> times;
  const uint64_t deadline = coll_gpu_now_ns() + 60000000000ull;
  for (int i = 0; i < iters && errors == 0; ++i) {
    const struct timespec pause = {(time_t)(pause_ns / 1000000000ull), (long)(pause_ns % 1000000000ull)};
    nanosleep(&pause, nullptr);
    if (!handshake(fd_)) error("handshake");
    if (rank_ == 0 || receiver_wakes) coll_gpu_proxy_wake(p_, id, 1);
    if (rank_ == 0) {
      const int s = (int)(k->sent % (uint64_t)o_.depth);
      const uint64_t t0 = coll_gpu_now_ns();
      coll_gpu_trace('P', rank_, 1, id, k->sent);
      memcpy(k->send_buf + (size_t)s * 4096, &t0, sizeof(t0));
      k->send_sizes()[s] = sizeof(t0);
      store_release(k->send_tail(), ++k->sent);
    } else {
      while (load_acquire(k->recv_tail()) <= k->received && coll_gpu_now_ns() < deadline) sched_yield();
      uint64_t t0;
      memcpy(&t0, k->recv_buf + (size_t)(k->received % (uint64_t)o_.depth) * 4096, sizeof(t0));
      times.push_back((double)(coll_gpu_now_ns() - t0) / 1e3);
      coll_gpu_trace('K', rank_, 0, id, k->received);
      store_release(k->recv_head(), ++k->received);
    }
  }
  if (coll_gpu_now_ns() >= deadline) error("cold steps not done after 60 s");
  if (times.empty()) return 0;
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// "median (10th-90th percentile)"
std::string spread_us(const step_trace::Spread &s) {
  char b[64];
  snprintf(b, sizeof(b), "%.1f (%.1f-%.1f)", s.median_us, s.p10_us, s.p90_us);
  return b;
}

// Where the 8-byte steps' time went, from both ranks' traces in dir.
void print_parts(const char *dir, int ping_id, const int cold_ids[2]) {
  std::vector<std::string> paths;
  size_t bad = 0;
  const std::vector<step_trace::Event> events = step_trace::read_dir(dir, &paths, &bad);
  printf(
      "# an 8-byte step's way, us, median (10th-90th percentile): posted -> to the network | -> at the "
      "receiving proxy | -> seen | the whole way | its send completed\n");
  const struct {
    const char *what;
    int id;
  } rows[] = {{"ping-pong", ping_id},
              {"20 ms after the last, both proxies woken", cold_ids[0]},
              {"20 ms after the last, the receiver's asleep", cold_ids[1]}};
  for (const auto &row : rows) {
    const step_trace::Parts p = step_trace::parts(events, row.id);
    printf("#   %s: %s | %s | %s | %s | %s", row.what, spread_us(p.to_network).c_str(), spread_us(p.one_way).c_str(),
           spread_us(p.to_seen).c_str(), spread_us(p.whole).c_str(), spread_us(p.sent).c_str());
    if (p.unmatched > 0 || bad > 0) printf(" (%zu steps without all their timestamps)", p.unmatched + bad);
    printf("\n");
  }
}

int run(int rank, int fd, const Options &o) {
  Rank r(rank, fd, o);
  if (!r.start()) return 1;
  std::vector<int> channels = {1, 2, 4};
  std::vector<size_t> slots = {128 << 10, 512 << 10};
  if (o.channels > 0) channels = {o.channels};
  if (o.slot > 0) slots = {o.slot};
  if (rank == 0) {
    const char *tls = getenv("COLL_GPU_UCX_TLS");
    printf(
        "# coll_gpu_proxy_bench: 2 processes, %s%s, as %s, %d proxy threads, depth %d, kernel "
        "side %s\n",
        o.net == COLL_GPU_PROXY_NET_SOCKET ? "the proxy's sockets" : "UCX, COLL_GPU_UCX_TLS=",
        o.net == COLL_GPU_PROXY_NET_SOCKET ? ""
        : tls != nullptr                   ? tls
                                           : "(UCX's choice)",
        o.two_hosts ? "two hosts" : "one host", o.threads, o.depth,
        o.touch ? "copies each step" : "writes a step number");
    printf("# %8s %11s %12s %9s %14s\n", "channels", "slot_bytes", "MiB_each_way", "seconds", "GB/s_each_way");
  }
  int id = 0;
  for (size_t slot : slots)
    for (int c : channels) {
      const uint64_t steps = std::max<uint64_t>(1, ((uint64_t)o.mib << 20) / slot / (uint64_t)c);
      r.stream(c, slot, 64, id);  // warm-up: UCX's connections and the pages of the slots
      id += c;
      const double s = r.stream(c, slot, steps, id);
      id += c;
      double peer_s = 0;
      if (!write_all(fd, &s, sizeof(s)) || !read_all(fd, &peer_s, sizeof(peer_s))) return 1;
      const double t = std::max(s, peer_s);
      const double bytes = (double)steps * (double)slot * c;
      if (rank == 0 && r.errors == 0)
        printf("  %8d %11zu %12.0f %9.3f %14.2f\n", c, slot, bytes / (1 << 20), t, bytes / t / 1e9);
      fflush(stdout);
      if (r.errors > 0) return 1;
    }
  // the steps' timestamps from here on: the streams' would fill the trace
  const bool traced = o.trace_dir != nullptr && coll_gpu_trace_start(o.trace_dir) == COLL_GPU_SUCCESS;
  const int ping_id = id;  // the 8-byte ping-pong's connection
  int cold_ids[2] = {0, 0};
  if (rank == 0) printf("# one-way time of a step (median of 1000 round trips), bytes: us\n#");
  for (size_t bytes = 8; bytes <= (128 << 10) && r.errors == 0; bytes = bytes == 8 ? 1024 : bytes * 2) {
    const double us = r.ping(1000, id++, bytes);
    if (rank == 0 && r.errors == 0) printf(" %zu: %.2f", bytes, us);
    fflush(stdout);
  }
  if (rank == 0) printf("\n");
  for (const bool both : {true, false}) {
    cold_ids[both ? 0 : 1] = id;
    double cold = r.cold(50, id++, 20000000, both);  // 20 ms apart: the proxies have gone to sleep
    if (rank == 1 && !write_all(fd, &cold, sizeof(cold))) return 1;
    if (rank == 0 && !read_all(fd, &cold, sizeof(cold))) return 1;
    if (rank == 0 && r.errors == 0)
      printf("# the same 20 ms after the last step, %s (median of 50): %.2f us\n",
             both ? "both proxies woken as at a launch" : "the sender's proxy woken, the receiver's asleep", cold);
  }
  // both traces written before rank 0 reads them
  const bool written = traced && coll_gpu_trace_write() == COLL_GPU_SUCCESS;
  if (!handshake(fd)) return 1;
  if (rank == 0 && written && r.errors == 0) print_parts(o.trace_dir, ping_id, cold_ids);
  return r.errors > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
  Options o;
  for (int c; (c = getopt(argc, argv, "N:T:c:s:d:m:tHS:")) != -1;) {
    switch (c) {
      case 'S':
        o.spin_us = strtoull(optarg, nullptr, 0);
        break;
      case 'T':
        o.threads = atoi(optarg);
        break;
      case 'c':
        o.channels = atoi(optarg);
        break;
      case 's':
        o.slot = (size_t)strtoull(optarg, nullptr, 0);
        break;
      case 'd':
        o.depth = atoi(optarg);
        break;
      case 'm':
        o.mib = (size_t)strtoull(optarg, nullptr, 0);
        break;
      case 't':
        o.touch = true;
        break;
      case 'H':
        o.two_hosts = true;
        break;
      case 'N':
        o.net = strcmp(optarg, "sockets") == 0 ? COLL_GPU_PROXY_NET_SOCKET : COLL_GPU_PROXY_NET_UCX;
        if (o.net == COLL_GPU_PROXY_NET_UCX && strcmp(optarg, "ucx") != 0) o.threads = -1;  // refused below
        break;
      default:
        fprintf(stderr,
                "usage: %s [-N ucx|sockets] [-T THREADS] [-c CHANNELS] [-s SLOT_BYTES] [-d DEPTH] [-m MIB] [-t] [-H] "
                "[-S SPIN_US]\n",
                argv[0]);
        return 2;
    }
  }
  if (o.threads < 1 || o.threads > COLL_GPU_PROXY_MAX_THREADS || o.channels < 0 || o.channels > 64 ||
      (o.slot != 0 && o.slot < 64) || o.depth < 1 || o.depth > COLL_GPU_PROXY_MAX_DEPTH || o.mib < 1) {
    fprintf(stderr, "%s: -T 1..%d, -c 1..64, -s at least 64, -d 1..%d, -m at least 1\n", argv[0],
            COLL_GPU_PROXY_MAX_THREADS, COLL_GPU_PROXY_MAX_DEPTH);
    return 2;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
    perror("socketpair");
    return 1;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX];
  snprintf(dir, sizeof(dir), "%s/coll_gpu_proxy_bench.XXXXXX", tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp");
  o.trace_dir = mkdtemp(dir);  // NULL: no parts printed
  if (o.trace_dir == nullptr) perror("coll_gpu_proxy_bench: no directory for the step timestamps (mkdtemp)");
  fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    close(sv[0]);
    _exit(run(1, sv[1], o));
  }
  close(sv[1]);
  const int rc = run(0, sv[0], o);
  close(sv[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  const bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (o.trace_dir != nullptr) {
    std::vector<std::string> paths;
    size_t bad = 0;
    (void)step_trace::read_dir(o.trace_dir, &paths, &bad);
    for (const std::string &p : paths) unlink(p.c_str());
    rmdir(o.trace_dir);
  }
  if (!child_ok) fprintf(stderr, "rank 1 failed (status %d)\n", status);
  return rc != 0 || !child_ok ? 1 : 0;
}
