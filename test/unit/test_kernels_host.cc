/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// The reduction functors, compiled for the host, against a reference written here for every type and op
// MPI allows; the partition arithmetic the kernels cut buffers with; and the communicator's device view
// (its ring channels' connections) as coll_gpu_dev_comm_setup and coll_gpu_dev_ipc_conns build it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/partition.h"

namespace {

std::mt19937_64 &rng() {
  static std::mt19937_64 r(std::random_device{}());
  return r;
}

template <typename T>
T ref_int(coll_gpu_redop_t op, T a, T b) {
  switch (op) {
    case COLL_GPU_SUM:
      return (T)((uint64_t)a + (uint64_t)b);
    case COLL_GPU_PROD:
      return (T)((uint64_t)a * (uint64_t)b);
    case COLL_GPU_MAX:
      return a > b ? a : b;
    case COLL_GPU_MIN:
      return a < b ? a : b;
    case COLL_GPU_LAND:
      return (T)(a && b);
    case COLL_GPU_LOR:
      return (T)(a || b);
    case COLL_GPU_LXOR:
      return (T)(!a != !b);
    case COLL_GPU_BAND:
      return (T)(a & b);
    case COLL_GPU_BOR:
      return (T)(a | b);
    case COLL_GPU_BXOR:
      return (T)(a ^ b);
    default:
      return 0;
  }
}

template <typename T>
void check_int(coll_gpu_dtype_t type) {
  const size_t n = 1000;
  for (int o = COLL_GPU_SUM; o <= COLL_GPU_BXOR; ++o) {
    auto op = (coll_gpu_redop_t)o;
    ASSERT_TRUE(coll_gpu_op_supported(type, op)) << type << " " << o;
    std::vector<T> a(n), b(n), got(n, (T)0x5a);
    for (size_t i = 0; i < n; ++i) {
      uint64_t x = rng()(), y = rng()();
      a[i] = (T)(i % 4 == 0 ? 0 : x);  // zeros for the logical ops
      b[i] = (T)(i % 5 == 0 ? 0 : i % 7 == 0 ? x : y);
    }
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_reduce_host(type, op, got.data(), a.data(), b.data(), n));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(ref_int<T>(op, a[i], b[i]), got[i]) << "type " << type << " op " << o;
  }
  EXPECT_FALSE(coll_gpu_op_supported(type, COLL_GPU_MAXLOC));
}

template <typename T>
void check_float(coll_gpu_dtype_t type) {
  const size_t n = 1000;
  std::uniform_real_distribution<T> d(-100, 100);
  for (auto op : {COLL_GPU_SUM, COLL_GPU_PROD, COLL_GPU_MAX, COLL_GPU_MIN}) {
    ASSERT_TRUE(coll_gpu_op_supported(type, op));
    std::vector<T> a(n), b(n), got(n);
    for (size_t i = 0; i < n; ++i) a[i] = d(rng()), b[i] = i % 9 == 0 ? a[i] : d(rng());
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_reduce_host(type, op, got.data(), a.data(), b.data(), n));
    for (size_t i = 0; i < n; ++i) {
      T want = op == COLL_GPU_SUM    ? a[i] + b[i]
               : op == COLL_GPU_PROD ? a[i] * b[i]
               : op == COLL_GPU_MAX  ? std::max(a[i], b[i])
                                     : std::min(a[i], b[i]);
      ASSERT_EQ(0, memcmp(&want, &got[i], sizeof(T))) << "op " << op;
    }
  }
  for (auto op : {COLL_GPU_LAND, COLL_GPU_BXOR, COLL_GPU_MAXLOC}) EXPECT_FALSE(coll_gpu_op_supported(type, op));
}

template <typename V>
struct PairOf {
  V v;
  int i;
};

template <typename V>
void check_pair(coll_gpu_dtype_t type) {
  ASSERT_EQ(sizeof(PairOf<V>), coll_gpu_dtype_size(type));
  const size_t n = 2000;
  for (auto op : {COLL_GPU_MAXLOC, COLL_GPU_MINLOC}) {
    std::vector<PairOf<V>> a(n), b(n), got(n);
    for (size_t i = 0; i < n; ++i) {
      memset(&a[i], 0, sizeof(a[i]));
      memset(&b[i], 0, sizeof(b[i]));
      a[i] = {(V)(rng()() % 5), (int)(rng()() % 8)};
      b[i] = {(V)(rng()() % 5), (int)(rng()() % 8)};
    }
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_reduce_host(type, op, got.data(), a.data(), b.data(), n));
    for (size_t i = 0; i < n; ++i) {
      bool b_wins = op == COLL_GPU_MAXLOC ? b[i].v > a[i].v : b[i].v < a[i].v;
      if (b[i].v == a[i].v) b_wins = b[i].i < a[i].i;  // MPI: the smaller index on a tie
      const PairOf<V> &w = b_wins ? b[i] : a[i];
      ASSERT_EQ(w.v, got[i].v);
      ASSERT_EQ(w.i, got[i].i);
    }
    EXPECT_FALSE(coll_gpu_op_supported(type, COLL_GPU_SUM));
  }
}

