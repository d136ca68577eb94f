/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The proxy's network over UCX (proxy/net_ucx.h).
 */
#include "proxy/net_ucx.h"

#include "common/wait.h"

#include <stdio.h>
#include <stdlib.h>

namespace coll_gpu {
namespace {

// UCX reads COLL_GPU_UCX_* before UCX_*: the proxy's transports can be steered apart from Open MPI's pml/ucx.
constexpr const char *kEnvPrefix = "COLL_GPU";
// How long teardown waits for UCX to give back a cancelled request or a closed endpoint: a peer that is
// gone must not hold a communicator's free.
constexpr uint64_t kCloseWaitNs = 2000000000ull;

}  // namespace

coll_gpu_status_t UcxNet::init(int nranks, size_t eager_max, FailFn fail, void *ctx, char *why, size_t len) {
  fail_ = fail;
  fail_ctx_ = ctx;
  nranks_ = nranks;
  peers_ = (Peer *)calloc((size_t)nranks, sizeof(Peer));
  if (peers_ == nullptr) {
    coll_gpu_say(why, len, "out of host memory for %d proxy peers", nranks);
    return COLL_GPU_SYSTEM_ERROR;
  }
  for (int r = 0; r < nranks; ++r) peers_[r] = Peer{this, r, nullptr};

  ucp_config_t *config = nullptr;
  ucs_status_t s = ucp_config_read(kEnvPrefix, nullptr, &config);
  if (s != UCS_OK) {
    coll_gpu_say(why, len, "UCX configuration (%s_UCX_*, UCX_*): %s", kEnvPrefix, ucs_status_string(s));
    return COLL_GPU_SYSTEM_ERROR;
  }
  // UCX's newer protocol selection (the default from UCX 1.15 on) moved 1.0-1.3 GB/s each way over tcp with
  // one thread and 4.8-6.1 with eight where the older one moved 1.6-2.2 and 6.8-9.7 (coll_gpu_proxy_bench,
  // UCX 1.16, means of 3 runs in each of two sessions; shared memory the same within the runs' spread).
  // Unless the user chose (COLL_GPU_UCX_PROTO_ENABLE or UCX_PROTO_ENABLE), the proxy takes the older; a UCX
  // without the setting keeps its own.
  if (getenv("COLL_GPU_UCX_PROTO_ENABLE") == nullptr && getenv("UCX_PROTO_ENABLE") == nullptr)
    (void)ucp_config_modify(config, "PROTO_ENABLE", "n");
  // The proxy sends a step below eager_max only into a receive already posted (within the receiver's
  // credits), so a rendezvous buys it nothing but round trips: UCX's own threshold over tcp sent steps of
  // 8-32 KiB that way, and 8 channels of them took 2-3x longer than with the threshold at 64 KiB (on one
  // H200 shared by 2 ranks, allreduce of 128 KiB 76 against 239 us, 512 KiB 149 against 374, bcast of
  // 128 KiB 50 against 86; coll_gpu_allreduce_bench, UCX 1.16, one run each).
  if (getenv("COLL_GPU_UCX_RNDV_THRESH") == nullptr && getenv("UCX_RNDV_THRESH") == nullptr) {
    char bytes[32];
    snprintf(bytes, sizeof(bytes), "%zu", eager_max);
    (void)ucp_config_modify(config, "RNDV_THRESH", bytes);
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  // the wakeup: a sleeping proxy thread wakes when a peer's message arrives (ucp_worker_arm, then a poll on
  // the worker's descriptor), not when its sleep ends, up to 1 ms later
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  s = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (s != UCS_OK) {
    coll_gpu_say(why, len, "UCX initialization (ucp_init): %s", ucs_status_string(s));
    return COLL_GPU_SYSTEM_ERROR;
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  s = ucp_worker_create(context_, &wp, &worker_);
  if (s != UCS_OK) {
    coll_gpu_say(why, len, "UCX worker (ucp_worker_create): %s", ucs_status_string(s));
    return COLL_GPU_SYSTEM_ERROR;
  }
  if (ucp_worker_get_efd(worker_, &efd_) != UCS_OK) efd_ = -1;  // then timed sleeps, as without the feature
  s = ucp_worker_get_address(worker_, &addr_, &addr_bytes_);
  if (s != UCS_OK) {
    coll_gpu_say(why, len, "UCX worker address (ucp_worker_get_address): %s", ucs_status_string(s));
    return COLL_GPU_SYSTEM_ERROR;
  }
  return COLL_GPU_SUCCESS;
}

int UcxNet::arm() {
  if (efd_ < 0) return kNoDescriptor;
  const ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_OK) return efd_;
  return s == UCS_ERR_BUSY ? kEventsWaiting : kNoDescriptor;
}

void UcxNet::on_ep_error(void *arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  Peer *peer = (Peer *)arg;
  char why[160];
  snprintf(why, sizeof(why), "the network connection to rank %d failed: %s", peer->rank, ucs_status_string(status));
  peer->net->fail_(peer->net->fail_ctx_, peer->rank, why);
}

coll_gpu_status_t UcxNet::connect(int peer, const void *addr, bool same_host, char *why, size_t len) {
  ucp_ep_params_t ep{};
  ep.field_mask =
      UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = (const ucp_address_t *)addr;
  // A peer on another host is watched by UCX (peer-failure mode). One on this host is not: UCX's shared
  // memory transports cannot watch a peer and would be left out; the engine's process checks find a
  // peer of this host that is gone.
  ep.err_mode = same_host ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = on_ep_error;
  ep.err_handler.arg = &peers_[peer];
  const ucs_status_t s = ucp_ep_create(worker_, &ep, &peers_[peer].ep);
  if (s != UCS_OK) {
    peers_[peer].ep = nullptr;
    coll_gpu_say(why, len, "UCX cannot reach rank %d with its address (ucp_ep_create%s): %s", peer,
                 same_host ? "" : ", the peer's failures watched", ucs_status_string(s));
    return COLL_GPU_SYSTEM_ERROR;
  }
  return COLL_GPU_SUCCESS;
}

void UcxNet::finish(NetOp *op, ucs_status_t s) {
  if (op->req != nullptr) ucp_request_free(op->req);
  op->req = nullptr;
  if (s == UCS_OK) {
    op->state = kOpDone;
  } else {
    op->state = kOpFailed;
    last_error_ = s;
  }
}

ucp_mem_h UcxNet::map(void *buf, size_t bytes) {
  ucp_mem_map_params_t mp{};
  mp.field_mask =
      UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  mp.address = buf;
  mp.length = bytes;
  mp.memory_type = UCS_MEMORY_TYPE_HOST;
  ucp_mem_h memh = nullptr;
  return ucp_mem_map(context_, &mp, &memh) == UCS_OK ? memh : nullptr;
}

void UcxNet::unmap(ucp_mem_h memh) {
  if (memh != nullptr && context_ != nullptr) ucp_mem_unmap(context_, memh);
}

void UcxNet::send(int peer, uint64_t tag, const void *buf, size_t bytes, bool sync, ucp_mem_h memh, NetOp *op) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE | (memh != nullptr ? UCP_OP_ATTR_FIELD_MEMH : 0);
  p.memory_type = UCS_MEMORY_TYPE_HOST;  // the FIFOs are host memory: no detection per message
  p.memh = memh;
  op->bytes = bytes;
  op->req = nullptr;
  op->send = true;
  const ucs_status_ptr_t r = sync ? ucp_tag_send_sync_nbx(peers_[peer].ep, buf, bytes, tag, &p)
                                  : ucp_tag_send_nbx(peers_[peer].ep, buf, bytes, tag, &p);
  if (r == nullptr) return finish(op, UCS_OK);
  if (UCS_PTR_IS_ERR(r)) return finish(op, UCS_PTR_STATUS(r));
  op->req = r;
  op->state = kOpPending;
}

void UcxNet::recv(uint64_t tag, void *buf, size_t bytes, ucp_mem_h memh, NetOp *op) {
  ucp_request_param_t p{};
  // always a request, whose test gives the length: UCX 1.13 completes a receive of an early message at
  // once without filling in recv_info
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL | (memh != nullptr ? UCP_OP_ATTR_FIELD_MEMH : 0);
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  p.memh = memh;
  op->req = nullptr;
  op->send = false;
  const ucs_status_ptr_t r = ucp_tag_recv_nbx(worker_, buf, bytes, tag, ~(ucp_tag_t)0, &p);
  if (r == nullptr || UCS_PTR_IS_ERR(r)) return finish(op, r == nullptr ? UCS_ERR_NO_MESSAGE : UCS_PTR_STATUS(r));
  op->req = r;
  op->state = kOpPending;
}

void UcxNet::test(NetOp *op) {
  if (op->state != kOpPending) return;
  ucs_status_t s;
  if (op->send) {
    s = ucp_request_check_status(op->req);
  } else {
    ucp_tag_recv_info_t info{};
    s = ucp_tag_recv_request_test(op->req, &info);
    if (s == UCS_OK) op->bytes = info.length;
  }
  if (s != UCS_INPROGRESS) finish(op, s);
}

void UcxNet::cancel(NetOp *op) {
  if (op->state != kOpPending) return;
  ucp_request_cancel(worker_, op->req);
  const uint64_t until = coll_gpu_now_ns() + kCloseWaitNs;
  while (ucp_request_check_status(op->req) == UCS_INPROGRESS && coll_gpu_now_ns() < until) ucp_worker_progress(worker_);
  release(op);
}

void UcxNet::release(NetOp *op) {
  if (op->state == kOpPending) ucp_request_free(op->req);  // UCX frees it when it completes
  op->req = nullptr;
  op->state = kOpIdle;
}

void UcxNet::close_endpoints() {
  if (peers_ != nullptr && worker_ != nullptr) {
    // forced: a peer that is gone, or already closing its side, answers nothing
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    for (int r = 0; r < nranks_; ++r) {
      if (peers_[r].ep == nullptr) continue;
      const ucs_status_ptr_t req = ucp_ep_close_nbx(peers_[r].ep, &p);
      peers_[r].ep = nullptr;
      if (req == nullptr || UCS_PTR_IS_ERR(req)) continue;
      const uint64_t until = coll_gpu_now_ns() + kCloseWaitNs;
      while (ucp_request_check_status(req) == UCS_INPROGRESS && coll_gpu_now_ns() < until) ucp_worker_progress(worker_);
      ucp_request_free(req);
    }
  }
}

void UcxNet::close() {
  close_endpoints();
  free(peers_);
  peers_ = nullptr;
  if (addr_ != nullptr) ucp_worker_release_address(worker_, addr_);
  addr_ = nullptr;
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  worker_ = nullptr;
  efd_ = -1;
  if (context_ != nullptr) ucp_cleanup(context_);
  context_ = nullptr;
}

}  // namespace coll_gpu
