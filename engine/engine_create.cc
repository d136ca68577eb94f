/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's creation, sharing and release (engine/engine.h, engine/engine_impl.h).
 *
 * Creation, on every rank, in the same order (every bootstrap call is made even after a local failure,
 * so the collective calls always match):
 *   0. allgather of the offers: an engine of this process the communicator could share (engine.h), or
 *      none; when every rank offers the same one, the communicator takes it and creation ends here;
 *   1. local set-up on the buffer's device: scratch, status words, streams, the scratch's IPC handle;
 *   2. allgather of peer info: at most COLL_GPU_MAX_COMM_RANKS ranks, equal parameters, every rank set up;
 *      otherwise every rank reaches the same "unavailable". The ranks' nodes: their hosts, or with virtual
 *      nodes blocks of consecutive ranks of a host;
 *   3. nodes and channels: the rings (every rank's view of the node, merged, and the ring search,
 *      engine/rings.h; with several nodes each ring visits them one after another, and the rings take turns
 *      at which of a node's ranks start and end its run), and the ranks this rank's kernels have
 *      connections with. With several nodes, or more than COLL_GPU_MAX_DIRECT ranks,
 *      only ring algorithms run, and a rank connects to its rings' neighbours only (to every rank of
 *      another node too for the pairwise alltoall, which runs up to COLL_GPU_MAX_DIRECT ranks);
 *   4. the transports (engine/transport.h), each connecting the peers it reaches: with several nodes NET
 *      (the network proxies start, their addresses are allgathered, each connects to the ranks of other
 *      nodes it has connections with, and everyone says whether it could), then IPC (allgather of the
 *      IPC handles; each rank opens those of the peers on its node it has connections with) or, where the
 *      node's GPUs lack peer access (choose_node_transport, at the end of step 3), SHM (the scratch in pinned
 *      shared host memory: allgather of the segments' names, each rank maps and pins its node peers');
 *   5. the layout: the kernels' view of the communicator (kernels/kernels.h), each transport's
 *      connections in it (the peers' scratch on this node, NET FIFOs moved by the proxy to other nodes),
 *      uploaded into the scratch;
 *   6. allgather of the results of 4 and 5;
 *   7. on one node of at most COLL_GPU_MAX_DIRECT ranks, the node's mailbox of the zero-copy alltoall
 *      (engine/mailbox.h; without it the alltoall goes through the FIFOs).
 * Per rank, the device memory (the scratch) grows with the ring orders' 2 bytes a rank only, the IPC
 * mappings and NET connections with the rings' neighbours; host bookkeeping keeps a few bytes a rank
 * (processes, nodes).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "common/hash.h"
#include "engine/engine_impl.h"
#include "engine/nodes.h"
#include "proxy/trace.h"

using coll_gpu::ContextScope;
using coll_gpu::EngineId;
using coll_gpu::entered;

namespace {

uint64_t config_hash(const coll_gpu_engine_config_t &c) {
  const uint64_t v[] = {(uint64_t)c.tune.nchannels,
                        (uint64_t)c.tune.max_channels,
                        c.tune.oneshot_max_bytes,
                        c.tune.twoshot_max_bytes,
                        c.tune.ring_chunk_bytes,
                        c.slot_bytes,
                        c.scratch_max_bytes,
                        (uint64_t)c.virtual_nodes,
                        (uint64_t)(int64_t)c.proxy_net,
                        c.zero_copy_min_bytes,
                        c.zero_copy_map_bytes,
                        c.zero_copy_engines_min_bytes,
                        (uint64_t)(int64_t)c.node_transport,
                        (uint64_t)c.tune.nrules};
  uint64_t h = coll_gpu_hash(v, sizeof(v), 0);
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    const uint64_t forced[] = {(uint64_t)(int64_t)c.tune.algorithm[k], (uint64_t)(int64_t)c.tune.protocol[k]};
    h = coll_gpu_hash(forced, sizeof(forced), h);
  }
  for (int i = 0; i < c.tune.nrules; ++i) {
    const coll_gpu_tune_rule_t &r = c.tune.rules[i];
    const uint64_t rule[] = {(uint64_t)r.coll, r.from, r.to, (uint64_t)r.algo};
    h = coll_gpu_hash(rule, sizeof(rule), h);
  }
  return h;
}

// What each rank says at step 0: the engine it offers (none: all zero), who it is, for the name of a
// new one, and whether its process has any engine over the same members (offered or not).
struct Offer {
  EngineId offer;
  EngineId self;
  uint32_t known;
  uint32_t pad;
  uint64_t unagreed;  // an engine of its own offered: its calls without an agreement so far
};

std::atomic<uint32_t> creations{0};  // this process's engine creations, for their names

// The engines this process may share (members != 0), and every engine's sharing fields.
pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
coll_gpu_engine *registry = nullptr;

bool id_before(const EngineId &a, const EngineId &b) {
  if (a.host != b.host) return a.host < b.host;
  return a.pid != b.pid ? a.pid < b.pid : a.serial < b.serial;
}

uint64_t claim_word(uint32_t owner, uint64_t count) { return count == 0 ? 0 : (uint64_t)owner << 32 | count; }

// Which of two engines a rank offers: an engine of its own first (there is one at most over the same
// processes), then the first by name, so that ranks holding the same ones offer the same.
bool offer_before(const coll_gpu_engine *e, const coll_gpu_engine *best) {
  if (best == nullptr) return true;
  if (e->own != best->own) return e->own;
  return id_before(e->id, best->id);
}

// Step 0: the engine this rank offers, claimed for the offer (once) so that no other communicator takes it
// meanwhile; nullptr: none. One no call counts on: an engine of its own only where share.own_ok, so that its
// first communicator's calls do not overlap the offer, and they do not come after it on one rank and before it
// on another (the offers then say how many there were).
coll_gpu_engine *registry_offer(const coll_gpu_engine_share_t &share, const coll_gpu_bootstrap_t *b, uint64_t config,
                                const coll_gpu_meminfo_t &mem) {
  pthread_mutex_lock(&registry_lock);
  coll_gpu_engine *best = nullptr;
  for (coll_gpu_engine *e = registry; e != nullptr; e = e->next_shared)
    if (e->members == share.members && (!e->own || share.own_ok) && e->rank == b->rank && e->nranks == b->size &&
        e->config == config && coll_gpu_engine_owns(e, &mem) && (uint32_t)e->claim.load() == 0 && !e->failed.load() &&
        offer_before(e, best))
      best = e;
  uint64_t free_word = best != nullptr ? best->claim.load() : 0;
  if (best != nullptr &&
      ((uint32_t)free_word != 0 || !best->claim.compare_exchange_strong(free_word, claim_word(share.owner, 1))))
    best = nullptr;  // a claim came first
  pthread_mutex_unlock(&registry_lock);
  return best;
}

// Whether this process has an engine over these members, offered or its communicator's own.
bool registry_knows(uint64_t members) {
  pthread_mutex_lock(&registry_lock);
  coll_gpu_engine *e = registry;
  while (e != nullptr && e->members != members) e = e->next_shared;
  pthread_mutex_unlock(&registry_lock);
  return e != nullptr;
}

// The offer ends: taken (the communicator holds a reference and its claims) or not (claims as before: none).
void registry_settle(coll_gpu_engine *e, const coll_gpu_engine_share_t *share, bool taken) {
  if (e == nullptr) return;
  pthread_mutex_lock(&registry_lock);
  if (taken) ++e->refs;
  if (taken && e->own) e->own_taken.store(true);
  e->claim.store(taken ? claim_word(share->owner, share->claims) : 0);  // only the offer's claim was on it
  pthread_mutex_unlock(&registry_lock);
}

// A new engine: claimed as share says, and offered from now on when it has members.
void registry_add(coll_gpu_engine *e, const coll_gpu_engine_share_t *share) {
  pthread_mutex_lock(&registry_lock);
  if (share != nullptr) {
    e->claim.store(claim_word(share->owner, share->claims));
    e->members = share->members;
  }
  if (e->members != 0) {
    e->next_shared = registry;
    registry = e;
  }
  pthread_mutex_unlock(&registry_lock);
}

}  // namespace

