/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The network proxy's threads and their step state machine (proxy/proxy.h).
 *
 * Each FIFO moves through three counters, NCCL's posted -> transmitted -> done:
 *   send:    tail (the kernel posted) >= posted (handed to UCX) >= done (sent; published as head);
 *   receive: posted (receives given to UCX, at most head + depth) >= done (arrived; published as tail)
 *            >= head (the kernel consumed).
 * A step's message completes out of order at most; the counters advance in order, so head and tail
 * only ever grow one step after another.
 *
 * Each thread (a Worker) owns a UCX context and worker and the FIFOs of its connections. Its loop: run a
 * command the API posted (connect, add), progress UCX, move every FIFO. While something moves, or spin_ns
 * after it last did or after a wake, it polls, yielding the CPU after each poll that found nothing (to a
 * rank or another proxy thread, where busy threads outnumber CPUs); then it sleeps in steps that grow from
 * 10 us to sleep_ns, so an idle communicator costs about nothing. A wake, a command, or a peer's message
 * (the sockets' epoll descriptor, or UCX's worker armed for its events, polls readable) ends a sleep at once;
 * so a peer's late step is seen as it arrives. What the threads share is the first failure, which stops them
 * all.
 */
#include "proxy/proxy.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include "common/ll.h"
#include "common/wait.h"
#include "proxy/net.h"
#include "proxy/trace.h"

