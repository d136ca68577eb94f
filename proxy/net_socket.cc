/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The proxy's network over TCP sockets (proxy/net_socket.h).
 */
#include "proxy/net_socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <new>
#include <type_traits>

#include "common/wait.h"
#include "proxy/proxy.h"

namespace coll_gpu {
namespace {

constexpr uint32_t kMagic = 0x43475343;  // "CGSC"
constexpr uint32_t kHello = 0x43474845;  // "CGHE": the first 16 bytes on a new socket: kHello, rank, nonce
constexpr int kConnectMs = 3000;         // one address's connect, and its answer
constexpr int kPassiveMs = 60000;        // the higher rank's wait for the lower's socket
constexpr size_t kReadBudget = 8 << 20;  // bytes one progress call reads from one peer at most
constexpr uint64_t kListenKey = ~0ull;   // the listening socket's key in the epoll set (a peer's: its rank)

enum Kind : uint32_t { kEager = 1, kBye = 2 };

// The lists of frames, receives and early messages: singly linked through `next`, oldest first, with their
// last element kept for appending.
template <typename T>
void append(T *&head, T *&last, T *item) {
  item->next = nullptr;
  if (last != nullptr)
    last->next = item;
  else
    head = item;
  last = item;
}

// Takes *at, whose predecessor is prev (nullptr: the first), off its list.
template <typename T>
T *take(T **at, T *prev, T *&last) {
  T *item = *at;
  *at = item->next;
  if (last == item) last = prev;
  return item;
}

bool excluded_by_default(const char *name) { return strncmp(name, "docker", 6) == 0 || strncmp(name, "virbr", 5) == 0; }

// Whether `name` is taken under an NCCL_SOCKET_IFNAME-style list.
bool taken(const char *name, const char *list) {
  if (list == nullptr || list[0] == '\0') return !excluded_by_default(name);
  const bool exclude = list[0] == '^';
  const char *p = exclude ? list + 1 : list;
  bool match = false;
  while (*p != '\0' && !match) {
    const char *end = strchr(p, ',');
    const size_t n = end != nullptr ? (size_t)(end - p) : strlen(p);
    match = n > 0 && strncmp(name, p, n) == 0;
    p += n + (end != nullptr ? 1 : 0);
  }
  return exclude ? !match : match;
}

void tune(int fd, bool watch) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (!watch) return;
  // a host that went away (no FIN, no RST) is found by keep-alive probes: 5 s idle, then 5 probes 1 s apart
  int idle = 5, interval = 1, count = 5;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  int user_timeout_ms = 10000;  // unacknowledged data: the same bound
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
}

// Waits up to ms for fd to become readable (events POLLIN) or writable (POLLOUT).
bool wait_fd(int fd, short events, int ms) {
  struct pollfd p = {fd, events, 0};
  return poll(&p, 1, ms) == 1 && (p.revents & events) != 0;
}

}  // namespace

// A frame's header on the wire.
struct SockNet::Header {
  uint32_t kind;
  uint32_t pad;
  uint64_t tag;  // EAGER
  uint64_t bytes;
};

// A frame to write: its header, then its payload (not owned), the op it completes once written (or none).
struct SockNet::Frame {
  Frame *next;
  Header h;
  const char *payload;
  size_t bytes;
  size_t written;  // of header and payload together
  NetOp *op;
};

// A receive: posted (tag), then filled by the message of its tag.
struct SockNet::Recv {
  Recv *next;
  uint64_t tag;
  char *buf;  // nullptr once cancelled: what arrives for it is dropped
  size_t cap;
  NetOp *op;
};

// A message that arrived before its receive, its bytes held here.
struct SockNet::Unexpected {
  Unexpected *next;
  uint64_t tag;
  size_t bytes, got;
  char *data;
  Recv *waiting;  // still arriving, and its receive came meanwhile
};

