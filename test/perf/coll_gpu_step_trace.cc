/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
// Sums up the step timestamps that a run with COLL_GPU_STEP_TRACE=DIR left in DIR (proxy/trace.h): where the
// calls' time went, as test/perf/step_trace.h says, in microseconds.
//
// usage: coll_gpu_step_trace [-s SKIP] DIR
//   -s: the fraction of the traces' time span left out at their start (default 0.2: a benchmark's first
//       calls and its warm-up)
// For example, an 8-byte alltoall across the mini-cluster's 2 hosts x 2 (docs/benchmarks.md):
//   COLL_GPU_STEP_TRACE=/tmp/t contrib/minicluster.sh mpirun NAME 2 -np 4 -x COLL_GPU_STEP_TRACE ...
//     coll_gpu_allreduce_bench -C alltoall -m 8 -M 8 -N; coll_gpu_step_trace /tmp/t
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "test/perf/step_trace.h"

namespace {

void print(const char *what, const step_trace::Spread &s) {
  if (s.n == 0)
    printf("%-52s none\n", what);
  else
    printf("%-52s median %7.1f  p10 %7.1f  p90 %7.1f  (%zu)\n", what, s.median_us, s.p10_us, s.p90_us, s.n);
}

}  // namespace

int main(int argc, char **argv) {
  double skip = 0.2;
  int opt;
  while ((opt = getopt(argc, argv, "s:")) != -1) {
    if (opt == 's') {
      skip = atof(optarg);
    } else {
      fprintf(stderr, "usage: coll_gpu_step_trace [-s SKIP] DIR\n");
      return 2;
    }
  }
  if (optind != argc - 1 || skip < 0 || skip >= 1) {
    fprintf(stderr, "usage: coll_gpu_step_trace [-s SKIP] DIR (SKIP from 0 to below 1)\n");
    return 2;
  }
  const std::string dir = argv[optind];
  if (access(dir.c_str(), R_OK | X_OK) != 0) {
    perror(dir.c_str());
    return 1;
  }
  std::vector<std::string> files;
  size_t bad = 0;
  const std::vector<step_trace::Event> events = step_trace::read_dir(dir, &files, &bad);
  if (events.empty()) {
    fprintf(stderr, "coll_gpu_step_trace: no events in %s (steps.* files: %zu)\n", dir.c_str(), files.size());
    return 1;
  }
  const step_trace::Summary s = step_trace::summarize(events, skip);
  printf("%zu events from %zu processes, us:\n", events.size(), files.size());
  print("launch -> the launch returned", s.launched);
  print("launch -> its first step to the network", s.first_send);
  print("step to the network -> published at the receiver", s.one_way);
  print("step to the network -> its send completed", s.sent);
  print("last step in -> the host sees the call done", s.last_to_done);
  print("launch -> done", s.call);
  print("done -> the next launch", s.between);
  if (s.unmatched > 0) printf("%zu steps sent without their arrival in the traces\n", s.unmatched);
  return 0;
}