TEST(Functors, Integers) {
  check_int<int8_t>(COLL_GPU_INT8);
  check_int<uint8_t>(COLL_GPU_UINT8);
  check_int<int16_t>(COLL_GPU_INT16);
  check_int<uint16_t>(COLL_GPU_UINT16);
  check_int<int32_t>(COLL_GPU_INT32);
  check_int<uint32_t>(COLL_GPU_UINT32);
  check_int<int64_t>(COLL_GPU_INT64);
  check_int<uint64_t>(COLL_GPU_UINT64);
}

TEST(Functors, Floats) {
  check_float<float>(COLL_GPU_FLOAT);
  check_float<double>(COLL_GPU_DOUBLE);
}

TEST(Functors, Bool) {
  const size_t n = 64;
  for (auto op : {COLL_GPU_LAND, COLL_GPU_LOR, COLL_GPU_LXOR}) {
    std::vector<uint8_t> a(n), b(n), got(n);
    for (size_t i = 0; i < n; ++i) a[i] = (i >> 0) & 1, b[i] = (i >> 1) & 1;
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_reduce_host(COLL_GPU_BOOL, op, got.data(), a.data(), b.data(), n));
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(op == COLL_GPU_LAND ? (a[i] && b[i]) : op == COLL_GPU_LOR ? (a[i] || b[i]) : (a[i] != b[i]), got[i]);
  }
  for (auto op : {COLL_GPU_SUM, COLL_GPU_MAX, COLL_GPU_BAND}) EXPECT_FALSE(coll_gpu_op_supported(COLL_GPU_BOOL, op));
}

TEST(Functors, Pairs) {
  check_pair<float>(COLL_GPU_FLOAT_INT);
  check_pair<double>(COLL_GPU_DOUBLE_INT);
  check_pair<long>(COLL_GPU_LONG_INT);
  check_pair<int>(COLL_GPU_2INT);
  check_pair<short>(COLL_GPU_SHORT_INT);
}

TEST(Functors, UnknownPairsRefused) {
  EXPECT_EQ(0u, coll_gpu_dtype_size(COLL_GPU_NTYPES));
  EXPECT_FALSE(coll_gpu_op_supported(COLL_GPU_NTYPES, COLL_GPU_SUM));
  EXPECT_EQ(COLL_GPU_INVALID_INPUT, coll_gpu_reduce_host(COLL_GPU_FLOAT, COLL_GPU_BXOR, nullptr, nullptr, nullptr, 0));
}

// Parts tile [0, count) in order, non-empty ones start on pack boundaries, and none exceeds its share rounded to packs.
TEST(Partition, PartsTileInWholePacks) {
  for (size_t count : {0ul, 1ul, 7ul, 15ul, 16ul, 1000ul, 4099ul, 65537ul, (1ul << 20) + 5, (1ul << 33) + 3})
    for (size_t n : {1ul, 2ul, 3ul, 7ul, 8ul, 32ul})
      for (size_t pack : {1ul, 2ul, 4ul, 16ul}) {
        size_t next = 0;
        const size_t share = coll_gpu_round_up(coll_gpu_div_up(count, n), pack);
        for (size_t i = 0; i < n; ++i) {
          coll_gpu_range_t r = coll_gpu_part(count, n, i, pack);
          ASSERT_EQ(next, r.begin) << count << "/" << n << " part " << i;
          if (r.count > 0) {
            ASSERT_EQ(0u, r.begin % pack);
          }
          ASSERT_LE(r.count, share);
          next = r.begin + r.count;
        }
        ASSERT_EQ(count, next);
      }
}

// The ring moves every element: rounds x ranks x slot covers a channel, one round fewer would not.
TEST(Partition, RingRoundsCoverTheChannel) {
  for (size_t count : {0ul, 1ul, 4096ul, 4097ul, 1ul << 30})
    for (int n : {2, 3, 8})
      for (size_t slot : {256ul, 32768ul}) {
        size_t rounds = coll_gpu_ring_rounds(count, n, slot);
        EXPECT_GE(rounds * n * slot, count);
        if (rounds > 0) {
          EXPECT_LT((rounds - 1) * n * slot, count);
        }
        // within a round, each rank's chunk fits its slot
        if (count > 0) {
          size_t round = coll_gpu_min((size_t)n * slot, count);
          for (int j = 0; j < n; ++j) EXPECT_LE(coll_gpu_part(round, n, j, 16).count, slot);
        }
      }
}

