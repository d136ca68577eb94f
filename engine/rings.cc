/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The rings of a communicator's GPU collectives (engine/rings.h).
 */
#include "engine/rings.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <algorithm>

#include "common/hash.h"
#include "topo/topo.h"
#include "topo/topo_probe.h"

namespace {

// This process's description of its node, made once per topology file (the probe when none): probing
// takes tens of milliseconds.
pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;
char *view_text;
size_t view_len;
char *view_file;  // the file it came from, "" for the probe; nullptr before the first

void warn(const coll_gpu_topo_config_t *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void warn(const coll_gpu_topo_config_t *cfg, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (cfg->warn != nullptr) cfg->warn(msg);
}

bool set(const char *s) { return s != nullptr && s[0] != '\0'; }

/* Step 1: the topology file completed with NVML, else the probe. nullptr when neither gives anything. */
char *describe_node(const coll_gpu_topo_config_t *cfg, size_t *len) {
  char err[512];
  topo_xml_node_t *root = nullptr;
  topo_gpu_info_t nvml;
  const int have_nvml = topo_nvml_open(&nvml, err, sizeof(err)) == 0;
  if (!have_nvml && cfg->log != nullptr)
    cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "no NVML (%s): the topology has no NVLinks", err);
  if (set(cfg->file)) {
    if (topo_xml_load(cfg->file, &root, err, sizeof(err)) != 0) {
      warn(cfg, "coll_gpu_topo_file: %s. The topology is probed instead.", err);
      root = nullptr;
    } else if (int completed = 0; have_nvml && topo_complete(root, &nvml, &completed) != COLL_GPU_SUCCESS) {
      topo_xml_free(root);
      root = nullptr;
    }
  }
  if (root == nullptr) {
    topo_probe_opts_t opts = {nullptr, "/sys", have_nvml ? &nvml : nullptr};
    if (topo_probe(&opts, &root, err, sizeof(err)) != 0 && cfg->log != nullptr)
      cfg->log(COLL_GPU_LVL_INFO, COLL_GPU_LOG_TOPO, "probe failed: %s", err);
  }
  if (have_nvml) topo_nvml_close(&nvml);
  char *text = root != nullptr ? topo_xml_text(root, len) : nullptr;
  topo_xml_free(root);
  return text;
}

/* The GPU <pci> elements below n, in document order. */
int find_gpus(topo_xml_node_t *n, topo_xml_node_t **out, int max, int count) {
  for (int i = 0; i < n->nchildren; ++i) {
    topo_xml_node_t *c = n->children[i];
    if (topo_xml_is_gpu(c)) {
      if (count < max) out[count] = c;
      ++count;
    } else {
      count = find_gpus(c, out, max, count);
    }
  }
  return count;
}

/* Removes the <nvlink> elements that point at bus id `busid`, below n. */
void drop_links_to(topo_xml_node_t *n, const char *busid) {
  for (int i = n->nchildren - 1; i >= 0; --i) {
    topo_xml_node_t *c = n->children[i];
    const char *t = topo_xml_attr(c, "target");
    if (strcmp(c->name, "nvlink") == 0 && t != nullptr && strcasecmp(t, busid) == 0)
      topo_xml_remove(c);
    else
      drop_links_to(c, busid);
  }
}

/* Steps 3-4 on the merged tree. Returns 0 with the rings, or 1 with the reason the search cannot run. */
int search(topo_xml_node_t *root, const coll_gpu_peer_t *peers, int nranks, const coll_gpu_topo_config_t *cfg, int rank,
           coll_gpu_rings_t *rings, char *why, size_t why_len) {
  enum { MAX_NODE_GPUS = 64 };
  topo_xml_node_t *gpus[MAX_NODE_GPUS];
  const int ngpus = find_gpus(root, gpus, MAX_NODE_GPUS, 0);
  if (ngpus > MAX_NODE_GPUS) {
    coll_gpu_say(why, why_len, "the topology lists %d GPUs (at most %d)", ngpus, MAX_NODE_GPUS);
    return 1;
  }
  int used[MAX_NODE_GPUS] = {0};
  for (int r = 0; r < nranks; ++r) {
    for (int q = 0; q < r; ++q)
      if (strcasecmp(peers[q].busid, peers[r].busid) == 0) {
        coll_gpu_say(why, why_len, "ranks %d and %d share GPU %s", q, r, peers[r].busid);
        return 1;
      }
    int g = 0;
    while (g < ngpus && strcasecmp(topo_xml_attr(gpus[g], "busid"), peers[r].busid) != 0) ++g;
    if (g == ngpus) {
      coll_gpu_say(why, why_len, "GPU %s of rank %d is not in the topology", peers[r].busid, r);
      return 1;
    }
    topo_xml_node_t *x = topo_xml_child(gpus[g], "gpu");
    if ((x == nullptr && (x = topo_xml_add(gpus[g], "gpu")) == nullptr) || topo_xml_setf(x, "rank", "%d", r) != 0) {
      coll_gpu_say(why, why_len, "out of memory");
      return 1;
    }
    used[g] = 1;
  }
  for (int g = 0; g < ngpus; ++g) {
    topo_xml_node_t *x = used[g] ? nullptr : topo_xml_child(gpus[g], "gpu");
    if (x != nullptr) topo_xml_unset(x, "rank");
  }
  if (rank == 0 && set(cfg->dump_file)) {
    char err[512];
    if (topo_xml_save(root, cfg->dump_file, err, sizeof(err)) != 0) warn(cfg, "coll_gpu_topo_dump_file: %s", err);
  }
  /* the search runs over this communicator's GPUs only */
  for (int g = 0; g < ngpus; ++g)
    if (!used[g]) {
      char busid[TOPO_XML_MAX_VALUE];
      snprintf(busid, sizeof(busid), "%s", topo_xml_attr(gpus[g], "busid"));
      topo_xml_remove(gpus[g]);
      drop_links_to(root, busid);
    }
  topo_system_t *s = nullptr;
  topo_rings_t found;
  const char *files[1] = {set(cfg->file) ? cfg->file : "the merged topology"};
  const topo_xml_node_t *roots[1] = {root};
  if (topo_system_build(roots, files, 1, &s, why, why_len) != 0) return 1;
  if (topo_search_rings(s, &found, why, why_len) != 0 || found.nrings < 1) {
    if (found.nrings < 1) coll_gpu_say(why, why_len, "the ring search found no ring");
    topo_system_free(s);
    return 1;
  }
  rings->nrings = found.nrings < COLL_GPU_MAX_RINGS ? found.nrings : COLL_GPU_MAX_RINGS;
  rings->speed = found.speed[0];
  for (int k = 0; k < rings->nrings; ++k)
    for (int i = 0; i < nranks; ++i) coll_gpu_ring(rings, k)[i] = (uint16_t)topo_gpu_label(s, found.order[k][i]);
  if (cfg->log != nullptr)
    for (int i = 0; i < nranks; ++i)
      for (int j = 0; j < nranks; ++j) {
        if (i == j) continue;
        const topo_path_t p = topo_path(s, i, j);
        cfg->log(COLL_GPU_LVL_TRACE, COLL_GPU_LOG_TOPO, "comm %s: rank %d -> rank %d: %s, %.1f GB/s", cfg->name,
                 topo_gpu_label(s, i), topo_gpu_label(s, j), topo_path_name(p.type), p.bw);
      }
  topo_system_free(s);
  return 0;
}

}  // namespace