// Completes receive r with the message u held for it and frees both: the bytes copied where they fit (the
// receive fails where they do not); a receive taken back (no buffer, no op) is only freed.
static void deliver_held(SockNet::Recv *r, SockNet::Unexpected *u) {
  const bool fits = u->bytes <= r->cap;
  if (fits && r->buf != nullptr && u->bytes > 0) memcpy(r->buf, u->data, u->bytes);
  if (r->op != nullptr) {
    r->op->bytes = u->bytes;
    r->op->req = nullptr;
    r->op->state = fits ? kOpDone : kOpFailed;
  }
  free(r);
  free(u->data);
  free(u);
}

struct SockNet::Peer {
  int fd = -1;  // the socket, both ways: the lower rank of the two connected it
  bool watched = false, bye = false, failed = false, active = false;
  Frame *queue = nullptr, *queue_last = nullptr;
  // reading: the header, then the payload into target (nullptr: dropped)
  Header h;
  size_t hgot = 0;
  char *target = nullptr;
  size_t want = 0, got = 0;
  Recv *into = nullptr;         // the receive the payload fills
  Unexpected *unexp = nullptr;  // or the unexpected message
};

static_assert(std::is_trivially_destructible<SockNet::Peer>::value, "peers are freed without their destructors");

coll_gpu_status_t SockNet::init(int rank, int nranks, const char *ifname, FailFn fail, void *ctx, char *why,
                                size_t len) {
  rank_ = rank;
  fail_ = fail;
  fail_ctx_ = ctx;
  nranks_ = nranks;
  peers_ = (Peer *)calloc((size_t)nranks, sizeof(Peer));
  active_ = (int *)calloc((size_t)nranks, sizeof(int));
  if (peers_ == nullptr || active_ == nullptr) {
    coll_gpu_say(why, len, "out of host memory for %d proxy peers", nranks);
    return COLL_GPU_SYSTEM_ERROR;
  }
  for (int r = 0; r < nranks; ++r) new (&peers_[r]) Peer();
  addr_.magic = kMagic;
  if (getrandom(&addr_.nonce, sizeof(addr_.nonce), 0) != (ssize_t)sizeof(addr_.nonce))
    addr_.nonce = coll_gpu_now_ns() ^ ((uint64_t)getpid() << 32);
  struct ifaddrs *ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (struct ifaddrs *i = ifs; i != nullptr && addr_.naddrs < kMaxAddrs; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_UP) == 0 ||
          (i->ifa_flags & IFF_LOOPBACK) != 0 || !taken(i->ifa_name, ifname))
        continue;
      addr_.addrs[addr_.naddrs++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
    }
    freeifaddrs(ifs);
  }
  listen_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in sa = {};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(addr_.naddrs > 0 ? INADDR_ANY : INADDR_LOOPBACK);
  socklen_t sl = sizeof(sa);
  if (listen_ < 0 || bind(listen_, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(listen_, 128) != 0 ||
      getsockname(listen_, (struct sockaddr *)&sa, &sl) != 0) {
    coll_gpu_say(why, len, "the network proxy cannot listen on a TCP port: %s", strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  addr_.port = sa.sin_port;
  // one system call a poll finds what came, as UCX's tcp transport does: the listening socket and the
  // peers' sockets to this rank
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenKey;
  if (epoll_ < 0 || epoll_ctl(epoll_, EPOLL_CTL_ADD, listen_, &ev) != 0) {
    coll_gpu_say(why, len, "the network proxy cannot poll its sockets (epoll): %s", strerror(errno));
    return COLL_GPU_SYSTEM_ERROR;
  }
  return COLL_GPU_SUCCESS;
}

// Takes the peers' new sockets: each waits (never blocking this thread: the peer may be inside its own
// connect to us) until its hello has come, which names the peer and must carry this nonce. Whether any
// socket came or was settled.
bool SockNet::accept_peers() {
  bool moved = false;
  while (nfresh_ < kMaxFresh) {
    const int fd = accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) break;
    fresh_[nfresh_++] = Fresh{fd, {}, 0, coll_gpu_now_ns() + (uint64_t)kConnectMs * 1000000ull};
    moved = true;
  }
  for (int i = 0; i < nfresh_;) {
    Fresh &f = fresh_[i];
    const ssize_t n = ::recv(f.fd, (char *)f.hello + f.got, sizeof(f.hello) - f.got, MSG_DONTWAIT);
    if (n > 0) f.got += (size_t)n;
    const bool waiting = f.got < sizeof(f.hello) && (n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR))) &&
                         coll_gpu_now_ns() < f.until;
    if (waiting) {
      ++i;
      continue;
    }
    const int fd = f.fd;
    const uint32_t *hello = f.hello;
    uint64_t nonce;
    memcpy(&nonce, &hello[2], sizeof(nonce));
    const int rank = (int)hello[1];
    const bool ours = f.got == sizeof(f.hello) && hello[0] == kHello && nonce == addr_.nonce && rank >= 0 &&
                      rank < nranks_ && rank < rank_ && peers_[rank].fd < 0;
    fresh_[i] = fresh_[--nfresh_];
    moved = true;
    const char ok = 1;
    if (!ours || ::send(fd, &ok, 1, MSG_NOSIGNAL) != 1) {
      ::close(fd);  // not a peer of this net (never answered), or gone
      continue;
    }
    settle(fd, rank);
  }
  return moved;
}