// A call's blocks on the channels of its rings: channel c runs ring (c / span) mod nrings. Block b takes a
// channel of a ring in the mask (0: every ring), no two blocks the same, at place b mod span of its run; where
// span is 1 or the mask holds one ring, block b takes the b-th such channel in channel order; consecutive
// blocks of a run's length take turns at the mask's rings; the first per x span x rounds blocks (per rings in
// the mask) take exactly the mask's channels of the first rounds x nrings runs; the blocks counted for
// nchannels are the longest first run of them below nchannels; and a block's share of its ring is its place
// among the blocks of that ring.
TEST(Partition, BlocksTakeTurnsAtTheChannelsOfTheirRings) {
  for (int trial = 0; trial < 3000; ++trial) {
    const int nrings = 1 + (int)(rng()() % COLL_GPU_MAX_RINGS);
    const int span = trial % 3 == 0 ? 1 : 1 + (int)(rng()() % 20);
    const int nchannels = 1 + (int)(rng()() % COLL_GPU_MAX_CHANNELS);
    const unsigned mask = trial % 5 == 0 ? 0u : (unsigned)(rng()() & ((1ull << nrings) - 1));
    if (mask == 0 && trial % 5 != 0) continue;
    const unsigned rings = mask == 0 ? (unsigned)((1ull << nrings) - 1) : mask;
    const int per = __builtin_popcount(rings);
    const int rounds = 1 + (int)(rng()() % 3), first = per * span * rounds;
    std::vector<int> theirs;  // the channels of the mask's rings, in order
    int ring = 0;             // channel c's, counted out: runs of span channels, the rings in turn
    for (int c = 0; c < (rounds + 1) * nrings * span; ++c) {
      if (c > 0 && c % span == 0) ring = (ring + 1) % nrings;
      ASSERT_EQ(ring, coll_gpu_channel_ring(c, nrings, span)) << "channel " << c << ", span " << span;
      if ((rings >> ring) & 1u) theirs.push_back(c);
    }
    std::set<int> taken, want;
    for (int b = 0; b < first; ++b) {
      const int c = coll_gpu_work_channel(mask, nrings, span, b);
      ASSERT_TRUE((rings >> coll_gpu_channel_ring(c, nrings, span)) & 1u) << "block " << b << ", mask " << mask;
      ASSERT_TRUE(taken.insert(c).second) << "two blocks on channel " << c;
      ASSERT_EQ(b % span, c % span) << "block " << b;
      if (span == 1 || per == 1) {
        ASSERT_EQ(theirs[b], c) << "block " << b << ", mask " << mask;
      }
      if (per > 1 && b % span != span - 1) {
        ASSERT_NE(coll_gpu_channel_ring(c, nrings, span),
                  coll_gpu_channel_ring(coll_gpu_work_channel(mask, nrings, span, b + 1), nrings, span))
            << "blocks " << b << " and " << b + 1 << " on one ring";
      }
    }
    for (int c : theirs)
      if (c < rounds * nrings * span) want.insert(c);
    ASSERT_EQ(want, taken) << "mask " << mask << ", " << nrings << " rings, span " << span;
    int prefix = 0;
    while (prefix < nchannels && coll_gpu_work_channel(mask, nrings, span, prefix) < nchannels) ++prefix;
    ASSERT_EQ(prefix, coll_gpu_work_channels(mask, nrings, span, nchannels)) << "mask " << mask;
    const int nblocks = 1 + (int)(rng()() % 32);
    std::map<int, int> seen;  // by ring: blocks so far
    for (int b = 0; b < nblocks; ++b) {
      const int r = coll_gpu_channel_ring(coll_gpu_work_channel(mask, nrings, span, b), nrings, span);
      int index = -1, count = -1, all = 0;
      for (int x = 0; x < nblocks; ++x)
        all += coll_gpu_channel_ring(coll_gpu_work_channel(mask, nrings, span, x), nrings, span) == r;
      coll_gpu_work_ring_share(mask, nrings, span, nblocks, b, &index, &count);
      ASSERT_EQ(seen[r]++, index) << "block " << b;
      ASSERT_EQ(all, count) << "block " << b;
    }
  }
}

// ---- the communicator's device view

