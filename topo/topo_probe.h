/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Probing this node into NCCL-format topology XML (topo_xml.h): hwloc for the CPUs (NUMA nodes), the
 * PCI tree, NVIDIA GPUs and NICs; NVML, opened with dlopen, for each GPU's compute capability and
 * NVLinks. The same NVML view completes a file that gives only the PCI placement. No MPI, no CUDA.
 *
 * The PCI tree is written the way NCCL writes it: one <pci> element per PCIe switch (its upstream
 * port), devices below it whatever downstream port they hang from, and no element for the CPU's root
 * ports; so two GPUs under one switch are PIX and GPUs on different root ports PHB.
 */
#ifndef COLL_GPU_TOPO_PROBE_H
#define COLL_GPU_TOPO_PROBE_H

#include "topo/topo_xml.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TOPO_BUSID_LEN 32   /* "0000:00:00.0" and NVML's 8-digit domains fit */
#define TOPO_MAX_NVLINKS 18 /* NVLinks of one GPU (H100/H200: 18) */

/* The far end of one NVLink. */
typedef struct {
  char busid[TOPO_BUSID_LEN]; /* lower case; an NVSwitch behind a VM reads fffffff:ff:ff.0 */
  int nvswitch;               /* 1: an NVSwitch, 0: a GPU */
} topo_nvlink_end_t;

/* What the probe asks of NVML about one GPU, by bus id. topo_nvml_open gives the real one; tests give
 * their own. */
typedef struct {
  void *ctx;
  /* Compute capability as major * 10 + minor, or 0 when NVML does not know the GPU. */
  int (*sm)(void *ctx, const char *busid);
  /* Its active NVLinks that carry P2P traffic, up to max of them: how many (none where NVML does not know the
   * GPU). */
  int (*nvlinks)(void *ctx, const char *busid, topo_nvlink_end_t *ends, int max);
} topo_gpu_info_t;

/* Opens libnvidia-ml.so.1 and initializes it. Returns COLL_GPU_SUCCESS, or a failure with the reason in err (no
 * driver). */
coll_gpu_status_t topo_nvml_open(topo_gpu_info_t *info, char *err, size_t errlen);
void topo_nvml_close(topo_gpu_info_t *info);

typedef struct {
  const char *hwloc_xml;       /* NULL: this machine; else an hwloc XML export of one (replays, tests) */
  const char *sysfs;           /* where sysfs is mounted ("/sys"), for PCIe link speeds and NIC ports */
  const topo_gpu_info_t *gpus; /* NULL: GPUs get no <gpu> element (no NVML) */
} topo_probe_opts_t;

/* Probes into a new <system version="1"> tree. Returns COLL_GPU_SUCCESS, or a failure with the reason in err. A machine
 * without GPUs gives a tree without any. */
coll_gpu_status_t topo_probe(const topo_probe_opts_t *opts, topo_xml_node_t **root, char *err, size_t errlen);

/* Gives every GPU <pci> of the tree that has no <gpu> child one from info (sm and NVLinks): a vendor
 * file with the PCI placement only, *completed of them. COLL_GPU_SYSTEM_ERROR: out of memory. */
coll_gpu_status_t topo_complete(topo_xml_node_t *root, const topo_gpu_info_t *info, int *completed);

#ifdef __cplusplus
}
#endif
#endif