// The socket to a peer, connected and its hello answered: polled for what comes, and written to.
void SockNet::settle(int fd, int rank) {
  Peer &p = peers_[rank];
  struct epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.u64 = (uint64_t)rank;
  if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    broken(p, "polling the socket of", errno);
    return;
  }
  p.fd = fd;
  tune(fd, p.watched);
  if (!p.active) {
    p.active = true;
    active_[nactive_++] = rank;
  }
}

coll_gpu_status_t SockNet::connect(int peer, const void *addr, bool same_host, char *why, size_t len) {
  Address a;
  memcpy(&a, addr, sizeof(a));
  if (a.magic != kMagic || a.naddrs > kMaxAddrs) {
    coll_gpu_say(why, len, "rank %d's address is not one of the proxy's socket network", peer);
    return COLL_GPU_SYSTEM_ERROR;
  }
  Peer &p = peers_[peer];
  p.watched = !same_host;
  if (p.fd >= 0) tune(p.fd, p.watched);
  if (rank_ > peer) {  // the lower rank connects: wait for its socket, taking the others' meanwhile
    const uint64_t until = coll_gpu_now_ns() + (uint64_t)kPassiveMs * 1000000ull;
    while (p.fd < 0 && !p.failed && coll_gpu_now_ns() < until) {
      if (!accept_peers()) wait_fd(listen_, POLLIN, 1);
    }
    if (p.fd < 0) {
      coll_gpu_say(why, len, "rank %d did not connect to the network proxy of rank %d within %d s", peer, rank_,
                   kPassiveMs / 1000);
      return COLL_GPU_SYSTEM_ERROR;
    }
    return COLL_GPU_SUCCESS;
  }
  uint32_t targets[kMaxAddrs + 1];
  int ntargets = 0;
  if (same_host || a.naddrs == 0) targets[ntargets++] = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < a.naddrs; ++i) targets[ntargets++] = a.addrs[i];
  char tried[200] = "";
  size_t at = 0;
  for (int t = 0; t < ntargets && p.fd < 0; ++t) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {};
    sa.sin_family = AF_INET;
    sa.sin_port = a.port;
    sa.sin_addr.s_addr = targets[t];
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof(ip));
    if (at < sizeof(tried)) at += (size_t)snprintf(tried + at, sizeof(tried) - at, "%s%s", t > 0 ? ", " : "", ip);
    bool ok = fd >= 0 && (::connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS);
    // until it connects and the peer answers the hello, take the sockets of the lower ranks, which may be
    // connecting to this one meanwhile
    const uint64_t until = coll_gpu_now_ns() + (uint64_t)kConnectMs * 1000000ull;
    int stage = 0;  // 0: connecting, 1: hello sent, 2: answered
    while (ok && stage < 2 && coll_gpu_now_ns() < until) {
      accept_peers();
      if (stage == 0 && wait_fd(fd, POLLOUT, 1)) {
        int err = 0;
        socklen_t el = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
        uint32_t hello[4] = {kHello, (uint32_t)rank_, 0, 0};
        ok = err == 0;
        if (ok) {
          memcpy(&hello[2], &a.nonce, sizeof(a.nonce));
          ok = ::send(fd, hello, sizeof(hello), MSG_NOSIGNAL) == (ssize_t)sizeof(hello);
          stage = 1;
        }
      } else if (stage == 1 && wait_fd(fd, POLLIN, 1)) {
        char answer = 0;
        ok = ::recv(fd, &answer, 1, 0) == 1 && answer == 1;
        stage = ok ? 2 : stage;
      }
    }
    if (ok && stage == 2) {
      settle(fd, peer);
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  if (p.fd < 0) {
    coll_gpu_say(why, len, "the network proxy cannot reach rank %d over TCP (port %u of %s)", peer,
                 (unsigned)ntohs(a.port), tried);
    return COLL_GPU_SYSTEM_ERROR;
  }
  return COLL_GPU_SUCCESS;
}