// Every rank's view of a communicator of n ranks whose scratch lies at `base[r]` in every process (as if
// every rank mapped its peers' at the same addresses, which lets views be compared across ranks).
struct Views {
  int n = 0, nrings = 0, span = 1;
  coll_gpu_scratch_layout_t layout{};
  std::vector<uint16_t> rings;  // [ring][position]
  std::vector<void *> base;
  std::vector<coll_gpu_dev_comm_t> comm;
  std::vector<coll_gpu_dev_conns_t> conns;  // host copies of the connections
  size_t bytes = 0;                         // each rank's scratch

  Views(int ranks, int channels) : n(ranks), base(ranks), comm(ranks), conns(ranks) {
    layout = coll_gpu_scratch_layout_t{n, 64u << 10, 1u << 20, 32u << 10, channels};
    bytes = coll_gpu_scratch_bytes(&layout);
    nrings = 1 + (int)(rng()() % COLL_GPU_MAX_RINGS);
    span = 1 + (int)(rng()() % 8);
    rings.resize((size_t)nrings * n);
    for (int g = 0; g < nrings; ++g) {
      for (int i = 0; i < n; ++i) ring(g)[i] = (uint16_t)i;
      std::shuffle(ring(g), ring(g) + n, rng());
    }
    for (int r = 0; r < n; ++r) base[r] = (void *)(uintptr_t)((uint64_t)(r + 1) << 40);
  }
  uint16_t *ring(int g) { return rings.data() + (size_t)g * n; }
  // The kernels' view of rank r, every peer reached over IPC (its scratch mapped at base[peer]).
  coll_gpu_status_t setup(int r) {
    const coll_gpu_status_t rc = coll_gpu_dev_comm_setup(&comm[r], &conns[r], r, n, &layout, base.data(), nrings, span,
                                                         rings.data(), nullptr, nullptr, 1, 2);
    if (rc == COLL_GPU_SUCCESS) coll_gpu_dev_ipc_conns(&comm[r], &conns[r], base.data());
    return rc;
  }
  // The rank whose scratch holds address a, or -1.
  int owner(const void *a, size_t len) const {
    for (int r = 0; r < n; ++r)
      if ((uintptr_t)a >= (uintptr_t)base[r] && (uintptr_t)a + len <= (uintptr_t)base[r] + bytes) return r;
    return -1;
  }
};

bool same_conn(const coll_gpu_conn_t &a, const coll_gpu_conn_t &b) {
  return a.buff == b.buff && a.tail == b.tail && a.head == b.head;
}

// Communicator sizes: mostly one node's (2 to COLL_GPU_MAX_DIRECT), now and then a larger one up to 1024 ranks.
int draw_ranks(int trial) {
  const int large[] = {9, 16, 33, 100, 256, 1024};
  return trial % 8 != 7 ? 2 + (int)(rng()() % (COLL_GPU_MAX_DIRECT - 1)) : large[rng()() % 6];
}