coll_gpu_status_t coll_gpu_rings_alloc(coll_gpu_rings_t *rings, int n) {
  coll_gpu_rings_free(rings);
  rings->order = (uint16_t *)malloc((size_t)COLL_GPU_MAX_RINGS * (n > 0 ? n : 1) * sizeof(uint16_t));
  if (rings->order == nullptr) return COLL_GPU_SYSTEM_ERROR;
  rings->n = n;
  coll_gpu_rings_rank_order(rings);
  return COLL_GPU_SUCCESS;
}

void coll_gpu_rings_rank_order(coll_gpu_rings_t *rings) {
  for (int r = 0; r < rings->n; ++r) rings->order[r] = (uint16_t)r;
  rings->nrings = 1;
  rings->span = 1;
  rings->speed = 0;
}

void coll_gpu_rings_free(coll_gpu_rings_t *rings) {
  free(rings->order);
  memset(rings, 0, sizeof(*rings));
}

namespace {
// What f makes of this process's view of its node (f gets nullptr where there is none), under the view's lock.
template <typename F>
int over_view(F f) {
  pthread_mutex_lock(&view_lock);
  topo_xml_node_t *root = nullptr;
  char err[256];
  if (view_text != nullptr) topo_xml_parse(view_text, view_len, "<view>", &root, err, sizeof(err));  // or nullptr
  const int n = f(root);
  pthread_mutex_unlock(&view_lock);
  topo_xml_free(root);
  return n;
}
}  // namespace