bool SockNet::connected(int peer) const { return peers_ != nullptr && peers_[peer].fd >= 0; }

// Queues a frame to p (header h, then `bytes` of payload, completing op once written) and writes what the
// socket takes now. False when host memory ran out.
bool SockNet::push(Peer &p, const Header &h, const char *payload, size_t bytes, NetOp *op) {
  Frame *f = (Frame *)calloc(1, sizeof(Frame));
  if (f == nullptr) return false;
  f->h = h;
  f->payload = payload;
  f->bytes = bytes;
  f->op = op;
  if (op != nullptr) op->req = f;
  ++queued_;
  append(p.queue, p.queue_last, f);
  write_out(p);
  return true;
}

void SockNet::fail_op(NetOp *op) {
  if (op == nullptr) return;
  op->req = nullptr;
  op->state = kOpFailed;
}

// The sends to a peer that are under way (queued) fail.
void SockNet::drop_sends(Peer &p) {
  for (Frame *f = p.queue; f != nullptr;) {
    Frame *next = f->next;
    fail_op(f->op);
    free(f);
    --queued_;
    f = next;
  }
  p.queue = p.queue_last = nullptr;
}

// The peer's socket failed (err) or ended (err 0) without BYE: the peer fails, and with it what waits on it.
void SockNet::broken(Peer &p, const char *what, int err) {
  const int rank = (int)(&p - peers_);
  if (p.failed) return;
  p.failed = true;
  // nothing more is read from it: out of the epoll set, which a sleeping thread polls (event_fd)
  if (p.fd >= 0 && epoll_ >= 0) epoll_ctl(epoll_, EPOLL_CTL_DEL, p.fd, nullptr);
  snprintf(last_error_, sizeof(last_error_), "%s rank %d: %s", what, rank,
           err != 0 ? strerror(err) : "the connection was closed");
  drop_sends(p);
  if (fail_ != nullptr) {
    char why[256];
    snprintf(why, sizeof(why), "the network connection to rank %d failed: %s", rank, last_error_);
    fail_(fail_ctx_, rank, why);
  }
}