// Each channel follows its ring, and the sending end of every connection (ring and point-to-point) names
// the same FIFO, tail and head as its receiving end, each in the scratch of the rank that polls or owns it.
TEST(DevComm, ConnectionsPairAcrossRanks) {
  for (int trial = 0; trial < 200; ++trial) {
    const int n = draw_ranks(trial);
    const int channels = 1 + (int)(rng()() % (n > 64 ? 8 : COLL_GPU_MAX_CHANNELS));
    Views v(n, channels);
    for (int r = 0; r < n; ++r) ASSERT_EQ(COLL_GPU_SUCCESS, v.setup(r));
    const size_t fifo = (size_t)COLL_GPU_RING_SLOTS * v.layout.slot_bytes;
    for (int r = 0; r < n; ++r) {
      const coll_gpu_dev_comm_t &c = v.comm[r];
      ASSERT_EQ(r, c.rank);
      ASSERT_EQ(n, c.nranks);
      ASSERT_EQ(n <= COLL_GPU_MAX_DIRECT, c.direct != 0) << n << " ranks";
      // the connections' device copy lies in my own scratch, and so do the ring orders
      ASSERT_EQ(r, v.owner(c.channels, sizeof(coll_gpu_dev_conns_t)));
      ASSERT_EQ((const void *)c.peers, (const void *)&((const coll_gpu_dev_conns_t *)c.channels)->peers);
      const uint16_t *first = v.conns[r].channels[0].ring;
      for (int ch = 0; ch < channels; ++ch) {
        const coll_gpu_dev_channel_t &k = v.conns[r].channels[ch];
        const int i = coll_gpu_channel_ring(ch, v.nrings, v.span);
        const uint16_t *ring = v.ring(i);
        ASSERT_EQ(r, v.owner(k.ring, (size_t)n * sizeof(uint16_t))) << "channel " << ch;
        ASSERT_EQ(k.ring - first, (ptrdiff_t)i * n) << "channel " << ch << ": its ring's place";
        ASSERT_EQ(r, ring[k.pos]);
        ASSERT_EQ(ring[(k.pos + 1) % n], k.next);
        ASSERT_EQ(ring[(k.pos + n - 1) % n], k.prev);
        // my send connection is my next rank's receive connection, and my receive my previous rank's send
        ASSERT_TRUE(same_conn(k.send, v.conns[k.next].channels[ch].recv)) << "rank " << r << " channel " << ch;
        ASSERT_TRUE(same_conn(k.recv, v.conns[k.prev].channels[ch].send)) << "rank " << r << " channel " << ch;
        // the receiver owns the FIFO and the tail it polls; the sender the head it polls
        ASSERT_EQ(k.next, v.owner(k.send.buff, fifo));
        ASSERT_EQ(k.next, v.owner(k.send.tail, 8));
        ASSERT_EQ(r, v.owner(k.send.head, 8));
        ASSERT_EQ(r, v.owner(k.steps, 16));
      }
      // point-to-point, from 3 to COLL_GPU_MAX_DIRECT ranks: my connection c to q is q's connection c from me
      for (int q = 0; n > 2 && n <= COLL_GPU_MAX_DIRECT && q < n; ++q) {
        if (q == r) continue;
        const coll_gpu_dev_peer_t &e = v.conns[r].peers[q];
        for (int k = 0; k < COLL_GPU_P2P_CONNS; ++k) {
          ASSERT_TRUE(same_conn(e.send[k], v.conns[q].peers[r].recv[k])) << r << " to " << q << " conn " << k;
          ASSERT_EQ(q, v.owner(e.send[k].buff, (size_t)COLL_GPU_RING_SLOTS * COLL_GPU_P2P_SLOT_BYTES));
          ASSERT_EQ(q, v.owner(e.send[k].tail, 8));
          ASSERT_EQ(r, v.owner(e.send[k].head, 8));
          ASSERT_EQ(r, v.owner(e.steps[k], 16));
        }
      }
      for (int q = 0; n > COLL_GPU_MAX_DIRECT && q < COLL_GPU_MAX_DIRECT; ++q)
        for (int k = 0; k < COLL_GPU_P2P_CONNS; ++k)
          ASSERT_EQ(v.conns[r].peers[q].send[k].buff, nullptr) << n << " ranks: no point-to-point connection";
    }
  }
}

// Within one rank's scratch nothing of one channel overlaps another's, the channels' device copy or the ring
// orders: FIFOs, flags (each polled word on its own cache line) and saved step counters.
TEST(DevComm, ChannelsDoNotOverlap) {
  for (int trial = 0; trial < 50; ++trial) {
    const int n = draw_ranks(trial);
    Views v(n, 1 + (int)(rng()() % COLL_GPU_MAX_CHANNELS));
    const int r = (int)(rng()() % n);
    ASSERT_EQ(COLL_GPU_SUCCESS, v.setup(r));
    const coll_gpu_dev_comm_t &c = v.comm[r];
    std::vector<std::pair<uintptr_t, uintptr_t>> spans;  // [begin, end) in my scratch
    auto add = [&](const void *p, size_t len) { spans.emplace_back((uintptr_t)p, (uintptr_t)p + len); };
    add(c.channels, sizeof(coll_gpu_dev_conns_t));
    for (int ch = 0; ch < v.layout.nchannels; ++ch) {
      const coll_gpu_dev_channel_t &k = v.conns[r].channels[ch];
      add(k.recv.buff, (size_t)COLL_GPU_RING_SLOTS * v.layout.slot_bytes);
      add(k.recv.tail, 128);
      add(k.send.head, 128);
      add(k.steps, 16);
      if (ch % v.span == 0 && ch / v.span < v.nrings) add(k.ring, (size_t)n * sizeof(uint16_t));  // each ring once
    }
    for (int q = 0; n > 2 && n <= COLL_GPU_MAX_DIRECT && q < n; ++q) {
      if (q == r) continue;
      for (int k = 0; k < COLL_GPU_P2P_CONNS; ++k) {
        const coll_gpu_dev_peer_t &e = v.conns[r].peers[q];
        add(e.recv[k].buff, (size_t)COLL_GPU_RING_SLOTS * COLL_GPU_P2P_SLOT_BYTES);
        add(e.recv[k].tail, 128);
        add(e.send[k].head, 128);
        add(e.steps[k], 16);
      }
    }
    std::sort(spans.begin(), spans.end());
    for (size_t i = 0; i < spans.size(); ++i) {
      ASSERT_EQ(r, v.owner((const void *)spans[i].first, spans[i].second - spans[i].first));
      if (i > 0) {
        ASSERT_LE(spans[i - 1].second, spans[i].first) << "span " << i;
      }
    }
  }
}