int coll_gpu_near_cpus(const char *busid, int *cpus, int max) {
  return over_view(
      [&](const topo_xml_node_t *root) { return root != nullptr ? topo_xml_gpu_cpus(root, busid, cpus, max) : 0; });
}

int coll_gpu_near_net(const char *busid, int (*take)(const char *name, void *ctx), void *ctx, char *name,
                      size_t name_len, int *cpus, int max) {
  name[0] = '\0';
  return over_view([&](const topo_xml_node_t *root) {
    const topo_xml_node_t *net = root != nullptr ? topo_xml_gpu_net(root, busid, take, ctx) : nullptr;
    if (net == nullptr) return 0;
    snprintf(name, name_len, "%s", topo_xml_attr(net, "name"));
    return topo_xml_cpus_near(net, cpus, max);
  });
}

coll_gpu_status_t coll_gpu_rings_compute(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *peers,
                                         const coll_gpu_topo_config_t *cfg, coll_gpu_rings_t *rings, char *why,
                                         size_t why_len) {
  if (rings->order == nullptr || rings->n != b->size) {
    coll_gpu_say(why, why_len, "rings of %d ranks for %d", rings->n, b->size);
    return COLL_GPU_INTERNAL_ERROR;
  }
  coll_gpu_rings_rank_order(rings);
  why[0] = '\0';

  /* 1. this rank's view (made once per process) */
  pthread_mutex_lock(&view_lock);
  const char *file = set(cfg->file) ? cfg->file : "";
  if (view_file == nullptr || strcmp(view_file, file) != 0) {
    free(view_text);
    free(view_file);
    view_file = strdup(file);
    view_len = 0;
    view_text = describe_node(cfg, &view_len);
    if (view_len > TOPO_XML_MAX_BYTES) { /* the merge could not read it back */
      free(view_text);
      view_text = nullptr;
    }
    if (view_text == nullptr) view_len = 0;
  }
  const uint64_t mine = view_len;
  const bool exchange = b->size <= COLL_GPU_MAX_DIRECT;
  /* another communicator may replace the cache meanwhile */
  char *text = mine > 0 && exchange ? (char *)malloc(mine) : nullptr;
  if (text != nullptr) memcpy(text, view_text, mine);
  pthread_mutex_unlock(&view_lock);
  if (!exchange) {
    coll_gpu_say(why, why_len, "%d ranks (more than %d): one ring, not searched", b->size, COLL_GPU_MAX_DIRECT);
    return COLL_GPU_SUCCESS;
  }

  /* 2. every rank's view, merged in rank order */
  uint64_t lens[COLL_GPU_MAX_DIRECT], len = text != nullptr ? mine : 0;
  if (b->allgather(b->ctx, &len, lens, sizeof(len)) != 0) {
    free(text);
    coll_gpu_say(why, why_len, "the topology size allgather failed");
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  uint64_t max = 1;
  for (int r = 0; r < b->size; ++r)
    if (lens[r] > max) max = lens[r];
  char *send = (char *)calloc(1, max), *all = (char *)calloc((size_t)b->size, max);
  if (send != nullptr && len > 0) memcpy(send, text, len);
  free(text);
  /* everyone could allocate, or nobody sends: the collective calls stay matched */
  int ok = send != nullptr && all != nullptr, oks[COLL_GPU_MAX_DIRECT];
  bool gathered = b->allgather(b->ctx, &ok, oks, sizeof(ok)) == 0;
  for (int r = 0; gathered && r < b->size; ++r) ok = ok && oks[r];
  if (gathered && ok) gathered = b->allgather(b->ctx, send, all, max) == 0;
  free(send);
  if (!gathered || !ok) {
    free(all);
    coll_gpu_say(why, why_len,
                 gathered ? "a rank ran out of memory for the topologies" : "the topology allgather failed");
    return gathered ? COLL_GPU_SUCCESS : COLL_GPU_BOOTSTRAP_ERROR;
  }
  topo_xml_node_t *root = nullptr;
  bool merged = true;
  for (int r = 0; r < b->size; ++r) {
    topo_xml_node_t *t = nullptr;
    char err[256];
    if (lens[r] == 0 || topo_xml_parse(all + (size_t)r * max, lens[r], "a rank's topology", &t, err, sizeof(err)) != 0)
      continue;
    if (root == nullptr) {
      root = t;
    } else {
      merged = topo_xml_merge(root, t) == 0 && merged;
      topo_xml_free(t);
    }
  }
  free(all);

  /* 3-4. the communicator's GPUs, the search (rings keep rank order where it fails) */
  if (root == nullptr)
    coll_gpu_say(why, why_len, "no rank could describe its node");
  else if (!merged)
    coll_gpu_say(why, why_len, "out of memory merging the ranks' topologies");
  else
    search(root, peers, b->size, cfg, b->rank, rings, why, why_len);
  topo_xml_free(root);

  /* the same bytes give the same rings; a check that costs one allgather keeps any surprise (memory
   * running out on one rank) from sending the ranks around different rings */
  uint64_t hash = coll_gpu_hash(&rings->nrings, sizeof(rings->nrings), 0), hashes[COLL_GPU_MAX_DIRECT];
  hash = coll_gpu_hash(rings->order, (size_t)rings->nrings * rings->n * sizeof(uint16_t), hash);
  if (b->allgather(b->ctx, &hash, hashes, sizeof(hash)) != 0) {
    coll_gpu_say(why, why_len, "the ring check allgather failed");
    return COLL_GPU_BOOTSTRAP_ERROR;
  }
  for (int r = 0; r < b->size; ++r)
    if (hashes[r] != hash) {
      coll_gpu_rings_rank_order(rings);
      coll_gpu_say(why, why_len, "the ranks found different rings");
      break;
    }
  return COLL_GPU_SUCCESS;
}

void coll_gpu_rings_by_node(coll_gpu_rings_t *rings, const uint16_t *node, void *scratch) {
  const int n = rings->n;
  uint16_t *sorted = (uint16_t *)scratch;
  uint8_t *placed = (uint8_t *)(sorted + n);  // by node (its lowest rank): its ranks are in already
  for (int i = 0; i < rings->nrings; ++i) {
    uint16_t *ring = coll_gpu_ring(rings, i);
    memset(placed, 0, (size_t)n);
    int k = 0;
    for (int a = 0; a < n; ++a) {
      if (placed[node[ring[a]]]) continue;
      placed[node[ring[a]]] = 1;
      for (int b = a; b < n; ++b)
        if (node[ring[b]] == node[ring[a]]) sorted[k++] = ring[b];
    }
    memcpy(ring, sorted, (size_t)n * sizeof(uint16_t));
  }
}

int coll_gpu_rings_rotate_nodes(coll_gpu_rings_t *rings, const uint16_t *node, int most_turns, void *scratch) {
  const int n = rings->n;
  int *size = (int *)scratch;  // by node (its lowest rank): its ranks
  static_assert(sizeof(int) <= 16, "COLL_GPU_NODES_SCRATCH");
  memset(size, 0, (size_t)n * sizeof(int));
  int most = 0;
  for (int r = 0; r < n; ++r) most = std::max(most, ++size[node[r]]);
  const int want = std::min(most, most_turns);
  if (want < 2 || most == n) return 1;
  const int bases = std::min(rings->nrings, std::max(1, COLL_GPU_MAX_RINGS / want));
  const int turns = std::min(want, COLL_GPU_MAX_RINGS / bases);
  // ring j: base j / turns, each node's ranks turned by j mod turns; from the last, so that a base is read
  // before it is written over (j / turns <= j)
  for (int j = bases * turns - 1; j >= 0; --j) {
    uint16_t *ring = coll_gpu_ring(rings, j);
    if (j / turns != j) memcpy(ring, coll_gpu_ring(rings, j / turns), (size_t)n * sizeof(uint16_t));
    for (int a = 0; a < n;) {  // each node's ranks, one run of the ring each
      const int len = size[node[ring[a]]];
      std::rotate(ring + a, ring + a + j % turns % len, ring + a + len);
      a += len;
    }
  }
  rings->nrings = bases * turns;
  return turns;
}

unsigned coll_gpu_rings_chain(const coll_gpu_rings_t *rings, const uint16_t *node, coll_gpu_coll_t coll, int root) {
  static_assert(COLL_GPU_MAX_RINGS <= 8 * sizeof(unsigned), "a ring mask");
  if (coll != COLL_GPU_COLL_BCAST && coll != COLL_GPU_COLL_REDUCE) return 0;
  const int n = rings->n;
  unsigned mask = 0;
  for (int i = 0; i < rings->nrings; ++i) {
    const uint16_t *ring = coll_gpu_ring(rings, i);
    int at = 0;
    while (ring[at] != root) ++at;
    // a bcast's chain starts at the root, a reduce's ends there: the root must be its node's first or last
    const int beside = coll == COLL_GPU_COLL_BCAST ? ring[(at + n - 1) % n] : ring[(at + 1) % n];
    if (node[beside] != node[root]) mask |= 1u << i;
  }
  return mask == (1u << rings->nrings) - 1 ? 0 : mask;
}

int coll_gpu_rings_run_turns(const coll_gpu_rings_t *rings, const uint16_t *node, void *scratch) {
  const int n = rings->n, k = rings->nrings;
  if (k < 2 || n % k != 0 || n == k) return 0;
  // by rank: the rings on which it starts its node's run, and those on which it ends it (beyond 2 turns, a
  // rank that starts it once may end it on several rings and another on none)
  uint8_t *starts = (uint8_t *)scratch, *ends = starts + n;
  memset(starts, 0, 2 * (size_t)n);
  for (int i = 0; i < k; ++i) {
    const uint16_t *ring = coll_gpu_ring(rings, i);
    for (int p = 0; p < n; ++p) {
      const bool first = node[ring[p]] != node[ring[(p + n - 1) % n]];
      if (first != (p % k == 0)) return 0;  // a run of another length
      if (first && ++starts[ring[p]] > 1) return 0;
      if (p % k == k - 1 && ++ends[ring[p]] > 1) return 0;
    }
  }
  for (int r = 0; r < n; ++r)
    if (starts[r] != 1 || ends[r] != 1) return 0;
  return k;
}

int coll_gpu_ring_moves_net(const uint16_t *ring, int n, const uint16_t *node, int rank, coll_gpu_coll_t coll,
                            int root) {
  int pos = 0, at = 0;
  for (int k = 0; k < n; ++k) {
    if (ring[k] == rank) pos = k;
    if (ring[k] == root) at = k;
  }
  const int next = ring[(pos + 1) % n], prev = ring[(pos + n - 1) % n];
  const int d = (pos - at + n) % n;  // hops from the root along the ring
  bool sends = true, receives = true;
  if (coll == COLL_GPU_COLL_BCAST) {  // root -> ... -> the rank before it
    sends = d < n - 1;
    receives = d > 0;
  } else if (coll == COLL_GPU_COLL_REDUCE) {  // the rank after the root -> ... -> root
    sends = d != 0;
    receives = d != 1;
  }
  return (sends && node[next] != node[rank]) || (receives && node[prev] != node[rank]);
}

int coll_gpu_rings_trees(const coll_gpu_rings_t *rings, const uint16_t *node, int rank, int up[COLL_GPU_TREES],
                         int down[COLL_GPU_TREES][COLL_GPU_TREE_ARITY]) {
  static_assert(COLL_GPU_TREE_ARITY == TOPO_TREE_ARITY, "a tree's children as topo/ gives them");
  for (int t = 0; t < COLL_GPU_TREES; ++t) {
    up[t] = -1;
    for (int c = 0; c < COLL_GPU_TREE_ARITY; ++c) down[t][c] = -1;
  }
  const int n = rings->n;
  if (n < 3 || n > COLL_GPU_MAX_DIRECT || rank < 0 || rank >= n) return 0;
  int order[COLL_GPU_MAX_DIRECT], nodes[COLL_GPU_MAX_DIRECT], scratch[3 * COLL_GPU_MAX_DIRECT];
  int ups[COLL_GPU_MAX_DIRECT], downs[COLL_GPU_MAX_DIRECT * COLL_GPU_TREE_ARITY];
  for (int k = 0; k < n; ++k) {
    order[k] = coll_gpu_ring(rings, 0)[k];
    nodes[k] = node[k];
  }
  for (int t = 0; t < COLL_GPU_TREES; ++t) {
    topo_ring_tree(n, order, nodes, t, scratch, ups, downs);
    up[t] = ups[rank];
    for (int c = 0; c < COLL_GPU_TREE_ARITY; ++c) down[t][c] = downs[rank * COLL_GPU_TREE_ARITY + c];
  }
  return 1;
}
