/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Step timestamps, to measure where a call's time goes between the host, the kernels and the network proxy
 * (test/perf/coll_gpu_step_trace sums them up; docs/benchmarks.md). Off unless the environment variable
 * COLL_GPU_STEP_TRACE names a directory (or a test starts it): then each process records its first
 * COLL_GPU_TRACE_MAX_EVENTS events and writes them all, each time an engine is released, to
 * DIR/steps.<pid>, a line an event: KIND RANK PEER CONN STEP NS, NS on CLOCK_MONOTONIC, the one clock of every
 * process of a machine (the hosts of the mini-cluster too). The kinds:
 *   L  the host launches call STEP (its seq) of rank RANK; PEER: its collective, CONN: its algorithm;
 *   A  the launch returned (the call is on the GPU's stream, or with the lingering kernel);
 *   D  the host sees that call done;
 *   S  rank RANK's proxy hands step STEP of its connection CONN to rank PEER to the network;
 *   H  that send completed;
 *   R  step STEP of connection CONN from rank PEER arrived at rank RANK's proxy, published to its kernel;
 *   P  a host thread that plays rank RANK's kernel (test/perf/coll_gpu_proxy_bench) posted step STEP of
 *      connection CONN to rank PEER;
 *   K  that thread saw step STEP of connection CONN from rank PEER arrive.
 * Off, a call costs one load and a branch.
 */
#ifndef COLL_GPU_PROXY_TRACE_H
#define COLL_GPU_PROXY_TRACE_H

#include <stdint.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define COLL_GPU_TRACE_MAX_EVENTS (1 << 20)

/* Starts recording (dir: where coll_gpu_trace_write writes); COLL_GPU_SYSTEM_ERROR without memory for the events. */
coll_gpu_status_t coll_gpu_trace_start(const char *dir);
/* Stops recording and forgets the events. */
void coll_gpu_trace_stop(void);
/* One event, while recording (and the first time, started from COLL_GPU_STEP_TRACE where it is set). */
void coll_gpu_trace(char kind, int rank, int peer, int conn, uint64_t step);
/* Writes every event so far to DIR/steps.<pid>: COLL_GPU_SYSTEM_ERROR where the file cannot be written (nothing is
 * recorded: success). */
coll_gpu_status_t coll_gpu_trace_write(void);

#ifdef __cplusplus
}
#endif

#endif