namespace coll_gpu {
namespace {

// The tag of step `step` of connection `id` from rank `sender`: 20 bits of sender, 12 of connection, 32 of
// step (a receive is posted at most COLL_GPU_PROXY_MAX_DEPTH steps ahead, far below the wrap).
constexpr int kTagSenderBits = 20;
uint64_t step_tag(int sender, int id, uint64_t step) {
  return (uint64_t)sender << 44 | (uint64_t)id << 32 | (step & 0xffffffffull);
}
// The tag of the credits the receiving end `receiver` of connection `id` sends back: the connection ids'
// upper half (COLL_GPU_PROXY_MAX_CONNS of them below it), step 0.
constexpr int kCreditId = COLL_GPU_PROXY_MAX_CONNS;
uint64_t credit_tag(int receiver, int id) { return step_tag(receiver, kCreditId | id, 0); }
static_assert(2 * COLL_GPU_PROXY_MAX_CONNS <= 4096, "connection and credit ids fit the tag's 12 bits");

// The envelope of an address: it names the rank that published it and how many threads it has, and a hash
// of UCX's bytes (the threads' worker addresses, one after another) catches an address cut or mixed up on
// its way through the bootstrap before UCX parses it.
constexpr uint32_t kAddressMagic = 0x43475058;  // "CGPX"
constexpr uint32_t kAddressVersion = 4;
struct Envelope {
  uint32_t magic, version;
  int32_t rank;
  uint32_t threads;
  uint32_t bytes[COLL_GPU_PROXY_MAX_THREADS];
  uint64_t hash;
  uint32_t net;  // coll_gpu_proxy_net_t: what the threads' addresses are
};
constexpr size_t kAddressMax = COLL_GPU_PROXY_ADDRESS_BYTES - sizeof(Envelope);

uint64_t fnv1a(const void *data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ ((const uint8_t *)data)[i]) * 1099511628211ull;
  return h;
}

uint64_t load_acquire(volatile uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store_release(volatile uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

constexpr uint64_t kFirstSleepNs = 10000;     // the first sleep of an idle thread; each next one doubles
constexpr size_t kSyncBytes = 64 << 10;       // over UCX, steps this large go synchronously (see Fifo)
constexpr char kThreadName[] = "cgpu-proxy";  // what top -H and /proc/PID/task/TID/comm show (15 bytes at most)

// A FIFO as its thread moves it. A slow receiver holds the sender back end to end, two ways:
// - over UCX a step of kSyncBytes or more goes as a synchronous send, which completes (and frees the
//   sender's slot: head) once the receiving proxy has matched it into a free slot; UCX moves such a step by
//   rendezvous, which waits for the receiver anyway;
// - every other step (over the sockets every step) goes eagerly (it completes once written: UCX or the
//   socket holds it), within the credits of the receiving end (NCCL's clear-to-send): that end grants the
//   steps it has free slots and posted receives for (head + depth, counted from the start) in an 8-byte
//   message each time half a FIFO's worth has freed up.
// Measured with coll_gpu_proxy_bench on a 16-core GPU machine: an 8-byte step took 11-20 us one way over
// tcp as a synchronous send (UCX acknowledges each) and 5.7-9 us eagerly within credits (1.6 and 1.1-1.6 us
// over shared memory); with credits for large steps too, 8 connections moved 3.5-3.9 GB/s each way over
// tcp instead of the 4.8-5.0 of synchronous sends (256 KiB and 512 KiB steps, means of 4 runs): a credit
// comes back only once half the receiver's FIFO is free, so fewer steps are under way. As it is: 4.7 GB/s
// and 6.1-6.6 us. Over the sockets the other way round: large steps within credits took bcast of 1-64 MiB
// across 2 hosts x 2 H100 0.76-0.93x the time of synchronous ones (a handshake each), allgather 0.87-1.07x
// (one run each, docs/benchmarks.md).
struct Fifo {
  coll_gpu_proxy_fifo_t f;
  uint64_t posted, done;
  NetOp ops[COLL_GPU_PROXY_MAX_DEPTH];  // by slot
  uint64_t credit;                      // send: steps below it may go; receive: the last credit granted
  uint64_t credit_word;                 // the credit in flight (UCX reads or writes it: the Fifo never moves)
  NetOp credit_op;                      // send: the credit receive posted; receive: the credit send
  void *memh;                           // the slots, registered with the thread's UCX context (or nullptr)
  char *bounce;                         // send side with LL slots: each slot's LL step's data, as it goes (depth
                                        // x ll_bytes; nullptr without LL)
  size_t ll_taken;                      // send side: the lines of the LL step `posted` already in its bounce
};

// Line i (0: the header) of LL slot `slot` of f, as its two 8-byte words (common/ll.h).
volatile uint64_t *ll_line(const coll_gpu_proxy_fifo_t &f, int slot, size_t i) {
  return (volatile uint64_t *)(f.ll + (size_t)slot * coll_gpu_ll_stride(f.ll_bytes) + i * COLL_GPU_LL_LINE);
}
// The data of one 8-byte word of a line, where it carries `flag`.
bool ll_word(uint64_t w, uint32_t flag, uint32_t *data) {
  *data = (uint32_t)w;
  return (uint32_t)(w >> 32) == flag;
}

// Send side: whether the kernel wrote step `step` of f as LL lines (its header line carries the step's flag),
// and its bytes.
bool ll_posted(const coll_gpu_proxy_fifo_t &f, int slot, uint64_t step, size_t *bytes) {
  if (f.ll == nullptr) return false;
  volatile uint64_t *h = ll_line(f, slot, 0);
  const uint32_t flag = coll_gpu_ll_flag(step);
  uint32_t lo, hi;
  if (!ll_word(h[0], flag, &lo) || !ll_word(h[1], flag, &hi)) return false;
  *bytes = (size_t)lo | (size_t)hi << 32;
  return true;
}

// Send side: the data of LL step `step` into `to`, its lines in the order they lie, from line *taken on (the
// lines before it are there already: a step's lines do not change until its slot is free again); false while
// some line is still without its flag, *taken then the first of those.
bool ll_unpack(const coll_gpu_proxy_fifo_t &f, int slot, uint64_t step, size_t bytes, char *to, size_t *taken) {
  const uint32_t flag = coll_gpu_ll_flag(step);
  const size_t packs = coll_gpu_ll_packs(bytes), lines = packs > 0 ? coll_gpu_ll_line(packs - 1, 1) + 1 : 0;
  for (; *taken < lines; ++*taken) {
    const size_t i = *taken, group = i / (2 * COLL_GPU_LL_GROUP),
                 half = i % (2 * COLL_GPU_LL_GROUP) / COLL_GPU_LL_GROUP;
    const size_t u = group * COLL_GPU_LL_GROUP + i % COLL_GPU_LL_GROUP;  // line i is pack u's half
    if (u >= packs) continue;                                            // past the last pack of a partial group
    volatile uint64_t *l = ll_line(f, slot, 1 + i);
    uint32_t d[2];
    if (!ll_word(l[0], flag, &d[0]) || !ll_word(l[1], flag, &d[1])) return false;
    const size_t at = u * 16 + half * COLL_GPU_LL_LINE_DATA;
    if (at < bytes) memcpy(to + at, d, bytes - at < sizeof(d) ? bytes - at : sizeof(d));
  }
  return true;
}

// Receive side: step `step` of `bytes` that arrived in slot `slot` of f, as LL lines in its LL slot too.
void ll_pack(const coll_gpu_proxy_fifo_t &f, int slot, uint64_t step, size_t bytes) {
  const uint64_t flag = (uint64_t)coll_gpu_ll_flag(step) << 32;
  const char *from = f.buff + (size_t)slot * f.slot_bytes;
  for (size_t u = 0; u < coll_gpu_ll_packs(bytes); ++u)
    for (int half = 0; half < 2; ++half) {
      uint32_t d[2] = {0, 0};
      const size_t at = u * 16 + (size_t)half * COLL_GPU_LL_LINE_DATA;
      if (at < bytes) memcpy(d, from + at, bytes - at < sizeof(d) ? bytes - at : sizeof(d));
      volatile uint64_t *l = ll_line(f, slot, 1 + coll_gpu_ll_line(u, half));
      l[0] = flag | d[0];  // each word whole: a reader sees its flag with its data or neither
      l[1] = flag | d[1];
    }
}

enum Command { kNone, kConnect, kAdd };

}  // namespace

// One progress thread: a UCX worker of its own and the FIFOs of the connections that belong to it.
struct Worker {
  coll_gpu_proxy *proxy = nullptr;
  int index = 0;
  ProxyNet net;
  pthread_t thread;
  bool started = false;
  pthread_mutex_t mu;
  int wake_fd = -1;        // an eventfd the thread sleeps on (with its net's descriptor): written to end a sleep
  pthread_cond_t done_cv;  // callers wait on it for their command (and the proxy for the set-up)

  // a command for the thread, under mu
  Command cmd = kNone;
  int cmd_peer = 0;
  const void *cmd_addr = nullptr;
  bool cmd_same_host = false;
  const coll_gpu_proxy_fifo_t *cmd_fifo = nullptr;
  coll_gpu_status_t cmd_status = COLL_GPU_SUCCESS;
  char *cmd_why = nullptr;
  size_t cmd_len = 0;
  bool ready = false;  // the set-up has finished (init_status says how)
  coll_gpu_status_t init_status = COLL_GPU_SUCCESS;
  char init_why[256] = "";

  std::atomic<bool> cmd_pending{false}, stop{false}, woken{false}, sleeping{false};

  Fifo **fifos = nullptr;  // each its own allocation: UCX holds pointers into it
  int nfifos = 0, cap = 0;
  // steps handed to the network (those of them the kernel wrote as LL lines), steps arrived (those of them
  // written as LL lines too): told at teardown
  uint64_t sent = 0, sent_ll = 0, arrived = 0, arrived_ll = 0;

  Worker();
  ~Worker();
  coll_gpu_status_t start(char *why, size_t len);
  void shutdown();
  void run();
  void run_command();
  coll_gpu_status_t add(const coll_gpu_proxy_fifo_t *f, char *why, size_t len);
  bool move_send(Fifo *q);
  bool move_recv(Fifo *q);
  bool complete(Fifo *q, volatile uint64_t *counter);
  bool take_credit(Fifo *q);
  bool grant_credit(Fifo *q);
  void failed_op(Fifo *q, const char *what, uint64_t step);
  void sleep(uint64_t ns);
  void wake();
  void rouse();
  void teardown();
  coll_gpu_status_t post(Command c, char *why, size_t len);
};

}  // namespace coll_gpu

using coll_gpu::Envelope;
using coll_gpu::Fifo;
using coll_gpu::load_acquire;
using coll_gpu::NetOp;
using coll_gpu::store_release;
using coll_gpu::Worker;

struct coll_gpu_proxy {
  coll_gpu_proxy_config_t cfg;
  int *cpus = nullptr;
  Worker workers[COLL_GPU_PROXY_MAX_THREADS];
  int nworkers = 0;
  // per peer: the threads its connections spread over (the fewer of the two ranks'), 0 until connected
  int *peer_threads = nullptr;
  // per connection id: the threads that have a FIFO of it, a bit each (set by add, read by wake)
  std::atomic<uint16_t> owners[COLL_GPU_PROXY_MAX_CONNS] = {};
  static_assert(COLL_GPU_PROXY_MAX_THREADS <= 16, "a thread's bit in 16 bits");
  // the first failure of any thread: claimed once, status (COLL_GPU_SUCCESS while none) published after
  // peer and why
  std::atomic<bool> fail_claimed{false};
  std::atomic<int> failed{COLL_GPU_SUCCESS};
  int failed_peer = -1;
  char failed_why[256] = "";
  uint8_t address[COLL_GPU_PROXY_ADDRESS_BYTES] = {};
  char ifname[256] = "";