// Step 1: this rank's resources but the scratch, whose size the steps after the peer exchange decide.
coll_gpu_status_t coll_gpu_engine::setup_local(char *why, size_t len) {
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, len));
  CUDA_CHECK(coll_gpu_host_mapped_alloc(status_mem.out(), &status_dev, sizeof(coll_gpu_dev_status_t)), why, len);
  status = (coll_gpu_dev_status_t *)status_mem.get();
  CUDA_CHECK(coll_gpu_host_mapped_alloc(waiting_mem.out(), &waiting_dev, (size_t)nranks), why, len);
  waiting = (volatile uint8_t *)waiting_mem.get();
  CUDA_CHECK(coll_gpu_stream_create(stream.out(), 0), why, len);
  CUDA_CHECK(coll_gpu_stream_create(linger_stream.out(), 1), why, len);
  return COLL_GPU_SUCCESS;
}

// Step 3: the ranks this rank's kernels have connections with (linked): up to COLL_GPU_MAX_DIRECT ranks every
// peer (the direct algorithms and the pairwise alltoall reach them all), otherwise its neighbours in each ring.
void coll_gpu_engine::link_neighbours() {
  for (int r = 0; r < nranks; ++r) linked[r] = nranks <= COLL_GPU_MAX_DIRECT;
  for (int i = 0; i < rings.nrings; ++i) {
    const uint16_t *ring = coll_gpu_ring(&rings, i);
    int pos = 0;
    while (ring[pos] != rank) ++pos;
    linked[ring[(pos + 1) % nranks]] = linked[ring[(pos + nranks - 1) % nranks]] = 1;
  }
  linked[rank] = 0;
}

