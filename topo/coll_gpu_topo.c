/*
 * coll_gpu_topo: the GPU path matrix and the rings the search chooses for a node described in NCCL's
 * topology XML format.
 *
 * usage: coll_gpu_topo --xml FILE [--dump OUT]
 *   --xml FILE  the topology to read
 *   --dump OUT  write it back (as read, normalized layout) to OUT ("-": standard output)
 * Rings print one per line as "Channel NN/MM : g0 g1 ... gn-1", each GPU named by its rank attribute
 * (else its index in the file). Exit status: 0, 1 for a bad topology, 2 for bad usage.
 */
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"

static int usage(void) {
  fprintf(stderr,
          "usage: coll_gpu_topo --xml FILE [--dump OUT]\n"
          "Probing this machine (hwloc + NVML) is not built yet: give its topology with --xml.\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *xml = NULL, *dump = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--xml") == 0 && i + 1 < argc)
      xml = argv[++i];
    else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc)
      dump = argv[++i];
    else
      return usage();
  }
  if (xml == NULL) return usage();
  char err[512];
  topo_xml_node_t *root;
  topo_system_t *s;
  if (topo_xml_load(xml, &root, err, sizeof(err)) != 0 || topo_system_build(root, xml, &s, err, sizeof(err)) != 0) {
    fprintf(stderr, "coll_gpu_topo: %s\n", err);
    return 1;
  }
  int rc = 0;
  if (dump != NULL) {
    FILE *f = strcmp(dump, "-") == 0 ? stdout : fopen(dump, "w");
    if (f == NULL || topo_xml_write(root, f) != 0 || (f != stdout && fclose(f) != 0)) {
      fprintf(stderr, "coll_gpu_topo: cannot write %s\n", dump);
      rc = 1;
    }
  }
  const int n = topo_ngpus(s);
  printf("%s: %d GPUs\nGPU path matrix (path type/GB/s per direction):\n%6s", xml, n, "");
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
  }
  topo_system_free(s);
  topo_xml_free(root);
  return rc;
}
