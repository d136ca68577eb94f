/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Bootstrap helpers over the interface of engine/bootstrap.h: the peer exchange.
 */
#include "engine/bootstrap.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"
#include "engine/owning.h"

uint64_t coll_gpu_host_id(void) {
  char id[256 + 64] = {0};
  gethostname(id, 256);
  /* the boot id tells apart containers that share a host name */
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f != nullptr) {
    if (fgets(id + 256, 64, f) == nullptr) id[256] = '\0';
    fclose(f);
  }
  return coll_gpu_hash(id, sizeof(id), 0);
}

int coll_gpu_host_has_rdma(void) {
  DIR *d = opendir("/sys/class/infiniband");
  if (d == nullptr) return 0;
  int found = 0;
  for (struct dirent *e = readdir(d); e != nullptr && !found; e = readdir(d)) found = e->d_name[0] != '.';
  closedir(d);
  return found;
}

coll_gpu_status_t coll_gpu_peers_exchange(const coll_gpu_bootstrap_t *b, const coll_gpu_peer_t *mine,
                                          coll_gpu_peer_t *peers) {
  return b->allgather(b->ctx, mine, peers, sizeof(*mine)) == 0 ? COLL_GPU_SUCCESS : COLL_GPU_BOOTSTRAP_ERROR;
}

void coll_gpu_append_ranks(char *why, size_t len, const uint8_t *marked, int n) {
  size_t at = strlen(why);
  for (int r = 0; r < n && at + 8 < len; ++r)
    if (marked[r]) at += (size_t)snprintf(why + at, len - at, " %d", r);
}

bool coll_gpu_all_ok(const coll_gpu_bootstrap_t *b, int mine, int *first_bad) {
  coll_gpu::HostPtr<int[]> all = coll_gpu::make_host_array<int>(b->size);
  bool ok = all != nullptr && b->allgather(b->ctx, &mine, all.get(), sizeof(int)) == 0;
  for (int r = 0; ok && r < b->size; ++r)
    if (all[r] != 0) {
      ok = false;
      *first_bad = r;
    }
  return ok;
}