// Step 3, last: whether SHM serves the node's peers instead of IPC, alike on every rank: where the parameter says
// so, or (auto) where some rank's GPU has no peer access to the GPU of a rank of its node it connects to (a GPU not
// visible to this process is taken to have it: if CUDA IPC then fails, the call stages and says so). Auto costs an
// allgather. With SHM the zero-copy calls are off: the peers' own buffers cannot be mapped.
void coll_gpu_engine::choose_node_transport(const coll_gpu::TransportLinks &links) {
  const coll_gpu_peer_t *peers = links.peers;
  shm_node = cfg.node_transport == COLL_GPU_ENGINE_NODE_SHM;
  if (cfg.node_transport == COLL_GPU_ENGINE_NODE_AUTO) {
    int lacks = -1;  // the first peer whose GPU this rank's cannot reach
    for (int r = 0; r < nranks && lacks < 0; ++r) {
      int can = 0;
      if (links.node_peer(r, rank) && coll_gpu_peer_access(mem.device, peers[r].busid, &can) == COLL_GPU_SUCCESS &&
          !can)
        lacks = r;
    }
    int bad = -1;
    shm_node = !coll_gpu_all_ok(links.b, lacks >= 0 ? 1 : 0, &bad);
    if (lacks >= 0 && cfg.log != nullptr)
      cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
              "comm %s: no CUDA peer access from this rank's GPU to rank %d's (%s)", cfg.name, lacks,
              peers[lacks].busid);
  }
  cfg.tune.shm = shm_node ? 1 : 0;  // the tuning model's costs for the link
  if (shm_node && cfg.log != nullptr)
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
            "comm %s: the ranks of a node reach each other through shared host memory (SHM, %s): no zero-copy calls",
            cfg.name,
            cfg.node_transport == COLL_GPU_ENGINE_NODE_SHM ? "coll_gpu_node_transport shm" : "no peer access");
}

