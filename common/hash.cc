/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * FNV-1a (common/hash.h).
 */
#include "common/hash.h"

uint64_t coll_gpu_hash(const void *data, size_t bytes, uint64_t seed) {
  /* FNV-1a: offset basis and prime of the 64-bit variant */
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  const unsigned char *p = (const unsigned char *)data;
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}