// Writes the peer's frames until the socket takes no more; whether it wrote any.
bool SockNet::write_out(Peer &p) {
  bool moved = false;
  while (p.queue != nullptr && !p.failed) {
    Frame *f = p.queue;
    struct iovec iov[2];
    int n = 0;
    if (f->written < sizeof(Header)) {
      iov[n].iov_base = (char *)&f->h + f->written;
      iov[n++].iov_len = sizeof(Header) - f->written;
    }
    const size_t done = f->written > sizeof(Header) ? f->written - sizeof(Header) : 0;
    if (f->bytes > done) {
      iov[n].iov_base = (void *)(f->payload + done);
      iov[n++].iov_len = f->bytes - done;
    }
    struct msghdr m = {};
    m.msg_iov = iov;
    m.msg_iovlen = (size_t)n;
    const ssize_t w = n > 0 ? sendmsg(p.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) : 0;
    if (w < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      broken(p, "sending to", errno);
      return true;
    }
    moved |= w > 0;
    f->written += (size_t)w;
    if (f->written < sizeof(Header) + f->bytes) break;
    p.queue = f->next;
    if (p.queue == nullptr) p.queue_last = nullptr;
    if (f->op != nullptr) {
      f->op->req = nullptr;
      f->op->state = kOpDone;
    }
    free(f);
    --queued_;
  }
  return moved;
}

// The oldest receive posted for tag, taken off the list (nullptr: none yet); a message of `bytes` longer than
// it fails the receive and the peer (*bad).
SockNet::Recv *SockNet::receive_for(Peer &p, uint64_t tag, uint64_t bytes, bool *bad) {
  Recv *r = nullptr;
  for (Recv **at = &posted_, *prev = nullptr; *at != nullptr; prev = *at, at = &(*at)->next)
    if ((*at)->tag == tag) {
      r = take(at, prev, posted_last_);
      break;
    }
  if (r == nullptr || bytes <= r->cap) return r;
  fail_op(r->op);
  free(r);
  broken(p, "a message longer than its receive from", EMSGSIZE);
  *bad = true;
  return nullptr;
}

// A message of `bytes` that arrived from p before its receive, kept in arrival order with memory for its
// bytes. nullptr (and p fails) when host memory ran out.
SockNet::Unexpected *SockNet::early(Peer &p, uint64_t tag, size_t bytes) {
  Unexpected *u = (Unexpected *)calloc(1, sizeof(Unexpected));
  char *data = bytes > 0 ? (char *)malloc(bytes) : nullptr;
  if (u == nullptr || (bytes > 0 && data == nullptr)) {
    free(u);
    free(data);
    broken(p, "out of host memory for a message from", ENOMEM);
    return nullptr;
  }
  u->tag = tag;
  u->bytes = bytes;
  u->data = data;
  append(unexpected_, unexpected_last_, u);
  return u;
}

// A whole header has arrived from p: where its payload goes (p.target, p.want), or what it does. False when
// the stream is not ours to read any more.
bool SockNet::header_arrived(Peer &p) {
  const Header &h = p.h;
  p.target = nullptr;
  p.want = p.got = 0;
  p.into = nullptr;
  p.unexp = nullptr;
  switch (h.kind) {
    case kEager: {
      bool bad = false;
      Recv *r = receive_for(p, h.tag, h.bytes, &bad);
      if (bad) return false;
      if (r != nullptr) {
        p.into = r;
        p.target = r->buf;
      } else {
        Unexpected *u = early(p, h.tag, h.bytes);
        if (u == nullptr) return false;
        p.unexp = u;
        p.target = u->data;
      }
      p.want = h.bytes;
      if (p.want == 0) payload_arrived(p);
      return true;
    }
    case kBye:
      p.bye = true;
      return true;
    default:
      broken(p, "a frame that is not the proxy's from", EPROTO);
      return false;
  }
}