// Step 4, first: the layout for the channels the communicator runs, within cfg.scratch_max_bytes, and the scratch,
// exported for the peers that map it (device memory for IPC, a shared memory segment of pinned host memory for SHM),
// and over several nodes the memory an allreduce or reduce-scatter gathers its inputs into (COLL_GPU_ALGO_ALLGATHER).
// The same layout on every rank (the same parameters and rank count, the same channels).
coll_gpu_status_t coll_gpu_engine::alloc_scratch(char *why, size_t len) {
  // rings only over several nodes (beyond COLL_GPU_MAX_DIRECT ranks the layout has no direct parts anyway)
  if (multinode) layout.ll_bytes = layout.twoshot_bytes = 0;
  const size_t want = coll_gpu_scratch_bytes(&layout);
  if (!coll_gpu_tune_fit_layout(&layout, cfg.scratch_max_bytes)) {
    coll_gpu_say(why, len,
                 "%zu bytes of scratch at %d ranks do not fit coll_gpu_scratch_max_bytes (%zu) even with one ring "
                 "channel: raise it, or lower coll_gpu_oneshot_max_bytes and coll_gpu_twoshot_max_bytes",
                 want, nranks, cfg.scratch_max_bytes);
    return COLL_GPU_UNAVAILABLE;
  }
  bound_channels(layout.nchannels);
  if (layout.slot_bytes != cfg.slot_bytes && cfg.log != nullptr)
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
            "comm %s: %zu bytes of scratch bounded by coll_gpu_scratch_max_bytes (%zu): %d ring channels of %zu-byte "
            "slots",
            cfg.name, want, cfg.scratch_max_bytes, layout.nchannels, layout.slot_bytes);
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, len));
  const size_t bytes = coll_gpu_scratch_bytes(&layout);
  if (multinode) CUDA_CHECK(coll_gpu_dev_alloc(gathered.out(), COLL_GPU_TUNE_GATHER_BYTES), why, len);
  if (shm_node) return shm.set_own(bytes, why, len);
  CUDA_CHECK(coll_gpu_dev_alloc(scratch.out(), bytes), why, len);
  return ipc.set_own(scratch.get(), why, len);
}

// Step 4: every transport connects the peers it reaches (NET, with several nodes, the ranks of the others;
// IPC this node's), each making its collective calls whatever came before (st: this rank's status so far);
// the first failure is the reason.
coll_gpu_status_t coll_gpu_engine::connect(const coll_gpu::TransportLinks &links, coll_gpu_status_t st, char *why,
                                           size_t len) {
  char later[8];  // a later transport's reason, once one failed
  for (int t = 0; t < ntransports; ++t) {
    const coll_gpu_status_t one = transports[t].connect(transports[t].self, links, st == COLL_GPU_SUCCESS ? why : later,
                                                        st == COLL_GPU_SUCCESS ? len : sizeof(later));
    if (st == COLL_GPU_SUCCESS) st = one;
  }
  return st;
}

// Step 5: the kernels' view of the communicator, each transport's connections in it, uploaded into the
// scratch.
coll_gpu_status_t coll_gpu_engine::setup_conns(char *why, size_t len) {
  ContextScope ctx(mem);
  COLL_GPU_CHECK(entered(ctx, mem, why, len));
  coll_gpu::HostPtr<coll_gpu_dev_conns_t[]> conns = coll_gpu::make_host_array<coll_gpu_dev_conns_t>(1);
  if (conns == nullptr) {
    coll_gpu_say(why, len, "out of host memory");
    return COLL_GPU_SYSTEM_ERROR;
  }
  CUDA_CHECK(coll_gpu_dev_comm_setup(&comm, conns.get(), rank, nranks, &layout, shm_node ? shm.view() : ipc.view(),
                                     rings.nrings, rings.span, rings.order, (coll_gpu_dev_status_t *)status_dev,
                                     (volatile uint8_t *)waiting_dev, cfg.wait.timeout_ns, cfg.linger_ns),
             why, len);
  for (int t = 0; t < ntransports; ++t)
    COLL_GPU_CHECK(transports[t].fill(transports[t].self, comm, conns.get(), why, len));
  CUDA_CHECK(coll_gpu_dev_comm_upload(&comm, conns.get(), rings.nrings, rings.order), why, len);
  comm.max_blocks = cfg.tune.max_blocks;  // the one-shot kernels' bound where ranks share a GPU
  return COLL_GPU_SUCCESS;
}

// Whether the proxy found a peer gone or the network broken; marks the peer in gone[], and says what
// happened in why (if not NULL).
bool coll_gpu_engine::net_failed(uint8_t *gone, char *why, size_t len) const {
  int peer = -1;
  char what[256];
  if (net.failed(&peer, what, sizeof(what)) == COLL_GPU_SUCCESS) return false;
  if (peer >= 0 && peer < nranks) gone[peer] = 1;
  if (why != nullptr) coll_gpu_say(why, len, "%s", what);
  return true;
}

