/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Where the network proxy's threads run and how many it starts (engine/net.cc uses these). No MPI, no CUDA.
 */
#ifndef COLL_GPU_PROXY_CPUS_H
#define COLL_GPU_PROXY_CPUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* The CPUs the network proxy's threads belong near, from those near its GPU (gpu[0..ngpu)) and those near the NIC
 * port its traffic takes (nic[0..nnic); none between nodes of one machine): the CPUs near both; where they have none
 * in common (the NIC hangs from another CPU), the NIC's: the threads' work is the network's (every system call, every
 * poll of its completions), while between the GPU, the FIFOs' host memory and the NIC one crossing of the CPUs' link
 * stays wherever they run; without a NIC the GPU's. Lists in increasing order; out[] holds the more of ngpu and nnic.
 * Returns how many (0: neither is known); *by_gpu and *by_nic get whether they are near the GPU and the NIC. */
int coll_gpu_proxy_near(const int *gpu, int ngpu, const int *nic, int nnic, int *out, int *by_gpu, int *by_nic);
/* Whether UCX_NET_DEVICES's value `devices` ("mlx5_0:1,eth0": devices, a port after a colon or none; NULL, "" or
 * "all": every one) names the NIC port `name` (a topology <net name>, a device without its port). */
int coll_gpu_ucx_devices_take(const char *devices, const char *name);
/* Where the network proxy's threads run, from the CPUs near the GPU (near[0..nnear)) and the rank's
 * affinity (mine[0..nmine)). A rank bound to a core (at most 2 CPUs: a core and its second hardware
 * thread) keeps it: the near CPUs but its own (all of near if that leaves none). A rank that may run on
 * more (not bound, bound to a socket or a NUMA node, or confined by its launcher, a cpuset or taskset)
 * shares them with its threads: those of them near the GPU, or all of them where none is (as NCCL
 * places its threads), never CPUs it was kept off. Lists in increasing order; out[] holds the more of
 * nnear and nmine.
 * Returns how many CPUs it chose; *share_of gets how many the ranks of the machine share (the threads'
 * count comes from it): near's for a bound rank, the chosen ones' otherwise. */
int coll_gpu_proxy_cpus(const int *near, int nnear, const int *mine, int nmine, int *out, int *share_of);
/* How many progress threads a rank's proxy starts when the user leaves it to the engine: the rank's share
 * of the `ncpus` CPUs near its GPU (`ranks` ranks on its machine share them) less the one the rank itself
 * polls on, at least 1 and at most `most` (a thread per NET channel). Every thread polls while its
 * channels move: more of them than CPUs make each wait for a CPU, a time slice at a time. */
int coll_gpu_proxy_auto_threads(int ncpus, int ranks, int most);

#ifdef __cplusplus
}
#endif
#endif
