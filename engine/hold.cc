/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A communicator's hold on the GPU path (engine/hold.h).
 */
#include "engine/hold.h"

#include "engine/calls.h"

void coll_gpu_hold_init(coll_gpu_hold_t *h) {
  static uint32_t tags; /* 0 is no communicator's */
  h->engine = nullptr;
  h->engine_state = h->agree_state = COLL_GPU_STATE_NONE;
  h->claims = 0;
  do h->tag = __atomic_add_fetch(&tags, 1, __ATOMIC_RELAXED);
  while (h->tag == 0);
}

int coll_gpu_hold_claim(coll_gpu_hold_t *h, uint32_t *mine) {
  if (!coll_gpu_path_is_gpu(*mine)) return 0;
  if (h->engine == nullptr) {
    __atomic_add_fetch(&h->claims, 1, __ATOMIC_ACQ_REL);
    return 1;
  }
  if (coll_gpu_engine_claim(h->engine, h->tag)) return 1;
  *mine = COLL_GPU_PATH_STAGE; /* another communicator's calls hold the engine */
  return 0;
}

void coll_gpu_hold_unclaim(coll_gpu_hold_t *h) {
  if (h->engine != nullptr)
    coll_gpu_engine_unclaim(h->engine, h->tag);
  else
    __atomic_sub_fetch(&h->claims, 1, __ATOMIC_ACQ_REL);
}

coll_gpu_engine_share_t coll_gpu_hold_share(const coll_gpu_hold_t *h, uint64_t members, int own_ok) {
  coll_gpu_engine_share_t s = {members, h->tag, __atomic_load_n(&h->claims, __ATOMIC_ACQUIRE), own_ok};
  return s;
}

void coll_gpu_hold_made(coll_gpu_hold_t *h, coll_gpu_engine_t *e) {
  if (e == nullptr) {
    h->engine_state = COLL_GPU_STATE_OFF;
    return;
  }
  h->engine = e;
  __atomic_store_n(&h->claims, 0, __ATOMIC_RELEASE); /* the engine counts them now */
  h->engine_state = COLL_GPU_STATE_READY;
}

void coll_gpu_hold_off(coll_gpu_hold_t *h) { h->engine_state = h->agree_state = COLL_GPU_STATE_OFF; }