// The payload p was reading is whole: its receive completes, or the unexpected message is complete.
void SockNet::payload_arrived(Peer &p) {
  if (p.into != nullptr) {
    Recv *r = p.into;
    if (r->op != nullptr) {
      r->op->bytes = p.want;
      r->op->req = nullptr;
      r->op->state = kOpDone;
    }
    free(r);
  } else if (p.unexp != nullptr) {
    Unexpected *u = p.unexp;
    u->got = u->bytes;
    if (u->waiting != nullptr) {  // its receive came while it arrived
      Recv *r = u->waiting;
      for (Unexpected **at = &unexpected_, *prev = nullptr; *at != nullptr; prev = *at, at = &(*at)->next)
        if (*at == u) {
          take(at, prev, unexpected_last_);
          break;
        }
      deliver_held(r, u);
    }
  }
  p.into = nullptr;
  p.unexp = nullptr;
  p.target = nullptr;
  p.want = p.got = 0;
  p.hgot = 0;
}

// Takes n bytes read from p's stream through its frames: the rest of a header, then the rest of its payload
// (into its receive, or dropped where that was taken back), frame after frame. False when the stream is not ours
// to read any more.
bool SockNet::consume(Peer &p, const char *b, size_t n) {
  while (n > 0) {
    if (p.hgot < sizeof(Header)) {
      const size_t k = n < sizeof(Header) - p.hgot ? n : sizeof(Header) - p.hgot;
      memcpy((char *)&p.h + p.hgot, b, k);
      p.hgot += k;
      b += k;
      n -= k;
      if (p.hgot < sizeof(Header)) return true;
      if (!header_arrived(p)) return false;
      if (p.want == 0) p.hgot = 0;  // no payload: the next header
      continue;
    }
    const size_t k = n < p.want - p.got ? n : p.want - p.got;
    if (p.target != nullptr) memcpy(p.target + p.got, b, k);
    p.got += k;
    b += k;
    n -= k;
    if (p.got == p.want) payload_arrived(p);
  }
  return true;
}

// Reads what the peer sent, up to kReadBudget bytes; whether anything came. Headers and small payloads come in
// reads of up to kReadChunk bytes into in_, taken from there (consume): an 8-byte step's frame is one system
// call, not one for its header, one for its payload and one that finds nothing more. A payload with at least
// kReadChunk bytes still to come is read straight into its receive, until the socket has no more. A read into in_
// that returns less than it asked for emptied the socket, so none follows it (the epoll set, level-triggered, tells
// of what comes next).
bool SockNet::read_in(Peer &p) {
  bool moved = false;
  size_t budget = kReadBudget;
  while (!p.failed && budget > 0) {
    const bool direct = p.hgot == sizeof(Header) && p.target != nullptr && p.want - p.got >= kReadChunk;
    const size_t ask = !direct ? kReadChunk : p.want - p.got < budget ? p.want - p.got : budget;
    const ssize_t r = ::recv(p.fd, direct ? p.target + p.got : in_, ask, MSG_DONTWAIT);
    if (r == 0) {  // the end of the stream: after BYE the peer closed on purpose
      if (!p.bye) broken(p, "receiving from", 0);
      ::close(p.fd);
      p.fd = -1;
      return true;
    }
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
      broken(p, "receiving from", errno);
      return true;
    }
    moved = true;
    budget -= (size_t)r < budget ? (size_t)r : budget;
    if (direct) {
      p.got += (size_t)r;
      if (p.got == p.want) payload_arrived(p);
    } else if (!consume(p, in_, (size_t)r)) {
      return true;
    }
    if (!direct && (size_t)r < ask) break;
  }
  return moved;
}

void SockNet::send(int peer, uint64_t tag, const void *buf, size_t bytes, NetOp *op) {
  Peer &p = peers_[peer];
  op->bytes = bytes;
  op->send = true;
  op->req = nullptr;
  if (p.failed || p.fd < 0) return fail_op(op);
  op->state = kOpPending;
  Header h = {};
  h.kind = kEager;
  h.tag = tag;
  h.bytes = bytes;
  if (!push(p, h, (const char *)buf, bytes, op)) {
    snprintf(last_error_, sizeof(last_error_), "out of host memory sending to rank %d", peer);
    fail_op(op);
  }
}

