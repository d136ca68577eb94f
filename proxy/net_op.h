/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * One message of the proxy's network in flight (C++ only): the proxy's side of a send or a receive of
 * proxy/net_ucx.h or proxy/net_socket.h, which the proxy tests until it has completed.
 */
#ifndef COLL_GPU_PROXY_NET_OP_H
#define COLL_GPU_PROXY_NET_OP_H

#include <stddef.h>

namespace coll_gpu {

struct NetOp {
  void *req = nullptr;  // the network's record of it; nullptr once completed (or when it completed at once)
  int state = 0;        // kOpIdle, kOpPending, kOpDone, kOpFailed
  size_t bytes = 0;     // a receive's length once done
  bool send = false;
};
enum { kOpIdle = 0, kOpPending = 1, kOpDone = 2, kOpFailed = 3 };

}  // namespace coll_gpu

#endif
