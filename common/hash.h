/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Hashing of plain bytes (FNV-1a, 64 bits): identities, parameter sets and ring orders the ranks compare.
 */
#ifndef COLL_GPU_HASH_H
#define COLL_GPU_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The hash of `bytes` at data, from `seed` (a hash so far, to chain several pieces; 0 for the first). */
uint64_t coll_gpu_hash(const void *data, size_t bytes, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