void SockNet::recv(uint64_t tag, void *buf, size_t bytes, NetOp *op) {
  op->send = false;
  op->req = nullptr;
  Recv *r = (Recv *)calloc(1, sizeof(Recv));
  if (r == nullptr) {
    snprintf(last_error_, sizeof(last_error_), "out of host memory for a receive");
    return fail_op(op);
  }
  r->tag = tag;
  r->buf = (char *)buf;
  r->cap = bytes;
  r->op = op;
  op->state = kOpPending;
  op->req = r;
  // what arrived before it, oldest first
  for (Unexpected **at = &unexpected_, *prev = nullptr; *at != nullptr; prev = *at, at = &(*at)->next) {
    Unexpected *u = *at;
    if (u->tag != tag || u->waiting != nullptr) continue;
    if (u->got < u->bytes) {  // still arriving: it completes the receive when whole
      u->waiting = r;
      return;
    }
    deliver_held(r, take(at, prev, unexpected_last_));
    return;
  }
  append(posted_, posted_last_, r);
}

void SockNet::cancel(NetOp *op) {
  if (op->state != kOpPending || op->send) return;
  Recv *r = (Recv *)op->req;
  r->op = nullptr;
  r->buf = nullptr;
  for (int i = 0; i < nactive_; ++i)  // a payload arriving into it goes nowhere
    if (peers_[active_[i]].into == r) peers_[active_[i]].target = nullptr;
  op->req = nullptr;
  op->state = kOpIdle;
}

void SockNet::release(NetOp *op) {
  op->req = nullptr;
  op->state = kOpIdle;
}

unsigned SockNet::progress() {
  unsigned events = 0;
  // what the sockets did not take at once
  for (int i = 0; queued_ > 0 && i < nactive_; ++i) {
    Peer &p = peers_[active_[i]];
    if (p.fd >= 0 && p.queue != nullptr) events += write_out(p);
  }
  if (nfresh_ > 0) events += accept_peers();  // hellos still to come
  if (epoll_ < 0) return events;
  struct epoll_event ev[64];
  const int n = epoll_wait(epoll_, ev, 64, 0);
  for (int i = 0; i < n; ++i) {
    if (ev[i].data.u64 == kListenKey) {
      events += accept_peers();
      continue;
    }
    Peer &p = peers_[ev[i].data.u64];
    if (p.fd >= 0) events += read_in(p);
  }
  return events;
}

void SockNet::close_endpoints() {
  for (int i = 0; i < nactive_; ++i) {
    Peer &p = peers_[active_[i]];
    drop_sends(p);    // what is under way fails
    if (p.fd >= 0) {  // BYE goes whole or not at all
      Header bye = {};
      bye.kind = kBye;
      (void)::send(p.fd, &bye, sizeof(bye), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(p.fd);
      p.fd = -1;
    }
  }
  for (Recv *r = posted_; r != nullptr;) {
    Recv *next = r->next;
    fail_op(r->op);
    free(r);
    r = next;
  }
  posted_ = posted_last_ = nullptr;
  for (Unexpected *u = unexpected_; u != nullptr;) {
    Unexpected *next = u->next;
    if (u->waiting != nullptr) {
      fail_op(u->waiting->op);
      free(u->waiting);
    }
    free(u->data);
    free(u);
    u = next;
  }
  unexpected_ = unexpected_last_ = nullptr;
}

void SockNet::close() {
  close_endpoints();
  if (listen_ >= 0) ::close(listen_);
  listen_ = -1;
  if (epoll_ >= 0) ::close(epoll_);
  epoll_ = -1;
  for (int i = 0; i < nfresh_; ++i) ::close(fresh_[i].fd);
  nfresh_ = 0;
  free(peers_);  // trivially destructible
  peers_ = nullptr;
  free(active_);
  active_ = nullptr;
  nactive_ = 0;
}

}  // namespace coll_gpu

int coll_gpu_proxy_takes_ifname(const char *name, const char *ifname) { return coll_gpu::taken(name, ifname) ? 1 : 0; }