// Beyond COLL_GPU_MAX_DIRECT ranks the scratch holds the ring parts only: it grows with the ring orders' 2
// bytes a rank per ring, nothing else, and is smaller than a direct communicator's.
TEST(DevComm, ScratchGrowsWithTheRingOrdersOnly) {
  auto bytes = [](int n) {
    const coll_gpu_scratch_layout_t l{n, 64u << 10, 1u << 20, 256u << 10, COLL_GPU_MAX_CHANNELS};
    return coll_gpu_scratch_bytes(&l);
  };
  const size_t nine = bytes(COLL_GPU_MAX_DIRECT + 1);
  EXPECT_LT(nine, bytes(COLL_GPU_MAX_DIRECT));
  for (int n = COLL_GPU_MAX_DIRECT + 1; n <= 1024; n += 1 + (int)(rng()() % 50)) {
    EXPECT_GE(bytes(n), nine);
    EXPECT_LE(bytes(n) - nine, (size_t)(n - COLL_GPU_MAX_DIRECT - 1) * COLL_GPU_MAX_RINGS * sizeof(uint16_t)) << n;
  }
}

// The transports' split: the set-up alone leaves every connection empty, and the IPC transport fills those
// of the peers mapped here and no other (a NET transport fills the rest), each as the full view has it.
TEST(DevComm, IpcFillsTheMappedPeersOnly) {
  for (int trial = 0; trial < 100; ++trial) {
    const int n = draw_ranks(trial);
    Views v(n, 1 + (int)(rng()() % 16));
    const int r = (int)(rng()() % n);
    ASSERT_EQ(COLL_GPU_SUCCESS, v.setup(r));  // every peer mapped: the reference
    const coll_gpu_dev_conns_t full = v.conns[r];
    coll_gpu_dev_comm_t comm;
    coll_gpu_dev_conns_t part;
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_dev_comm_setup(&comm, &part, r, n, &v.layout, v.base.data(), v.nrings, v.span,
                                                        v.rings.data(), nullptr, nullptr, 1, 2));
    const coll_gpu_conn_t none = {};
    for (int ch = 0; ch < v.layout.nchannels; ++ch) {
      ASSERT_TRUE(same_conn(part.channels[ch].send, none) && same_conn(part.channels[ch].recv, none)) << ch;
      ASSERT_EQ(part.channels[ch].steps, full.channels[ch].steps);
    }
    for (int q = 0; q < COLL_GPU_MAX_DIRECT; ++q)
      for (int k = 0; k < COLL_GPU_P2P_CONNS; ++k)
        ASSERT_TRUE(same_conn(part.peers[q].send[k], none) && same_conn(part.peers[q].recv[k], none)) << q;
    // about half the peers mapped, the others as if on another node
    std::vector<void *> view(v.base);
    for (int q = 0; q < n; ++q)
      if (q != r && rng()() % 2) view[q] = nullptr;
    coll_gpu_dev_ipc_conns(&comm, &part, view.data());
    for (int ch = 0; ch < v.layout.nchannels; ++ch) {
      const coll_gpu_dev_channel_t &k = part.channels[ch], &f = full.channels[ch];
      ASSERT_TRUE(same_conn(k.send, view[k.next] != nullptr ? f.send : none)) << "channel " << ch;
      ASSERT_TRUE(same_conn(k.recv, view[k.prev] != nullptr ? f.recv : none)) << "channel " << ch;
    }
    for (int q = 0; n > 2 && n <= COLL_GPU_MAX_DIRECT && q < n; ++q)
      for (int k = 0; q != r && k < COLL_GPU_P2P_CONNS; ++k) {
        ASSERT_TRUE(same_conn(part.peers[q].send[k], view[q] != nullptr ? full.peers[q].send[k] : none)) << q;
        ASSERT_TRUE(same_conn(part.peers[q].recv[k], view[q] != nullptr ? full.peers[q].recv[k] : none)) << q;
      }
  }
}