void coll_gpu_engine::log_channels(const coll_gpu_peer_t &me) const {
  if (cfg.log == nullptr) return;
  cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
          "comm %s: GPU collectives on device %d (%s), %d ranks, %zu bytes of scratch", cfg.name, mem.device, me.busid,
          nranks, coll_gpu_scratch_bytes(&layout));
  if (multinode) {
    int nodes = 0, hops = 0;
    const uint16_t *ring = coll_gpu_ring(&rings, 0);
    for (int r = 0; r < nranks; ++r) nodes += node[r] == r;
    for (int i = 0; i < nranks; ++i) hops += node[ring[i]] != node[ring[(i + 1) % nranks]];
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
            "comm %s: %d nodes%s; %d of each ring's %d hops over NET (the network proxy, UCX, %d threads), ring "
            "algorithms only, %d channels",
            cfg.name, nodes, cfg.virtual_nodes > 0 ? " (virtual)" : "", hops, nranks, net.threads(), layout.nchannels);
  }
  if (rings.speed > 0) {
    const double scale = coll_gpu_tune_link_scale(&cfg.tune);
    char scaled[96] = "";
    if (scale < 1.0)
      snprintf(scaled, sizeof(scaled), "; the tuning model's bandwidths at %.3fx, against its constants' %.1f", scale,
               COLL_GPU_TUNE_REF_GBPS);
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "comm %s: %d ring(s) from the topology, the first at %.1f GB/s%s",
            cfg.name, rings.nrings, rings.speed, scaled);
  }
  const size_t size = (size_t)nranks * 7 + 1;  // " 32767" a rank
  coll_gpu::HostPtr<char[]> line = coll_gpu::make_host_array<char>(size);
  for (int ch = 0; ch < cfg.tune.max_channels && line != nullptr; ++ch) {
    size_t len = 0;
    for (int r = 0; r < nranks; ++r)
      len += (size_t)snprintf(line.get() + len, size - len, " %d",
                              coll_gpu_ring(&rings, coll_gpu_channel_ring(ch, rings.nrings, rings.span))[r]);
    cfg.log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "Channel %02d/%02d :%s", ch, cfg.tune.max_channels, line.get());
  }
}

