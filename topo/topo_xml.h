/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Topology XML in NCCL's format (<system version="1">, <cpu>, <pci>, <gpu>, <nvlink>, <nic>, <net>):
 * a small, bounded reader into an element tree, and a writer. No MPI, no CUDA.
 *
 * The reader takes elements with attributes, nesting, self-closing tags, comments and the <?xml ...?>
 * declaration, and the five predefined entities. Text between elements other than white space is an
 * error. Every error names the file and line. Bounds: TOPO_XML_MAX_BYTES per file, TOPO_XML_MAX_DEPTH
 * nesting, TOPO_XML_MAX_NODES elements, TOPO_XML_MAX_ATTRS attributes per element, names up to
 * TOPO_XML_MAX_NAME and values up to TOPO_XML_MAX_VALUE bytes.
 */
#ifndef COLL_GPU_TOPO_XML_H
#define COLL_GPU_TOPO_XML_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "common/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TOPO_XML_MAX_BYTES (1 << 20) /* NCCL's dump of a 16-GPU node is ~20 KB */
#define TOPO_XML_MAX_DEPTH 32        /* system, cpu, a few PCI switches, gpu, nvlink */
#define TOPO_XML_MAX_NODES 4096
#define TOPO_XML_MAX_ATTRS 32
#define TOPO_XML_MAX_NAME 64
#define TOPO_XML_MAX_VALUE 256

typedef struct topo_xml_node {
  char *name;
  int line; /* where its start tag begins */
  int nattrs;
  char **keys, **values;
  int nchildren;
  struct topo_xml_node **children;
  struct topo_xml_node *parent;
} topo_xml_node_t;

/* Parses text (len bytes; `file` names it in errors). Returns COLL_GPU_SUCCESS and the root element, or a failure
 * (COLL_GPU_INVALID_INPUT: not valid) with "file:line: what" in err. */
coll_gpu_status_t topo_xml_parse(const char *text, size_t len, const char *file, topo_xml_node_t **root, char *err,
                                 size_t errlen);
/* Reads and parses a file, which must be a regular one (a FIFO or a device is refused, never waited on). */
coll_gpu_status_t topo_xml_load(const char *path, topo_xml_node_t **root, char *err, size_t errlen);
/* Writes the tree, two spaces per level, attributes in their order. COLL_GPU_SYSTEM_ERROR: a write failed. */
coll_gpu_status_t topo_xml_write(const topo_xml_node_t *root, FILE *f);
/* Writes the tree to a new file beside path and renames it to path: whatever path was (a symbolic link
 * too) is replaced, never written through. Returns COLL_GPU_SUCCESS, or a failure with the reason in err. */
coll_gpu_status_t topo_xml_save(const topo_xml_node_t *root, const char *path, char *err, size_t errlen);
void topo_xml_free(topo_xml_node_t *root);
/* Writes "file:line: " and the formatted message into err; returns COLL_GPU_INVALID_INPUT. The errors of topo/ all
 * look so. */
coll_gpu_status_t topo_verror(char *err, size_t errlen, const char *file, int line, const char *fmt, va_list ap);

/* The value of attribute key, or NULL. */
const char *topo_xml_attr(const topo_xml_node_t *n, const char *key);
/* The first child element named `name`, or NULL. */
topo_xml_node_t *topo_xml_child(const topo_xml_node_t *n, const char *name);
/* Whether n is a GPU: a <pci> of PCI class 0x03xxxx (display controllers). */
int topo_xml_is_gpu(const topo_xml_node_t *n);
/* The CPUs near the GPU with bus id `busid` below root: the affinity of the <cpu> it hangs from (NCCL's
 * format: 32-bit hex words joined by commas, the last one CPUs 0-31), into cpus[] in increasing order, at
 * most max of them. Returns how many: none where the GPU, its <cpu> or a readable affinity is missing. */
int topo_xml_gpu_cpus(const topo_xml_node_t *root, const char *busid, int *cpus, int max);
/* The NIC port nearest the GPU with bus id `busid` among those (<net name>) that take(name, ctx) accepts (take NULL:
 * every one): the first in file order below the GPU's closest ancestor that has one (its PCI switch, then its <cpu>,
 * then the whole system), as NCCL gives each GPU the NIC with the best path. Returns its <net>, NULL: no GPU or no
 * port. */
const topo_xml_node_t *topo_xml_gpu_net(const topo_xml_node_t *root, const char *busid,
                                        int (*take)(const char *name, void *ctx), void *ctx);
/* The CPUs near node n (a GPU's or a NIC port's): those of the <cpu> it hangs from, as topo_xml_gpu_cpus. */
int topo_xml_cpus_near(const topo_xml_node_t *n, int *cpus, int max);

/* Building trees (the probe, the merge of the ranks' views). NULL or a failure: out of memory, or past the
 * name and value bounds. */
topo_xml_node_t *topo_xml_add(topo_xml_node_t *parent, const char *name); /* at the end; NULL parent: a root */
coll_gpu_status_t topo_xml_set(topo_xml_node_t *n, const char *key, const char *value); /* sets or replaces */
void topo_xml_unset(topo_xml_node_t *n, const char *key);                               /* removes it, if there */
coll_gpu_status_t topo_xml_setf(topo_xml_node_t *n, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void topo_xml_remove(topo_xml_node_t *n); /* detaches it from its parent and frees it */
/* Adds to dst what src has and dst lacks, recursively: elements are the same when they have the same
 * name and the same key attribute (busid, numaid, target or name, the first present; bus ids in either
 * case); attributes dst lacks are copied, those it has are kept. Deterministic: the result depends
 * only on the two trees and their order. */
coll_gpu_status_t topo_xml_merge(topo_xml_node_t *dst, const topo_xml_node_t *src);
/* The tree as topo_xml_write writes it, in a malloc'd string of *len bytes; NULL when out of memory. */
char *topo_xml_text(const topo_xml_node_t *root, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