TEST(DevComm, RefusesBadRings) {
  Views v(4, 2);
  v.nrings = 1;
  v.ring(0)[0] = 0, v.ring(0)[1] = 1, v.ring(0)[2] = 1, v.ring(0)[3] = 3;  // rank 2 missing
  EXPECT_EQ(COLL_GPU_INTERNAL_ERROR, v.setup(0));
  EXPECT_STREQ("a ring that does not hold every rank once", coll_gpu_kernels_error());
  v.ring(0)[2] = 4;  // not a rank
  EXPECT_EQ(COLL_GPU_INTERNAL_ERROR, v.setup(0));
  v.ring(0)[2] = 2;
  EXPECT_EQ(COLL_GPU_SUCCESS, v.setup(0));
  v.layout.nranks = 5;  // not the communicator's
  EXPECT_EQ(COLL_GPU_INTERNAL_ERROR, v.setup(0));
  v.layout.nranks = 4;
  v.layout.nchannels = COLL_GPU_MAX_CHANNELS + 1;
  EXPECT_EQ(COLL_GPU_INTERNAL_ERROR, v.setup(0));
  v.layout.nchannels = 2;
  v.span = 0;  // no channel runs a ring
  EXPECT_EQ(COLL_GPU_INTERNAL_ERROR, v.setup(0));
}

// The lingering kernel's call record as coll_gpu_linger_post writes it, against the layout its kernel reads
// (kernels/allreduce_oneshot.cu): every word the call's ticket in its high half, and in its low half the buffers,
// the count and the sequence number, word 7 the type, op, collective and root and bit 18 (counts follow) for a
// reduce-scatter of counts, words 8-9 the block distance, or words 8-15 every rank's count. A call that bitwise
// reduces integers goes as bytes. Random calls of every collective, on a record poisoned before each.
namespace linger {

constexpr uint32_t kCounts = 1u << 18, kExit = 1u << 17;

size_t width(coll_gpu_dtype_t t, coll_gpu_redop_t op) {
  const bool bits = op == COLL_GPU_BAND || op == COLL_GPU_BOR || op == COLL_GPU_BXOR;
  return bits && t <= COLL_GPU_UINT64 ? coll_gpu_dtype_size(t) : 1;
}

void poison(coll_gpu_dev_status_t &st) {
  for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k) st.call[k] = 0x5a5a5a5a5a5a5a5aull + k;
}

bool poisoned(const coll_gpu_dev_status_t &st) {
  for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k)
    if (st.call[k] != 0x5a5a5a5a5a5a5a5aull + k) return false;
  return true;
}

}  // namespace linger

TEST(Linger, RecordCarriesTheCallAndEachRanksCount) {
  auto &r = rng();
  coll_gpu_dev_status_t *st = new coll_gpu_dev_status_t();
  for (int it = 0; it < 2000; ++it) {
    coll_gpu_work_t w = {};
    w.coll = (coll_gpu_coll_t)(r() % COLL_GPU_NCOLLS);
    w.type = (coll_gpu_dtype_t)(r() % COLL_GPU_NTYPES);
    w.op = (coll_gpu_redop_t)(r() % (COLL_GPU_BXOR + 1));
    w.root = (int)(r() % COLL_GPU_MAX_DIRECT);
    w.sendbuf = (const void *)(uintptr_t)(r() & ~15ull);
    w.recvbuf = (void *)(uintptr_t)(r() & ~15ull);
    w.count = r() % (1u << 20);
    w.block = r() % (1ull << 40);
    w.seq = r();
    const int nranks = 2 + (int)(r() % (COLL_GPU_MAX_DIRECT - 1));
    const bool rs = w.coll == COLL_GPU_COLL_REDUCE_SCATTER, counted = rs && r() % 2 == 0;
    size_t at = 0, longest = 0;
    for (int q = 0; rs && q < nranks; ++q) {
      const size_t n = counted ? (r() % 4 == 0 ? 0 : r() % 5000) : w.count;
      w.blocks[q] = coll_gpu_range_t{counted ? at : q * w.count, n};
      at += n;
      longest = std::max(longest, n);
    }
    if (rs) w.block = 0;
    if (rs && counted) w.count = longest;
    if (rs && !counted) w.each = w.count;
    const uint32_t ticket = (uint32_t)r() | 1;
    linger::poison(*st);
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_linger_post(st, ticket, &w));
    const size_t wd = linger::width(w.type, w.op);
    uint32_t d[COLL_GPU_LINGER_WORDS];
    for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k) {
      ASSERT_EQ(ticket, (uint32_t)(st->call[k] >> 32)) << "word " << k;
      d[k] = (uint32_t)st->call[k];
    }
    EXPECT_EQ((uint64_t)(uintptr_t)w.sendbuf, (uint64_t)d[1] << 32 | d[0]);
    EXPECT_EQ((uint64_t)(uintptr_t)w.recvbuf, (uint64_t)d[3] << 32 | d[2]);
    EXPECT_EQ(w.count * wd, d[4]);
    EXPECT_EQ(w.seq, (uint64_t)d[6] << 32 | d[5]);
    EXPECT_EQ(wd == 1 ? (uint32_t)w.type : (uint32_t)COLL_GPU_UINT8, d[7] & 0xff);
    EXPECT_EQ((uint32_t)w.op, (d[7] >> 8) & 0xff);
    EXPECT_EQ((uint32_t)w.coll, (d[7] >> 20) & 0xf);
    EXPECT_EQ((uint32_t)w.root, d[7] >> 24);
    EXPECT_EQ(counted ? linger::kCounts : 0u, d[7] & (0xfu << 16)) << "what to do, and whether counts follow";
    if (counted) {
      for (int q = 0; q < COLL_GPU_MAX_DIRECT; ++q)
        EXPECT_EQ(q < nranks ? w.blocks[q].count * wd : 0, d[8 + q]) << "rank " << q << "'s count";
    } else {
      EXPECT_EQ(rs ? w.each * wd : w.block, (uint64_t)d[9] << 32 | d[8]);
      for (int k = 10; k < COLL_GPU_LINGER_WORDS; ++k) EXPECT_EQ(0u, d[k]) << "word " << k;
    }
  }
  delete st;
}