coll_gpu_status_t coll_gpu_engine_create(const coll_gpu_bootstrap_t *b, const coll_gpu_engine_config_t *cfg,
                                         const coll_gpu_meminfo_t *mem, const coll_gpu_engine_share_t *share,
                                         coll_gpu_engine_t **out, char *why, size_t why_len) {
  *out = nullptr;
  // 0. offers
  const bool may_share = share != nullptr && share->members != 0 && b->size >= 2 && b->size <= COLL_GPU_MAX_COMM_RANKS;
  coll_gpu_engine *offered = may_share ? registry_offer(*share, b, config_hash(*cfg), *mem) : nullptr;
  Offer mine = {};
  if (offered != nullptr) {
    mine.offer = offered->id;
    mine.unagreed = offered->unagreed.load();
  }
  mine.known = may_share && registry_knows(share->members);
  mine.self = {coll_gpu_host_id(), (uint32_t)getpid(), creations.fetch_add(1) + 1};
  coll_gpu::HostPtr<Offer[]> offers = coll_gpu::make_host_array<Offer>(b->size);
  if (offers == nullptr || b->allgather(b->ctx, &mine, offers.get(), sizeof(Offer)) != 0) {
    registry_settle(offered, share, false);
    snprintf(why, why_len, "the offer allgather failed");
    return COLL_GPU_UNAVAILABLE;
  }
  bool same = !offers[0].offer.none();
  for (int r = 1; r < b->size && same; ++r)
    same = offers[r].offer == offers[0].offer && offers[r].unagreed == offers[0].unagreed;
  bool first = may_share;  // no rank's process has an engine over these members yet
  for (int r = 0; r < b->size && first; ++r) first = offers[r].known == 0;
  const bool takes_own = same && coll_gpu_engine_own(offered);
  registry_settle(offered, share, same);
  if (same) {
    if (cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: shares the GPU resources of comm %s (scratch, streams, network proxy): %d communicators",
               cfg->name, offered->name, coll_gpu_engine_refs(offered));
    if (takes_own && cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: GPU resources shared with comm %s from now on: its blocking calls agree on their path too",
               offered->name, cfg->name);
    *out = offered;
    return COLL_GPU_SUCCESS;
  }
  const EngineId id = offers[0].self;
  offers.reset();

  coll_gpu::HostPtr<coll_gpu_engine> e = coll_gpu::make_host<coll_gpu_engine>(*cfg, b->rank, b->size, *mem);
  coll_gpu::HostPtr<coll_gpu_peer_t[]> peers = coll_gpu::make_host_array<coll_gpu_peer_t>(b->size);
  int bad = -1;
  snprintf(why, why_len, "out of host memory");
  // a local failure still makes every collective step below, with ok = 0
  bool local_ok = e != nullptr && peers != nullptr && e->alloc_ranks();
  if (e != nullptr) {
    e->layout.nranks = b->size;
    e->layout.ll_bytes = cfg->tune.oneshot_max_bytes;
    e->layout.twoshot_bytes = cfg->tune.twoshot_max_bytes;
    e->layout.slot_bytes = cfg->slot_bytes;
    e->layout.nchannels = cfg->tune.max_channels;
  }

  // 1. local set-up (only where the communicator can possibly qualify)
  coll_gpu_peer_t me = {};
  me.host = coll_gpu_host_id();
  me.pid = (int32_t)getpid();
  me.device = mem->device;
  me.config_hash = config_hash(*cfg);
  me.rdma = coll_gpu_host_has_rdma();
  if (local_ok && b->size >= 2 && b->size <= COLL_GPU_MAX_COMM_RANKS) {
    local_ok = coll_gpu_device_identity(mem->device, (char *)me.uuid, me.busid, &me.sms) == COLL_GPU_SUCCESS &&
               e->setup_local(why, why_len) == COLL_GPU_SUCCESS;
  }
  me.ok = local_ok;

  // 2. peer info
  if (peers == nullptr) return COLL_GPU_UNAVAILABLE;
  if (coll_gpu_peers_exchange(b, &me, peers.get()) != COLL_GPU_SUCCESS) {
    snprintf(why, why_len, "the peer info allgather failed");
    return COLL_GPU_UNAVAILABLE;
  }
  if (b->size < 2) {
    snprintf(why, why_len, "a single rank needs no GPU path");
    return COLL_GPU_UNAVAILABLE;
  }
  if (b->size > COLL_GPU_MAX_COMM_RANKS) {
    snprintf(why, why_len, "%d ranks: the GPU path takes at most %d", b->size, COLL_GPU_MAX_COMM_RANKS);
    return COLL_GPU_UNAVAILABLE;
  }
  for (int r = 0; r < b->size; ++r) {
    if (peers[r].config_hash != peers[0].config_hash) {
      snprintf(why, why_len, "rank %d has other coll_gpu parameters than rank 0: set them alike", r);
      return COLL_GPU_UNAVAILABLE;
    }
    if (!peers[r].ok) {
      if (r != b->rank) snprintf(why, why_len, "rank %d could not set up its GPU", r);
      return COLL_GPU_UNAVAILABLE;
    }
  }

  const int nodes =
      coll_gpu_nodes_assign(peers.get(), b->size, cfg->virtual_nodes, e->node.get(), e->nodes_scratch.get());
  e->multinode = nodes > 1;
  int here = 0;  // ranks on this host: they share its CPUs
  for (int r = 0; r < b->size; ++r) here += peers[r].host == peers[b->rank].host;
  if (e->multinode) {  // on a few channels (the rings' turns below tell how many)
    e->own = first;
    e->cfg.tune.net = 1;
    e->cfg.tune.nodes = nodes;
    e->bound_channels(kNetMaxChannels);
  }
  e->cfg.tune.min_sms = peers[0].sms;  // the same on every rank, for the same choices
  for (int r = 0; r < b->size; ++r) {
    if (peers[r].sms < e->cfg.tune.min_sms) e->cfg.tune.min_sms = peers[r].sms;
    e->pid[r] = peers[r].pid;
    // a process of another host is not checked (its pid means nothing here): the proxy watches it
    e->visible[r] = r != b->rank && peers[r].host == peers[b->rank].host && coll_gpu_pid_visible(peers[r].pid);
  }
  // Ranks that share a GPU (several a GPU, under MPS) run their kernels on it at once, and a block waits for
  // its peers' blocks: all their blocks must fit on the multiprocessors together, at one each at worst.
  const int gpu_ranks = coll_gpu_gpu_ranks(peers.get(), b->size, e->nodes_scratch.get());
  if (gpu_ranks > 1 && e->cfg.tune.min_sms > 1) {
    int most = (e->cfg.tune.min_sms - 1) / gpu_ranks;
    if (most < 1) most = 1;
    e->cfg.tune.max_blocks = most;
    e->bound_channels(most);
    if (cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
               "comm %s: up to %d ranks share a GPU: at most %d blocks a kernel, %d channels", cfg->name, gpu_ranks,
               most, e->cfg.tune.max_channels);
  }

  // 3. the rings
  if (coll_gpu_rings_compute(b, peers.get(), &cfg->topo, &e->rings, why, why_len) != COLL_GPU_SUCCESS)
    return COLL_GPU_UNAVAILABLE;
  if (why[0] != '\0' && cfg->log != nullptr)
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "comm %s: rings in rank order: %s", cfg->name, why);
  if (e->multinode) {
    coll_gpu_rings_by_node(&e->rings, e->node.get(), e->nodes_scratch.get());
    const int turns =
        coll_gpu_rings_rotate_nodes(&e->rings, e->node.get(), kNetMaxChannels / kNetChannels, e->nodes_scratch.get());
    e->bound_channels(kNetChannels * turns);
    e->run_turns = coll_gpu_rings_run_turns(&e->rings, e->node.get(), e->nodes_scratch.get());
  }
  coll_gpu_rings_trees(&e->rings, e->node.get(), e->rank, e->tree_up, e->tree_down);
  e->link_neighbours();
  const coll_gpu::TransportLinks links = {b, peers.get(), e->node.get(), e->linked.get()};
  e->choose_node_transport(links);
  e->cfg.tune.link_gbps = e->rings.speed;  // the same rings, so the same choices, on every rank

  // 4. the scratch, then the transports: NET (the network proxies, connected to the ranks of other nodes), then
  // IPC or SHM
  const coll_gpu_status_t allocated = e->alloc_scratch(why, why_len);
  if (e->multinode) {
    e->rings.span = std::max(1, e->layout.nchannels / e->rings.nrings);  // a run of channels a ring
    // a call runs on every ring (coll_gpu_work_t's run) from as many blocks as its first reach them all
    const int nrings = e->rings.nrings, span = e->rings.span;
    unsigned reached = 0;
    while (e->run_turns > 0 && reached != (1u << nrings) - 1 && e->run_blocks < e->layout.nchannels)
      reached |= 1u << coll_gpu_channel_ring(coll_gpu_work_channel(0, nrings, span, e->run_blocks++), nrings, span);
    if (reached != (1u << nrings) - 1) e->run_turns = 0;
    int most = e->layout.nchannels < COLL_GPU_ENGINE_MAX_PROXY_THREADS ? e->layout.nchannels
                                                                       : COLL_GPU_ENGINE_MAX_PROXY_THREADS;
    if (cfg->proxy_threads > 0 && cfg->proxy_threads < most) most = cfg->proxy_threads;
    if (cfg->proxy_threads <= 0 && most > kAutoProxyThreads) most = kAutoProxyThreads;
    // the same on every rank (the threads a rank starts may be fewer, by its CPUs)
    e->cfg.tune.net_ring_channels = most;
    int rdma = 0;
    for (int r = 0; r < b->size; ++r) rdma |= peers[r].rdma != 0;
    const int kind = coll_gpu_net_choose(cfg->proxy_net, rdma, cfg->virtual_nodes);
    e->net.configure(cfg->proxy_threads > 0 ? most : 0, most, here, (coll_gpu_proxy_net_t)kind, cfg->socket_ifname,
                     cfg->net_ll_bytes, cfg->log);
    e->transports[e->ntransports++] = coll_gpu::transport_of(&e->net);
  }
  e->transports[e->ntransports++] = e->shm_node ? coll_gpu::transport_of(&e->shm) : coll_gpu::transport_of(&e->ipc);
  bool connected = e->connect(links, allocated, why, why_len) == COLL_GPU_SUCCESS;
  // 5. the layout: the kernels' view and its connections
  connected = connected && e->setup_conns(why, why_len) == COLL_GPU_SUCCESS;
  // 6. everyone connected everything
  if (!coll_gpu_all_ok(b, connected ? 0 : 1, &bad)) {
    if (connected) snprintf(why, why_len, "rank %d could not connect to its peers", bad);
    return COLL_GPU_UNAVAILABLE;
  }
  // 7. the zero-copy alltoall's mailbox: without it (alike on every rank) the alltoall goes through the FIFOs
  if (!e->multinode && b->size <= COLL_GPU_MAX_DIRECT && cfg->zero_copy_min_bytes > 0 && !e->shm_node) {
    char whynot[256];
    if (e->mbox.create(b, whynot, sizeof(whynot)) != COLL_GPU_SUCCESS && cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT, "comm %s: no zero-copy alltoall (%s)", cfg->name, whynot);
  }
  e->log_channels(me);
  if (e->own && cfg->log != nullptr)
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_INIT,
             "comm %s: GPU resources of its own (the first over its processes): blocking calls on them need no path "
             "agreement",
             cfg->name);
  e->id = id;
  e->config = me.config_hash;
  registry_add(e.get(), may_share ? share : nullptr);
  *out = e.release();
  return COLL_GPU_SUCCESS;
}