  void log(int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
  void fail(coll_gpu_status_t s, int peer, const char *why);
  bool has_failed() const { return failed.load(std::memory_order_relaxed) != COLL_GPU_SUCCESS; }
  int build_address();
};

void coll_gpu_proxy::log(int level, const char *fmt, ...) {
  if (cfg.log == nullptr) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  cfg.log(level, COLL_GPU_LOG_PROXY, "%s", msg);
}

void coll_gpu_proxy::fail(coll_gpu_status_t s, int peer, const char *why) {
  if (fail_claimed.exchange(true)) return;  // the first failure of any thread is the one told
  failed_peer = peer;
  snprintf(failed_why, sizeof(failed_why), "%s", why);
  failed.store(s, std::memory_order_release);
  log(COLL_GPU_LVL_WARN, "proxy of rank %d: %s", cfg.rank, why);
}

// The envelope and the threads' UCX addresses one after another; a thread whose address does not fit
// is stopped (nworkers shrinks to the threads that fit, unless none does). Returns the threads that fit.
int coll_gpu_proxy::build_address() {
  Envelope e{};
  e.magic = coll_gpu::kAddressMagic;
  e.version = coll_gpu::kAddressVersion;
  e.rank = cfg.rank;
  e.net = (uint32_t)cfg.net;
  size_t at = sizeof(e);
  int fit = 0;
  while (fit < nworkers && at + workers[fit].net.address_bytes() <= COLL_GPU_PROXY_ADDRESS_BYTES) {
    e.bytes[fit] = (uint32_t)workers[fit].net.address_bytes();
    memcpy(address + at, workers[fit].net.address(), e.bytes[fit]);
    at += e.bytes[fit];
    ++fit;
  }
  if (fit < nworkers && fit > 0) {
    log(COLL_GPU_LVL_WARN,
        "proxy of rank %d: %d of %d threads: their UCX addresses fill the %d bytes a proxy publishes (fewer "
        "transports, COLL_GPU_UCX_TLS, or fewer threads, coll_gpu_proxy_threads, avoid this)",
        cfg.rank, fit, nworkers, COLL_GPU_PROXY_ADDRESS_BYTES);
    for (int w = fit; w < nworkers; ++w) workers[w].shutdown();
    nworkers = fit;
  }
  e.threads = (uint32_t)fit;
  e.hash = coll_gpu::fnv1a(address + sizeof(e), at - sizeof(e));
  memcpy(address, &e, sizeof(e));
  return fit;
}

namespace coll_gpu {

Worker::Worker() {
  pthread_mutex_init(&mu, nullptr);
  pthread_cond_init(&done_cv, nullptr);
}

Worker::~Worker() {
  shutdown();
  pthread_cond_destroy(&done_cv);
  pthread_mutex_destroy(&mu);
  if (wake_fd >= 0) ::close(wake_fd);
  for (int i = 0; i < nfifos; ++i) {
    free(fifos[i]->bounce);
    free(fifos[i]);
  }
  free((void *)fifos);
}

// Stops the thread, which tears its UCX down (again: nothing).
void Worker::shutdown() {
  if (started) {
    stop.store(true, std::memory_order_release);
    rouse();
    pthread_join(thread, nullptr);
    started = false;
  }
  net.close();
}

// Starts the thread and waits for its UCX set-up.
coll_gpu_status_t Worker::start(char *why, size_t len) {
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    coll_gpu_say(why, len, "cannot create network proxy thread %d's wake-up descriptor (eventfd): %s", index,
                 strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  const int rc = pthread_create(
      &thread, nullptr,
      [](void *arg) -> void * {
        ((Worker *)arg)->run();
        return nullptr;
      },
      this);
  if (rc != 0) {
    coll_gpu_say(why, len, "cannot start network proxy thread %d: %s", index, strerror(rc));
    return COLL_GPU_SYSTEM_ERROR;
  }
  started = true;
  pthread_mutex_lock(&mu);
  while (!ready) pthread_cond_wait(&done_cv, &mu);
  pthread_mutex_unlock(&mu);
  if (init_status != COLL_GPU_SUCCESS) coll_gpu_say(why, len, "%s", init_why);
  return init_status;
}

coll_gpu_status_t Worker::add(const coll_gpu_proxy_fifo_t *f, char *why, size_t len) {
  const bool send = f->dir == COLL_GPU_PROXY_SEND;
  if (!net.connected(f->peer)) {
    coll_gpu_say(why, len, "proxy FIFO %s rank %d on thread %d, which is not connected to it", send ? "to" : "from",
                 f->peer, index);
    return COLL_GPU_INTERNAL_ERROR;
  }
  for (int i = 0; i < nfifos; ++i)
    if (fifos[i]->f.dir == f->dir && fifos[i]->f.peer == f->peer && fifos[i]->f.id == f->id) {
      coll_gpu_say(why, len, "proxy connection %d %s rank %d added twice", f->id, send ? "to" : "from", f->peer);
      return COLL_GPU_INTERNAL_ERROR;
    }
  if (nfifos == cap) {
    const int n = cap > 0 ? 2 * cap : 16;
    Fifo **grown = (Fifo **)realloc((void *)fifos, (size_t)n * sizeof(Fifo *));
    if (grown == nullptr) {
      coll_gpu_say(why, len, "out of host memory for %d proxy FIFOs", n);
      return COLL_GPU_SYSTEM_ERROR;
    }
    fifos = grown;
    cap = n;
  }
  void *m = calloc(1, sizeof(Fifo));
  if (m == nullptr) {
    coll_gpu_say(why, len, "out of host memory for a proxy FIFO");
    return COLL_GPU_SYSTEM_ERROR;
  }
  Fifo *q = new (m) Fifo();
  if (send && f->ll != nullptr && (q->bounce = (char *)malloc((size_t)f->depth * f->ll_bytes)) == nullptr) {
    free(m);
    coll_gpu_say(why, len, "out of host memory for a proxy FIFO's LL steps");
    return COLL_GPU_SYSTEM_ERROR;
  }
  fifos[nfifos++] = q;
  q->f = *f;
  // steps already counted (none on a new connection) stay counted: the proxy starts where the kernel is
  q->posted = q->done = send ? load_acquire(f->head) : load_acquire(f->tail);
  // a FIFO starts with every slot free at the other end: the first credits need no message
  q->credit = q->posted + (uint64_t)f->depth;
  if (send) net.recv(credit_tag(f->peer, f->id), &q->credit_word, sizeof(q->credit_word), nullptr, &q->credit_op);
  q->memh = net.map(f->buff, (size_t)f->depth * f->slot_bytes);
  if (q->memh == nullptr)
    proxy->log(COLL_GPU_LVL_TRACE, "proxy of rank %d, thread %d: connection %d %s rank %d not registered with UCX",
               proxy->cfg.rank, index, f->id, send ? "to" : "from", f->peer);
  return COLL_GPU_SUCCESS;
}

void Worker::failed_op(Fifo *q, const char *what, uint64_t step) {
  char why[200];
  snprintf(why, sizeof(why), "%s %llu of connection %d %s rank %d failed: %s", what, (unsigned long long)step, q->f.id,
           q->f.dir == COLL_GPU_PROXY_SEND ? "to" : "from", q->f.peer, net.last_error());
  proxy->fail(COLL_GPU_PEER_GONE, q->f.peer, why);
}

// Publishes the steps whose messages have completed, in order, through `counter` (send: head; receive: tail,
// each step's size first). Whether any was.
bool Worker::complete(Fifo *q, volatile uint64_t *counter) {
  bool moved = false;
  while (q->done < q->posted) {
    const int slot = (int)(q->done % (uint64_t)q->f.depth);
    NetOp *op = &q->ops[slot];
    net.test(op);
    if (op->state == kOpPending) break;
    if (op->state == kOpFailed) {
      failed_op(q, "step", q->done);
      break;
    }
    op->state = kOpIdle;
    coll_gpu_trace(q->f.dir == COLL_GPU_PROXY_RECV ? 'R' : 'H', proxy->cfg.rank, q->f.peer, q->f.id, q->done);
    if (q->f.dir == COLL_GPU_PROXY_RECV) ++arrived;
    if (q->f.dir == COLL_GPU_PROXY_RECV && q->f.ll != nullptr && op->bytes <= q->f.ll_bytes) {
      ll_pack(q->f, slot, q->done, op->bytes);
      ++arrived_ll;
    }
    if (q->f.dir == COLL_GPU_PROXY_RECV && q->f.sizes != nullptr) q->f.sizes[slot] = op->bytes;
    store_release(counter, ++q->done);
    moved = true;
  }
  return moved;
}

// Send side: the credits that came in (the receive posted again each time).
bool Worker::take_credit(Fifo *q) {
  bool moved = false;
  for (;;) {
    net.test(&q->credit_op);
    if (q->credit_op.state == kOpPending) return moved;
    if (q->credit_op.state == kOpFailed || q->credit_op.bytes != sizeof(q->credit_word)) {
      failed_op(q, "credit after step", q->credit);
      return moved;
    }
    if (q->credit_word > q->credit) q->credit = q->credit_word;
    moved = true;
    net.recv(credit_tag(q->f.peer, q->f.id), &q->credit_word, sizeof(q->credit_word), nullptr, &q->credit_op);
  }
}

// Send side: hand every posted step within the credit to UCX, then publish the sent ones, in order, as head.
// A step is posted either as LL lines (its header line has its flag) or in its slot (the tail covers it).
bool Worker::move_send(Fifo *q) {
  const coll_gpu_proxy_fifo_t &f = q->f;
  const int rank = proxy->cfg.rank;
  bool moved = take_credit(q);
  if (proxy->has_failed()) return moved;
  const uint64_t tail = load_acquire(f.tail);
  for (;;) {
    const int slot = (int)(q->posted % (uint64_t)f.depth);
    size_t bytes;
    const char *from = f.buff + (size_t)slot * f.slot_bytes;
    void *memh = q->memh;
    const bool ll = ll_posted(f, slot, q->posted, &bytes);
    if (!ll && q->posted >= tail) break;
    if (!ll) bytes = f.sizes != nullptr ? (size_t)f.sizes[slot] : f.slot_bytes;
    if (!net.synchronous(bytes) && q->posted >= q->credit) break;  // no free slot known at the other end yet
    if (ll ? bytes > f.ll_bytes : bytes > f.slot_bytes || tail - q->done > (uint64_t)f.depth) {
      char why[200];
      snprintf(why, sizeof(why), "connection %d to rank %d: %sstep %llu of %zu bytes (slots of %zu), %llu steps ahead",
               f.id, f.peer, ll ? "LL " : "", (unsigned long long)q->posted, bytes, ll ? f.ll_bytes : f.slot_bytes,
               (unsigned long long)(tail - q->done));
      proxy->fail(COLL_GPU_INTERNAL_ERROR, f.peer, why);
      return moved;
    }
    if (ll) {
      from = q->bounce + (size_t)slot * f.ll_bytes;
      memh = nullptr;
      if (!ll_unpack(f, slot, q->posted, bytes, (char *)from, &q->ll_taken)) break;  // lines still on their way
      q->ll_taken = 0;                                                               // for the next step
    }
    NetOp *op = &q->ops[slot];
    coll_gpu_trace('S', rank, f.peer, f.id, q->posted);
    net.send(f.peer, step_tag(rank, f.id, q->posted), from, bytes, memh, op);
    if (op->state == kOpFailed) {
      failed_op(q, "sending step", q->posted);
      return moved;
    }
    ++sent;
    sent_ll += ll ? 1 : 0;
    ++q->posted;
    moved = true;
  }
  moved |= complete(q, f.head);
  return moved;
}

// Receive side: tells the sender of the slots freed since the last credit, once they are half a FIFO (or
// the FIFO is a single slot); one credit message in flight at a time, the latest count in it.
bool Worker::grant_credit(Fifo *q) {
  const uint64_t batch = q->f.depth > 1 ? (uint64_t)q->f.depth / 2 : 1;
  if (q->posted < q->credit + batch) return false;
  net.test(&q->credit_op);
  if (q->credit_op.state == kOpPending) return false;
  if (q->credit_op.state == kOpFailed) {
    failed_op(q, "credit after step", q->credit);
    return false;
  }
  q->credit = q->credit_word = q->posted;  // every step below has its receive posted
  net.send(q->f.peer, credit_tag(proxy->cfg.rank, q->f.id), &q->credit_word, sizeof(q->credit_word), nullptr,
           &q->credit_op);
  if (q->credit_op.state == kOpFailed) failed_op(q, "credit after step", q->credit);
  return true;
}

// Receive side: keep a receive posted in every slot the kernel has freed, grant the sender those slots, then
// publish the arrived steps, in order, as tail.
bool Worker::move_recv(Fifo *q) {
  const coll_gpu_proxy_fifo_t &f = q->f;
  bool moved = false;
  const uint64_t limit = load_acquire(f.head) + (uint64_t)f.depth;
  while (q->posted < limit) {
    const int slot = (int)(q->posted % (uint64_t)f.depth);
    NetOp *op = &q->ops[slot];
    net.recv(step_tag(f.peer, f.id, q->posted), f.buff + (size_t)slot * f.slot_bytes, f.slot_bytes, q->memh, op);
    if (op->state == kOpFailed) {
      failed_op(q, "receiving step", q->posted);
      return moved;
    }
    ++q->posted;
  }
  moved |= grant_credit(q);
  moved |= complete(q, f.tail);
  return moved;
}

// Sleeps up to ns in ppoll, until a wake, a command or the stop (wake_fd), or a peer's message where the net
// has a descriptor for it (a negative descriptor is left out of the poll); not at all where the net has
// events waiting (UCX's worker would not arm). sleeping is set before the flags are read, and a waker sets
// its flag before it reads sleeping: one of the two sees the other, and the eventfd counts, so a write before
// the poll ends it too.
void Worker::sleep(uint64_t ns) {
  sleeping.store(true);
  const int fd = net.event_fd();
  if (fd != ProxyNet::kEventsWaiting && !woken.load() && !cmd_pending.load() && !stop.load()) {
    struct pollfd fds[2] = {{wake_fd, POLLIN, 0}, {fd, POLLIN, 0}};
    const struct timespec t = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    (void)ppoll(fds, 2, &t, nullptr);
  }
  uint64_t count;
  (void)!read(wake_fd, &count, sizeof(count));  // a wake written meanwhile, if any (non-blocking)
  sleeping.store(false);
}

void Worker::wake() {
  woken.store(true);
  if (sleeping.load()) rouse();
}

// Ends the thread's sleep, or its next one.
void Worker::rouse() {
  const uint64_t one = 1;
  if (wake_fd >= 0) (void)!write(wake_fd, &one, sizeof(one));
}

void Worker::run_command() {
  pthread_mutex_lock(&mu);
  if (cmd == kConnect) {
    cmd_status = net.connect(cmd_peer, cmd_addr, cmd_same_host, cmd_why, cmd_len);
    if (cmd_status == COLL_GPU_SUCCESS)
      proxy->log(COLL_GPU_LVL_TRACE, "proxy of rank %d, thread %d: connected to rank %d%s", proxy->cfg.rank, index,
                 cmd_peer, cmd_same_host ? " (same host)" : "");
  } else if (cmd == kAdd) {
    cmd_status = add(cmd_fifo, cmd_why, cmd_len);
  }
  cmd = kNone;
  cmd_pending.store(false);
  pthread_cond_broadcast(&done_cv);
  pthread_mutex_unlock(&mu);
}

void Worker::run() {
  const coll_gpu_proxy_config_t &cfg = proxy->cfg;
  pthread_setname_np(pthread_self(), kThreadName);
  if (cfg.cpus != nullptr && cfg.ncpus > 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < cfg.ncpus; ++i)
      if (cfg.cpus[i] >= 0 && cfg.cpus[i] < CPU_SETSIZE) CPU_SET(cfg.cpus[i], &set);
    const int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    if (rc != 0)
      proxy->log(COLL_GPU_LVL_WARN, "proxy of rank %d, thread %d: CPU affinity not set: %s", cfg.rank, index,
                 strerror(rc));
  }
  init_status = net.init(
      cfg.net, cfg.rank, cfg.nranks, kSyncBytes, cfg.ifname,
      [](void *ctx, int peer, const char *why) { ((coll_gpu_proxy *)ctx)->fail(COLL_GPU_PEER_GONE, peer, why); }, proxy,
      init_why, sizeof(init_why));
  pthread_mutex_lock(&mu);
  ready = true;
  pthread_cond_broadcast(&done_cv);
  pthread_mutex_unlock(&mu);
  if (init_status != COLL_GPU_SUCCESS) return;

  uint64_t last = coll_gpu_now_ns(), nap = kFirstSleepNs;
  while (!stop.load(std::memory_order_acquire)) {
    if (cmd_pending.load(std::memory_order_acquire)) run_command();
    bool moved = net.progress() > 0;
    // the sends first: a step waiting to go is on a kernel's way, a credit to grant seldom is
    for (int i = 0; i < nfifos && !proxy->has_failed(); ++i)
      if (fifos[i]->f.dir == COLL_GPU_PROXY_SEND) moved |= move_send(fifos[i]);
    for (int i = 0; i < nfifos && !proxy->has_failed(); ++i)
      if (fifos[i]->f.dir == COLL_GPU_PROXY_RECV) moved |= move_recv(fifos[i]);
    if (woken.exchange(false)) moved = true;
    const uint64_t t = coll_gpu_now_ns();
    if (moved) {
      last = t;
      nap = kFirstSleepNs;
    } else if (t - last > cfg.spin_ns) {
      sleep(nap);
      nap = nap * 2 < cfg.sleep_ns ? nap * 2 : cfg.sleep_ns;
    } else {
      // a poll that found nothing gives way to a thread with work waiting for this CPU: on one H200 shared
      // by 2 ranks under MPS (16 cores, 7 threads a rank), a bcast over tcp took 2-5x NCCL's socket
      // transport's time from 32 KiB to 4 MiB without it, 0.9-1.2x with it
      sched_yield();
    }
  }
  teardown();
}

void Worker::teardown() {
  if (nfifos > 0)
    proxy->log(COLL_GPU_LVL_TRACE,
               "proxy of rank %d, thread %d: %llu steps sent (%llu of them from LL lines), %llu arrived (%llu of "
               "them written as LL lines too)",
               proxy->cfg.rank, index, (unsigned long long)sent, (unsigned long long)sent_ll,
               (unsigned long long)arrived, (unsigned long long)arrived_ll);
  // receives first (a cancelled receive completes at once); the sends in flight end with their endpoints
  for (int i = 0; i < nfifos; ++i) {
    Fifo *q = fifos[i];
    if (q->f.dir == COLL_GPU_PROXY_RECV)
      for (int s = 0; s < q->f.depth; ++s) net.cancel(&q->ops[s]);
    else
      net.cancel(&q->credit_op);
  }
  net.close_endpoints();
  for (int i = 0; i < nfifos; ++i)
    for (int s = 0; s <= fifos[i]->f.depth; ++s) {  // the slots', then the credit's
      NetOp *op = s < fifos[i]->f.depth ? &fifos[i]->ops[s] : &fifos[i]->credit_op;
      net.test(op);
      net.release(op);
    }
  for (int i = 0; i < nfifos; ++i) net.unmap(fifos[i]->memh);
  net.close();
}

coll_gpu_status_t Worker::post(Command c, char *why, size_t len) {
  pthread_mutex_lock(&mu);
  cmd = c;
  cmd_why = why;
  cmd_len = len;
  cmd_pending.store(true);
  rouse();
  while (cmd_pending.load()) pthread_cond_wait(&done_cv, &mu);
  const coll_gpu_status_t s = cmd_status;
  pthread_mutex_unlock(&mu);
  return s;
}

}  // namespace coll_gpu

extern "C" {

coll_gpu_status_t coll_gpu_proxy_create(const coll_gpu_proxy_config_t *cfg, coll_gpu_proxy_t **out, char *why,
                                        size_t len) {
  *out = nullptr;
  const int threads = cfg->threads > 0 ? cfg->threads : 1;
  if (cfg->nranks < 1 || cfg->nranks > (1 << coll_gpu::kTagSenderBits) || cfg->rank < 0 || cfg->rank >= cfg->nranks ||
      threads > COLL_GPU_PROXY_MAX_THREADS) {
    coll_gpu_say(why, len, "a proxy for rank %d of %d ranks with %d threads (at most %d)", cfg->rank, cfg->nranks,
                 threads, COLL_GPU_PROXY_MAX_THREADS);
    return COLL_GPU_INTERNAL_ERROR;
  }
  void *m = calloc(1, sizeof(coll_gpu_proxy));
  if (m == nullptr) {
    coll_gpu_say(why, len, "out of host memory for the network proxy");
    return COLL_GPU_SYSTEM_ERROR;
  }
  coll_gpu_proxy *p = new (m) coll_gpu_proxy();
  p->cfg = *cfg;
  p->cfg.threads = threads;
  snprintf(p->ifname, sizeof(p->ifname), "%s", cfg->ifname != nullptr ? cfg->ifname : "");
  p->cfg.ifname = p->ifname;
  if (cfg->cpus != nullptr && cfg->ncpus > 0) {
    p->cpus = (int *)malloc((size_t)cfg->ncpus * sizeof(int));
    if (p->cpus != nullptr) memcpy(p->cpus, cfg->cpus, (size_t)cfg->ncpus * sizeof(int));
    p->cfg.cpus = p->cpus;
    p->cfg.ncpus = p->cpus != nullptr ? cfg->ncpus : 0;
  }
  p->peer_threads = (int *)calloc((size_t)cfg->nranks, sizeof(int));
  if (p->peer_threads == nullptr) {
    coll_gpu_say(why, len, "out of host memory for the network proxy");
    coll_gpu_proxy_destroy(p);
    return COLL_GPU_SYSTEM_ERROR;
  }
  // one thread after another: each sets up its own UCX context and worker
  for (int w = 0; w < threads; ++w) {
    p->workers[w].proxy = p;
    p->workers[w].index = w;
    p->nworkers = w + 1;
    const coll_gpu_status_t s = p->workers[w].start(why, len);
    if (s != COLL_GPU_SUCCESS) {
      coll_gpu_proxy_destroy(p);
      return s;
    }
  }
  if (p->build_address() == 0) {
    coll_gpu_say(why, len, "UCX's worker address has %zu bytes, more than the %zu a proxy publishes",
                 p->workers[0].net.address_bytes(), coll_gpu::kAddressMax);
    coll_gpu_proxy_destroy(p);
    return COLL_GPU_SYSTEM_ERROR;
  }
  p->log(COLL_GPU_LVL_INFO, "proxy of rank %d: %d thread%s over %s, address %u bytes each", cfg->rank, p->nworkers,
         p->nworkers > 1 ? "s" : "", coll_gpu_proxy_net_name(cfg->net), (unsigned)p->workers[0].net.address_bytes());
  *out = p;
  return COLL_GPU_SUCCESS;
}

void coll_gpu_proxy_address(const coll_gpu_proxy_t *p, void *buf) {
  memcpy(buf, p->address, COLL_GPU_PROXY_ADDRESS_BYTES);
}

int coll_gpu_proxy_threads(const coll_gpu_proxy_t *p) { return p->nworkers; }

const char *coll_gpu_proxy_net_name(coll_gpu_proxy_net_t net) {
  return net == COLL_GPU_PROXY_NET_SOCKET ? "sockets" : "UCX";
}

coll_gpu_status_t coll_gpu_proxy_connect(coll_gpu_proxy_t *p, int peer, const void *addr, int same_host, char *why,
                                         size_t len) {
  if (peer < 0 || peer >= p->cfg.nranks || peer == p->cfg.rank) {
    coll_gpu_say(why, len, "proxy connection to rank %d of %d (this is rank %d)", peer, p->cfg.nranks, p->cfg.rank);
    return COLL_GPU_INTERNAL_ERROR;
  }
  Envelope e;
  memcpy(&e, addr, sizeof(e));
  const uint8_t *blob = (const uint8_t *)addr + sizeof(e);
  if (e.magic != coll_gpu::kAddressMagic || e.version != coll_gpu::kAddressVersion) {
    coll_gpu_say(why, len, "the proxy address given for rank %d is not one (magic %#x, version %u)", peer, e.magic,
                 e.version);
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  if (e.rank != peer) {
    coll_gpu_say(why, len, "the proxy address given for rank %d is rank %d's", peer, e.rank);
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  if (e.net != (uint32_t)p->cfg.net) {
    coll_gpu_say(why, len,
                 "rank %d's network proxy moves steps over %s, this one over %s: set coll_gpu_proxy_net alike", peer,
                 coll_gpu_proxy_net_name((coll_gpu_proxy_net_t)e.net), coll_gpu_proxy_net_name(p->cfg.net));
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  size_t total = 0;
  bool sizes_ok = e.threads >= 1 && e.threads <= COLL_GPU_PROXY_MAX_THREADS;
  for (uint32_t w = 0; sizes_ok && w < e.threads; ++w) {
    sizes_ok = e.bytes[w] > 0 && e.bytes[w] <= coll_gpu::kAddressMax - total;
    total += e.bytes[w];
  }
  if (!sizes_ok || coll_gpu::fnv1a(blob, total) != e.hash) {
    coll_gpu_say(why, len, "the proxy address of rank %d arrived damaged (%u threads, %zu bytes, hash mismatch)", peer,
                 e.threads, total);
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  if (p->peer_threads[peer] > 0) return COLL_GPU_SUCCESS;
  // thread w here talks to thread w there, for the threads both ranks have
  const int threads = p->nworkers < (int)e.threads ? p->nworkers : (int)e.threads;
  for (int w = 0; w < threads; ++w) {
    Worker &k = p->workers[w];
    k.cmd_peer = peer;
    k.cmd_addr = blob;
    k.cmd_same_host = same_host != 0;
    COLL_GPU_CHECK(k.post(coll_gpu::kConnect, why, len));
    blob += e.bytes[w];
  }
  p->peer_threads[peer] = threads;
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t coll_gpu_proxy_add(coll_gpu_proxy_t *p, const coll_gpu_proxy_fifo_t *f, char *why, size_t len) {
  const bool send = f->dir == COLL_GPU_PROXY_SEND;
  if ((f->dir != COLL_GPU_PROXY_SEND && f->dir != COLL_GPU_PROXY_RECV) || f->peer < 0 || f->peer >= p->cfg.nranks ||
      f->peer == p->cfg.rank || f->id < 0 || f->id >= COLL_GPU_PROXY_MAX_CONNS || f->depth < 1 ||
      f->depth > COLL_GPU_PROXY_MAX_DEPTH || f->slot_bytes == 0 || f->buff == nullptr || f->tail == nullptr ||
      f->head == nullptr ||
      (f->ll != nullptr && (f->ll_bytes == 0 || f->ll_bytes > f->slot_bytes || f->ll_bytes > COLL_GPU_LL_MAX_BYTES ||
                            (uintptr_t)f->ll % COLL_GPU_LL_LINE != 0))) {
    coll_gpu_say(why, len, "bad proxy FIFO (%s rank %d, connection %d, %d slots of %zu bytes, LL steps of %zu)",
                 send ? "to" : "from", f->peer, f->id, f->depth, f->slot_bytes, f->ll != nullptr ? f->ll_bytes : 0);
    return COLL_GPU_INTERNAL_ERROR;
  }
  if (p->peer_threads[f->peer] == 0) {
    coll_gpu_say(why, len, "proxy FIFO %s rank %d before connecting to it", send ? "to" : "from", f->peer);
    return COLL_GPU_INTERNAL_ERROR;
  }
  // the same thread at both ends: connection id modulo the threads both ranks have
  const int w = f->id % p->peer_threads[f->peer];
  Worker &k = p->workers[w];
  k.cmd_fifo = f;
  COLL_GPU_CHECK(k.post(coll_gpu::kAdd, why, len));
  p->owners[f->id].fetch_or((uint16_t)(1u << w), std::memory_order_relaxed);
  return COLL_GPU_SUCCESS;
}

void coll_gpu_proxy_wake(coll_gpu_proxy_t *p, int first_id, int count) {
  unsigned mask = 0;
  const int first = first_id > 0 ? first_id : 0;
  const int end = count > COLL_GPU_PROXY_MAX_CONNS - first ? COLL_GPU_PROXY_MAX_CONNS : first + count;
  for (int id = first; id < end; ++id) mask |= p->owners[id].load(std::memory_order_relaxed);
  for (int w = 0; w < p->nworkers; ++w)
    if (mask & (1u << w)) p->workers[w].wake();
}

coll_gpu_status_t coll_gpu_proxy_failed(coll_gpu_proxy_t *p, int *peer, char *why, size_t len) {
  const coll_gpu_status_t s = (coll_gpu_status_t)p->failed.load(std::memory_order_acquire);
  if (s != COLL_GPU_SUCCESS) {
    if (peer != nullptr) *peer = p->failed_peer;
    coll_gpu_say(why, len, "%s", p->failed_why);
  }
  return s;
}

void coll_gpu_proxy_destroy(coll_gpu_proxy_t *p) {
  if (p == nullptr) return;
  for (int w = 0; w < p->nworkers; ++w) p->workers[w].shutdown();  // each tears its UCX down
  free(p->peer_threads);
  free(p->cpus);
  p->~coll_gpu_proxy();
  free(p);
}

}  // extern "C"