// A reduce-scatter of counts whose non-empty blocks do not follow each other from sendbuf, or whose count does not
// fit 32 bits, is refused, and the record keeps what it held: the kernel would take other blocks.
TEST(Linger, RefusesBlocksTheRecordCannotCarry) {
  auto &r = rng();
  coll_gpu_dev_status_t *st = new coll_gpu_dev_status_t();
  for (int it = 0; it < 200; ++it) {
    coll_gpu_work_t w = {};
    w.coll = COLL_GPU_COLL_REDUCE_SCATTER;
    w.type = COLL_GPU_FLOAT;
    w.op = COLL_GPU_SUM;
    const int nranks = 2 + (int)(r() % (COLL_GPU_MAX_DIRECT - 1));
    size_t at = 0;
    for (int q = 0; q < nranks; ++q) {
      w.blocks[q] = coll_gpu_range_t{at, 1 + r() % 1000};
      at += w.blocks[q].count;
      w.count = std::max(w.count, w.blocks[q].count);
    }
    linger::poison(*st);
    ASSERT_EQ(COLL_GPU_SUCCESS, coll_gpu_linger_post(st, 7, &w));  // as drawn: taken
    const int q = 1 + (int)(r() % (nranks - 1));
    coll_gpu_work_t bad = w;
    switch (it % 3) {
      case 0:  // a gap before block q
        bad.blocks[q].begin += 1 + r() % 16;
        break;
      case 1:  // block q where the one before it is
        bad.blocks[q].begin = w.blocks[q - 1].begin;
        break;
      default:  // more elements than 32 bits count
        bad.blocks[q].count = (1ull << 32) + r() % 1000;
        for (int k = q + 1; k < nranks; ++k) bad.blocks[k].begin = bad.blocks[k - 1].begin + bad.blocks[k - 1].count;
        break;
    }
    linger::poison(*st);
    EXPECT_EQ(COLL_GPU_INTERNAL_ERROR, coll_gpu_linger_post(st, 7, &bad)) << "case " << it % 3;
    EXPECT_TRUE(linger::poisoned(*st)) << "case " << it % 3 << ": the refused call wrote the record";
    // an empty block may start anywhere: it moves nothing
    coll_gpu_work_t empty = w;
    empty.blocks[q].count = 0;
    empty.blocks[q].begin = r() % 100000;
    for (int k = q + 1; k < nranks; ++k) empty.blocks[k].begin -= w.blocks[q].count;
    linger::poison(*st);
    EXPECT_EQ(COLL_GPU_SUCCESS, coll_gpu_linger_post(st, 7, &empty));
    EXPECT_EQ(0u, (uint32_t)st->call[8 + q]);
  }
  delete st;
}

// The order to leave: every word the ticket, word 7 the exit bit alone.
TEST(Linger, StopIsTheExitBitAlone) {
  coll_gpu_dev_status_t *st = new coll_gpu_dev_status_t();
  const uint32_t ticket = (uint32_t)rng()() | 1;
  linger::poison(*st);
  coll_gpu_linger_stop(st, ticket);
  for (int k = 0; k < COLL_GPU_LINGER_WORDS; ++k)
    EXPECT_EQ((uint64_t)ticket << 32 | (k == 7 ? linger::kExit : 0u), st->call[k]) << "word " << k;
  delete st;
}

}  // namespace
