/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The engine's NET connections in a build without UCX (engine/net.h): no network proxy, so a communicator
 * that spans nodes gets no GPU path, and every other call has nothing to do.
 */
#include "engine/net.h"

namespace coll_gpu {

coll_gpu_status_t Net::setup(const coll_gpu_bootstrap_t *, const uint16_t *, const uint8_t *, const coll_gpu_peer_t *,
                             int, int, int, coll_gpu_log_fn, char *why, size_t len) {
  coll_gpu_say(why, len, "several nodes need the network proxy, and this build has no UCX (configure --with-ucx)");
  return COLL_GPU_UNAVAILABLE;
}

coll_gpu_status_t Net::fifo(coll_gpu_proxy_dir_t, int, int, size_t, coll_gpu_conn_t *, char *why, size_t len) {
  coll_gpu_say(why, len, "a NET connection without the network proxy (built without UCX)");
  return COLL_GPU_INTERNAL_ERROR;
}

int Net::threads() const { return 0; }

void Net::wake(int, int) const {}

coll_gpu_status_t Net::failed(int *, char *, size_t) const { return COLL_GPU_SUCCESS; }

void Net::reset() {}

}  // namespace coll_gpu
