/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * coll_gpu_sentinel.so: an object with no code that gpu_mem.c loads (never to be unloaded) as the
 * last object of the process. The loader appends every object loaded later after it, so while its
 * link-map successor is NULL no library, libcuda included, has been loaded since: one pointer read
 * answers "can device pointers exist yet?".
 */
const char coll_gpu_sentinel[] = "coll/gpu loader sentinel";
