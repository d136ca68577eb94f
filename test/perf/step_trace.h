/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// What test/perf/coll_gpu_step_trace computes from the step timestamps of proxy/trace.h, header-only so that
// the unit tests check it on events whose times they chose: where each call's time went, on every rank, as
// distributions (median, 10th and 90th percentile).
//   launched:    from a call's launch to the launch returning (the host's part of the launch);
//   first send:  from a call's launch to its rank's proxy handing the call's first step to the network (the
//                launch, the kernel's start and post, the proxy noticing it);
//   one way:     from a proxy handing a step to the network to the receiving proxy publishing it (UCX or the
//                sockets, both proxies' loops);
//   sent:        from handing a step to the network to its send completing;
//   last step -> done: from the last step to arrive at a rank during its call to the host seeing the call
//                done (the kernel's poll of host memory, its end, the host's poll of the done words);
//   call:        from launch to done, per rank;
//   between:     from one call done to the next launch on the same rank (the MPI call's own path).
// Events before `skip` of the traces' time span are left out (a benchmark's first calls and warm-up). The
// events of one communicator: ranks, connections and steps are its own.
// And a step's parts where a host thread plays the kernel (test/perf/coll_gpu_proxy_bench: events P and K), by
// connection: posted -> to the network (the sending proxy noticing it), to the network -> at the receiving
// proxy (the one-way time above), at the receiving proxy -> seen (the receiving side's poll), the send's
// completion, and the whole way, posted -> seen.
#ifndef COLL_GPU_TEST_PERF_STEP_TRACE_H
#define COLL_GPU_TEST_PERF_STEP_TRACE_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace step_trace {

struct Event {
  char kind;
  int rank, peer, conn;
  uint64_t step, ns;
};

// One line of a trace file; false where it is not one.
inline bool parse(const char *line, Event *e) {
  unsigned long long step, ns;
  char kind;
  if (sscanf(line, " %c %d %d %d %llu %llu", &kind, &e->rank, &e->peer, &e->conn, &step, &ns) != 6) return false;
  e->kind = kind;
  e->step = step;
  e->ns = ns;
  return true;
}

// The events of every trace file (steps.*) in dir, in file order; *paths gets the files' paths, *bad the lines
// that are not events.
inline std::vector<Event> read_dir(const std::string &dir, std::vector<std::string> *paths, size_t *bad) {
  std::vector<Event> events;
  paths->clear();
  *bad = 0;
  DIR *d = opendir(dir.c_str());
  if (d == nullptr) return events;
  while (struct dirent *ent = readdir(d)) {
    if (strncmp(ent->d_name, "steps.", 6) != 0) continue;
    paths->push_back(dir + "/" + ent->d_name);
    FILE *f = fopen(paths->back().c_str(), "r");
    if (f == nullptr) continue;
    char line[256];
    Event e;
    while (fgets(line, sizeof(line), f) != nullptr) {
      if (parse(line, &e))
        events.push_back(e);
      else
        ++*bad;
    }
    fclose(f);
  }
  closedir(d);
  return events;
}

struct Spread {
  size_t n = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
};

inline Spread spread(std::vector<uint64_t> v) {
  Spread s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median_us = (double)v[v.size() / 2] / 1e3;
  s.p10_us = (double)v[v.size() / 10] / 1e3;
  s.p90_us = (double)v[9 * v.size() / 10] / 1e3;
  return s;
}

struct Summary {
  Spread launched, first_send, one_way, sent, last_to_done, call, between;
  size_t unmatched = 0;  // steps handed to the network whose arrival is not in the traces
};

