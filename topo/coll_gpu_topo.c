/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * coll_gpu_topo: the GPU path matrix and the rings the search chooses, for this machine (probed with
 * hwloc and NVML) or for nodes described in NCCL's topology XML format.
 *
 * usage: coll_gpu_topo [--xml FILE [--xml FILE ...]] [--dump OUT] | --help | --version
 *   --xml FILE  the topology of a node, once per node; without it, this machine is probed
 *   --dump OUT  write the probed topology, or the (first) file in normalized layout, to OUT ("-":
 *               standard output, before the report)
 * Prints each GPU's NIC port, the GPU path matrix, and the rings, one per line as
 * "Channel NN/MM : g0 g1 ... gn-1", then the trees, one per line as "Tree NN/MM :" and per GPU
 * "c0/c1/c2->g->parent" (NCCL's form, -1 for none), each GPU named by its rank attribute (else its index over the
 * files). Exit status: 0, 1 for a bad topology, 2 for bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"
#include "topo/topo_probe.h"

#define MAX_FILES 8

/* The usage text: on standard output for --help (exit 0), on standard error for bad usage (exit 2). */
static int usage(FILE *to, int status) {
  fprintf(to,
          "usage: coll_gpu_topo [--xml FILE [--xml FILE ...]] [--dump OUT]\n"
          "Prints the NIC port of each GPU, the path type and bandwidth between every pair of GPUs, and the\n"
          "rings and trees coll/gpu's search picks, for this machine or the nodes given.\n"
          "  --xml FILE  a node's topology in NCCL's XML format, once per node (at most %d);\n"
          "              without --xml, this machine is probed (hwloc and NVML)\n"
          "  --dump OUT  write the topology used (\"-\": standard output)\n"
          "  --help      this text\n"
          "  --version   the version of coll/gpu this tool belongs to\n"
          "See coll_gpu_topo(1).\n",
          MAX_FILES);
  return status;
}

int main(int argc, char **argv) {
  const char *xml[MAX_FILES], *dump = NULL;
  int nxml = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--xml") == 0 && i + 1 < argc && nxml < MAX_FILES)
      xml[nxml++] = argv[++i];
    else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
      dump = argv[++i];
    else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return usage(stdout, 0);
    else if (strcmp(argv[i], "--version") == 0) {
      printf("coll_gpu_topo (coll/gpu) %s\n", COLL_GPU_VERSION);
      return 0;
    } else
      return usage(stderr, 2);
  }
  char err[512];
  topo_xml_node_t *roots[MAX_FILES];
  topo_system_t *s = NULL;
  int loaded = 0;
  if (nxml == 0) {
    /* this machine: hwloc for the PCI tree, NVML for the NVLinks when there is a driver */
    topo_gpu_info_t nvml;
    const int have_nvml = topo_nvml_open(&nvml, err, sizeof(err)) == 0;
    if (!have_nvml) fprintf(stderr, "coll_gpu_topo: %s: GPUs are listed without NVLinks\n", err);
    topo_probe_opts_t opts = {NULL, "/sys", have_nvml ? &nvml : NULL};
    const int rc = topo_probe(&opts, &roots[0], err, sizeof(err));
    if (have_nvml) topo_nvml_close(&nvml);
    if (rc != 0) {
      fprintf(stderr, "coll_gpu_topo: %s\n", err);
      return 1;
    }
    xml[nxml++] = "this machine";
    loaded = 1;
  }
  while (loaded < nxml && topo_xml_load(xml[loaded], &roots[loaded], err, sizeof(err)) == 0) ++loaded;
  int rc = 0;
  if (dump != NULL && loaded > 0) {
    const int to_stdout = strcmp(dump, "-") == 0;
    if (to_stdout ? topo_xml_write(roots[0], stdout) != 0 : topo_xml_save(roots[0], dump, err, sizeof(err)) != 0) {
      fprintf(stderr, "coll_gpu_topo: %s\n", to_stdout ? "cannot write to the standard output" : err);
      rc = 1;
    }
  }
  if (loaded < nxml || topo_system_build((const topo_xml_node_t *const *)roots, xml, nxml, &s, err, sizeof(err)) != 0) {
    fprintf(stderr, "coll_gpu_topo: %s\n", err);
    for (int i = 0; i < loaded; ++i) topo_xml_free(roots[i]);
    return 1;
  }
  const int n = topo_ngpus(s);
  printf("%d node(s), %d GPUs\n", nxml, n);
  for (int g = 0; g < n; ++g) {
    topo_path_type_t t;
    const char *nic = topo_gpu_nic(s, g, &t);
    printf("GPU %d (node %d, %s): NIC %s%s%s\n", topo_gpu_label(s, g), topo_gpu_node(s, g), topo_gpu_busid(s, g),
           nic != NULL ? nic : "none", nic != NULL ? " via " : "", nic != NULL ? topo_path_name(t) : "");
  }
  printf("GPU path matrix (path type/GB/s per direction):\n%6s", "");
  for (int j = 0; j < n; ++j) printf(" %9d", topo_gpu_label(s, j));
  printf("\n");
  for (int i = 0; i < n; ++i) {
    printf("%6d", topo_gpu_label(s, i));
    for (int j = 0; j < n; ++j) {
      const topo_path_t p = topo_path(s, i, j);
      if (i == j)
        printf(" %9s", topo_path_name(p.type));
      else
        printf(" %5s/%-3.0f", topo_path_name(p.type), p.bw);
    }
    printf("\n");
  }
  topo_rings_t rings;
  if (topo_search_rings(s, &rings, err, sizeof(err)) != 0) {
    fprintf(stderr, "coll_gpu_topo: %s\n", err);
    rc = 1;
  } else {
    for (int r = 0; r < rings.nrings; ++r) {
      printf("Channel %02d/%02d :", r, rings.nrings);
      for (int k = 0; k < n; ++k) printf(" %d", topo_gpu_label(s, rings.order[r][k]));
      printf("\n");
    }
    topo_trees_t trees;
    topo_search_trees(s, &rings, &trees);
    /* NCCL's form, per GPU: child/child/child->gpu->parent, -1 for none */
    for (int t = 0; t < trees.ntrees; ++t) {
      printf("Tree %02d/%02d :", t, trees.ntrees);
      for (int g = 0; g < n; ++g) {
        printf(" ");
        for (int c = 0; c < TOPO_TREE_ARITY; ++c) {
          const int d = trees.down[t][g][c];
          printf("%d%s", d < 0 ? -1 : topo_gpu_label(s, d), c + 1 < TOPO_TREE_ARITY ? "/" : "");
        }
        const int up = trees.up[t][g];
        printf("->%d->%d", topo_gpu_label(s, g), up < 0 ? -1 : topo_gpu_label(s, up));
      }
      printf("\n");
    }
  }
  topo_system_free(s);
  for (int i = 0; i < nxml; ++i) topo_xml_free(roots[i]);
  return rc;
}