int coll_gpu_net_choose(int param, int any_rdma, int virtual_nodes) {
  if (param != COLL_GPU_ENGINE_PROXY_NET_AUTO) return param;
  return any_rdma || virtual_nodes > 0 ? COLL_GPU_ENGINE_PROXY_NET_UCX : COLL_GPU_ENGINE_PROXY_NET_SOCKETS;
}

void coll_gpu_engine_release(coll_gpu_engine_t *e) {
  if (e == nullptr) return;
  pthread_mutex_lock(&registry_lock);
  const bool last = --e->refs == 0;
  if (last && e->members != 0)
    for (coll_gpu_engine **at = &registry; *at != nullptr; at = &(*at)->next_shared)
      if (*at == e) {
        *at = e->next_shared;
        break;
      }
  pthread_mutex_unlock(&registry_lock);
  if (last) {
    coll_gpu::HostDelete<coll_gpu_engine>()(e);
    (void)coll_gpu_trace_write();  // its proxy stopped: the steps so far (proxy/trace.h), where recorded
  }
}

// One compare-and-swap each, no lock: every call takes and ends a claim.
int coll_gpu_engine_claim(coll_gpu_engine_t *e, uint32_t owner) {
  if (e->failed.load(std::memory_order_relaxed)) return 0;
  uint64_t w = e->claim.load(std::memory_order_acquire);
  do {
    if ((uint32_t)w != 0 && w >> 32 != owner) return 0;
  } while (!e->claim.compare_exchange_weak(w, claim_word(owner, (uint32_t)w + 1), std::memory_order_acq_rel,
                                           std::memory_order_acquire));
  return 1;
}

void coll_gpu_engine_unclaim(coll_gpu_engine_t *e, uint32_t owner) {
  uint64_t w = e->claim.load(std::memory_order_acquire);
  do {
    if ((uint32_t)w == 0 || w >> 32 != owner) return;
  } while (!e->claim.compare_exchange_weak(w, claim_word(owner, (uint32_t)w - 1), std::memory_order_acq_rel,
                                           std::memory_order_acquire));
}

int coll_gpu_engine_refs(const coll_gpu_engine_t *e) {
  pthread_mutex_lock(&registry_lock);
  const int refs = e->refs;
  pthread_mutex_unlock(&registry_lock);
  return refs;
}

int coll_gpu_engine_own(const coll_gpu_engine_t *e) { return e->own && !e->own_taken.load(); }

int coll_gpu_engine_unagreed(coll_gpu_engine_t *e) {
  if (!coll_gpu_engine_own(e)) return 0;
  e->unagreed.fetch_add(1);
  return 1;
}