inline Summary summarize(const std::vector<Event> &events, double skip) {
  Summary out;
  if (events.empty()) return out;
  uint64_t t0 = events[0].ns, t1 = events[0].ns;
  for (const Event &e : events) {
    t0 = std::min(t0, e.ns);
    t1 = std::max(t1, e.ns);
  }
  const uint64_t cut = t0 + (uint64_t)((double)(t1 - t0) * skip);
  using Key = std::tuple<int, int, int, uint64_t>;  // sender, receiver, connection, step
  std::map<Key, uint64_t> sends, arrivals, completions;
  std::map<int, std::vector<std::pair<uint64_t, char>>> timeline;  // by rank: launches, dones, sends, arrivals
  for (const Event &e : events) {
    if (e.kind == 'S') sends[Key(e.rank, e.peer, e.conn, e.step)] = e.ns;
    if (e.kind == 'R') arrivals[Key(e.peer, e.rank, e.conn, e.step)] = e.ns;
    if (e.kind == 'H') completions[Key(e.rank, e.peer, e.conn, e.step)] = e.ns;
    if (e.kind == 'L' || e.kind == 'A' || e.kind == 'D' || e.kind == 'S' || e.kind == 'R')
      timeline[e.rank].push_back({e.ns, e.kind});
  }
  std::vector<uint64_t> one_way, sent, launched, first_send, last_to_done, call, between;
  for (const auto &s : sends) {
    if (s.second < cut) continue;
    auto a = arrivals.find(s.first);
    if (a == arrivals.end())
      ++out.unmatched;
    else
      one_way.push_back(a->second - s.second);
    auto c = completions.find(s.first);
    if (c != completions.end()) sent.push_back(c->second - s.second);
  }
  for (auto &r : timeline) {
    std::vector<std::pair<uint64_t, char>> &t = r.second;
    std::sort(t.begin(), t.end());
    uint64_t launch = 0, done = 0, arrived = 0;
    bool in_call = false, sent_one = false;
    for (const auto &e : t) {
      const bool counted = e.first >= cut;
      if (e.second == 'L') {
        if (counted && done > 0 && !in_call) between.push_back(e.first - done);
        launch = e.first;
        in_call = true;
        sent_one = false;
        arrived = 0;
      } else if (e.second == 'A' && in_call) {
        if (counted) launched.push_back(e.first - launch);
      } else if (e.second == 'S' && in_call && !sent_one) {
        sent_one = true;
        if (counted) first_send.push_back(e.first - launch);
      } else if (e.second == 'R' && in_call) {
        arrived = e.first;
      } else if (e.second == 'D' && in_call) {
        in_call = false;
        done = e.first;
        if (counted) {
          call.push_back(e.first - launch);
          if (arrived > 0) last_to_done.push_back(e.first - arrived);
        }
      }
    }
  }
  out.launched = spread(launched);
  out.first_send = spread(first_send);
  out.one_way = spread(one_way);
  out.sent = spread(sent);
  out.last_to_done = spread(last_to_done);
  out.call = spread(call);
  out.between = spread(between);
  return out;
}

struct Parts {
  Spread to_network, one_way, to_seen, sent, whole;
  size_t unmatched = 0;  // steps posted whose way through the proxies is not complete in the traces
};

// The parts of every step posted on connection `conn`, either way.
inline Parts parts(const std::vector<Event> &events, int conn) {
  using Key = std::tuple<int, int, uint64_t>;  // sender, receiver, step
  std::map<Key, uint64_t> at[5];               // posted, to the network, sent, at the receiving proxy, seen
  const char kinds[] = "PSHRK";
  for (const Event &e : events) {
    const char *k = e.conn == conn ? strchr(kinds, e.kind) : nullptr;
    if (k == nullptr || *k == '\0') continue;
    const bool receiver = *k == 'R' || *k == 'K';
    at[k - kinds][receiver ? Key(e.peer, e.rank, e.step) : Key(e.rank, e.peer, e.step)] = e.ns;
  }
  std::vector<uint64_t> to_network, one_way, to_seen, sent, whole;
  Parts out;
  for (const auto &p : at[0]) {
    auto s = at[1].find(p.first), h = at[2].find(p.first), r = at[3].find(p.first), k = at[4].find(p.first);
    if (s == at[1].end() || r == at[3].end() || k == at[4].end()) {
      ++out.unmatched;
      continue;
    }
    to_network.push_back(s->second - p.second);
    one_way.push_back(r->second - s->second);
    to_seen.push_back(k->second - r->second);
    if (h != at[2].end()) sent.push_back(h->second - s->second);
    whole.push_back(k->second - p.second);
  }
  out.to_network = spread(to_network);
  out.one_way = spread(one_way);
  out.to_seen = spread(to_seen);
  out.sent = spread(sent);
  out.whole = spread(whole);
  return out;
}

}  // namespace step_trace

#endif
