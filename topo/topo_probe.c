/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Probing this node (topo_probe.h): hwloc walks the PCI tree, NVML tells each GPU's NVLinks.
 */
#include "topo/topo_probe.h"

#include <ctype.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define NVIDIA_VENDOR 0x10de
#define NVSWITCH_TCLASS "0x068000" /* the class NCCL gives an NVSwitch as an NVLink's far end */
#define GPU_TCLASS "0x030200"      /* a 3D controller: what NCCL gives a GPU as an NVLink's far end */
#define MAX_PCI_DEPTH 16           /* bridges between a device and its host bridge */

static coll_gpu_status_t say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static coll_gpu_status_t say(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return COLL_GPU_SYSTEM_ERROR;
}

/* "00000000:19:00.0" or "0000:19:00.0", any case -> "0000:19:00.0"; domains above 16 bits are kept. */
static void normalize_busid(const char *in, char out[TOPO_BUSID_LEN]) {
  char *end;
  const unsigned long domain = strtoul(in, &end, 16);
  if (*end == ':' && domain <= 0xffff)
    snprintf(out, TOPO_BUSID_LEN, "%04lx%s", domain, end);
  else
    snprintf(out, TOPO_BUSID_LEN, "%s", in);
  for (char *c = out; *c; ++c) *c = (char)tolower((unsigned char)*c);
}

/* ------------------------------------------------------------------ NVML through dlopen */

typedef int nvml_return_t; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device *nvml_device_t;
typedef struct { /* nvmlPciInfo_t, as the _v2/_v3 entry points fill it */
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} nvml_pci_t;
enum { NVML_CAP_P2P_SUPPORTED = 0, NVML_REMOTE_GPU = 0, NVML_REMOTE_SWITCH = 2 };

typedef struct {
  void *lib;
  nvml_return_t (*shutdown)(void);
  nvml_return_t (*by_busid)(const char *, nvml_device_t *);
  nvml_return_t (*cc)(nvml_device_t, int *, int *);
  nvml_return_t (*state)(nvml_device_t, unsigned, int *);
  nvml_return_t (*cap)(nvml_device_t, unsigned, int, unsigned *);
  nvml_return_t (*remote_pci)(nvml_device_t, unsigned, nvml_pci_t *);
  nvml_return_t (*remote_type)(nvml_device_t, unsigned, int *); /* newer drivers only */
} nvml_t;

static int nvml_sm(void *ctx, const char *busid) {
  nvml_t *n = ctx;
  nvml_device_t d;
  int major, minor;
  if (n->by_busid(busid, &d) != 0 || n->cc(d, &major, &minor) != 0) return 0;
  return major * 10 + minor;
}

static int nvml_links(void *ctx, const char *busid, topo_nvlink_end_t *ends, int max) {
  nvml_t *n = ctx;
  nvml_device_t d;
  if (n->by_busid(busid, &d) != 0) return 0;
  int count = 0;
  for (unsigned l = 0; l < TOPO_MAX_NVLINKS && count < max; ++l) {
    int active = 0;
    unsigned p2p = 0;
    nvml_pci_t pci;
    if (n->state(d, l, &active) != 0 || !active) continue;
    if (n->cap(d, l, NVML_CAP_P2P_SUPPORTED, &p2p) != 0 || !p2p) continue;
    if (n->remote_pci(d, l, &pci) != 0) continue;
    topo_nvlink_end_t *e = &ends[count++];
    normalize_busid(pci.bus_id, e->busid);
    int type = -1;
    nvml_device_t far;
    if (n->remote_type == NULL || n->remote_type(d, l, &type) != 0)
      type = n->by_busid(e->busid, &far) == 0 ? NVML_REMOTE_GPU : NVML_REMOTE_SWITCH; /* not a GPU NVML knows */
    e->nvswitch = type != NVML_REMOTE_GPU;
  }
  return count;
}

coll_gpu_status_t topo_nvml_open(topo_gpu_info_t *info, char *err, size_t errlen) {
  memset(info, 0, sizeof(*info));
  nvml_t *n = calloc(1, sizeof(*n));
  if (n == NULL) return say(err, errlen, "out of memory");
  n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (n->lib == NULL) {
    say(err, errlen, "%s", dlerror());
    free(n);
    return COLL_GPU_SYSTEM_ERROR;
  }
  nvml_return_t (*init)(void) = (nvml_return_t(*)(void))dlsym(n->lib, "nvmlInit_v2");
  n->shutdown = (nvml_return_t(*)(void))dlsym(n->lib, "nvmlShutdown");
  *(void **)&n->by_busid = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
  *(void **)&n->cc = dlsym(n->lib, "nvmlDeviceGetCudaComputeCapability");
  *(void **)&n->state = dlsym(n->lib, "nvmlDeviceGetNvLinkState");
  *(void **)&n->cap = dlsym(n->lib, "nvmlDeviceGetNvLinkCapability");
  *(void **)&n->remote_pci = dlsym(n->lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  *(void **)&n->remote_type = dlsym(n->lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
  int rc;
  if (init == NULL || n->shutdown == NULL || n->by_busid == NULL || n->cc == NULL || n->state == NULL ||
      n->cap == NULL || n->remote_pci == NULL) {
    say(err, errlen, "libnvidia-ml.so.1 lacks the NVLink queries (driver too old)");
  } else if ((rc = init()) != 0) {
    say(err, errlen, "nvmlInit failed (NVML error %d)", rc);
  } else {
    info->ctx = n;
    info->sm = nvml_sm;
    info->nvlinks = nvml_links;
    return COLL_GPU_SUCCESS;
  }
  dlclose(n->lib);
  free(n);
  return COLL_GPU_SYSTEM_ERROR;
}

void topo_nvml_close(topo_gpu_info_t *info) {
  nvml_t *n = info->ctx;
  if (n == NULL) return;
  n->shutdown();
  dlclose(n->lib);
  free(n);
  memset(info, 0, sizeof(*info));
}

/* ------------------------------------------------------------------ the <gpu> element */

static coll_gpu_status_t add_gpu(topo_xml_node_t *pci, int dev, const topo_gpu_info_t *info) {
  const char *busid = topo_xml_attr(pci, "busid");
  topo_xml_node_t *g = topo_xml_add(pci, "gpu");
  if (g == NULL || topo_xml_setf(g, "dev", "%d", dev) != 0) return COLL_GPU_SYSTEM_ERROR;
  if (info == NULL || busid == NULL) return COLL_GPU_SUCCESS;
  const int sm = info->sm(info->ctx, busid);
  if (sm > 0 && topo_xml_setf(g, "sm", "%d", sm) != 0) return COLL_GPU_SYSTEM_ERROR;
  topo_nvlink_end_t ends[TOPO_MAX_NVLINKS];
  const int n = info->nvlinks(info->ctx, busid, ends, TOPO_MAX_NVLINKS);
  /* one <nvlink> per far end, with the number of links to it, in the order the links first reach it */
  for (int i = 0; i < n; ++i) {
    int first = 1, count = 0;
    for (int j = 0; j < n; ++j)
      if (strcmp(ends[i].busid, ends[j].busid) == 0) {
        if (j < i) first = 0;
        ++count;
      }
    if (!first) continue;
    topo_xml_node_t *l = topo_xml_add(g, "nvlink");
    if (l == NULL || topo_xml_set(l, "target", ends[i].busid) != 0 || topo_xml_setf(l, "count", "%d", count) != 0 ||
        topo_xml_set(l, "tclass", ends[i].nvswitch ? NVSWITCH_TCLASS : GPU_TCLASS) != 0)
      return COLL_GPU_SYSTEM_ERROR;
  }
  return COLL_GPU_SUCCESS;
}

/* Completes every GPU <pci> below n, counted in *done; *dev numbers them in document order. */
static coll_gpu_status_t complete(topo_xml_node_t *n, const topo_gpu_info_t *info, int *dev, int *done) {
  for (int i = 0; i < n->nchildren; ++i) {
    topo_xml_node_t *c = n->children[i];
    if (topo_xml_is_gpu(c)) {
      const int d = (*dev)++;
      if (topo_xml_child(c, "gpu") != NULL) continue;
      if (add_gpu(c, d, info) != COLL_GPU_SUCCESS) return COLL_GPU_SYSTEM_ERROR;
      ++*done;
    } else if (complete(c, info, dev, done) != COLL_GPU_SUCCESS) {
      return COLL_GPU_SYSTEM_ERROR;
    }
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t topo_complete(topo_xml_node_t *root, const topo_gpu_info_t *info, int *completed) {
  int dev = 0;
  *completed = 0;
  return complete(root, info, &dev, completed);
}

/* ------------------------------------------------------------------ hwloc */

typedef struct {
  hwloc_topology_t t;
  const topo_probe_opts_t *o;
  topo_xml_node_t *root;
  int ngpus, nnics;
  int has_ib; /* some NIC is an OpenFabrics device: plain Ethernet ports are left out */
} probe_t;

static void busid_of(const struct hwloc_pcidev_attr_s *a, char out[TOPO_BUSID_LEN]) {
  snprintf(out, TOPO_BUSID_LEN, "%04x:%02x:%02x.%x", a->domain, a->bus, a->dev, a->func);
}

/* The first line of <sysfs>/<path>, without its newline; 0 when there is none. */
static int read_sys(const probe_t *p, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int read_sys(const probe_t *p, char *buf, size_t len, const char *fmt, ...) {
  char rel[256], path[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rel, sizeof(rel), fmt, ap);
  va_end(ap);
  snprintf(path, sizeof(path), "%s/%s", p->o->sysfs != NULL ? p->o->sysfs : "/sys", rel);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  const int ok = fgets(buf, (int)len, f) != NULL;
  fclose(f);
  if (ok) buf[strcspn(buf, "\n")] = '\0';
  return ok && buf[0] != '\0';
}

/* class, link_speed and link_width of the <pci> of a device or bridge. */
static coll_gpu_status_t pci_attrs(const probe_t *p, topo_xml_node_t *x, const struct hwloc_pcidev_attr_s *a) {
  char busid[TOPO_BUSID_LEN], v[64];
  busid_of(a, busid);
  if (topo_xml_set(x, "busid", busid) != 0 || topo_xml_setf(x, "class", "0x%04x00", a->class_id) != 0)
    return COLL_GPU_SYSTEM_ERROR;
  if (read_sys(p, v, sizeof(v), "bus/pci/devices/%s/max_link_speed", busid) && topo_xml_set(x, "link_speed", v) != 0)
    return COLL_GPU_SYSTEM_ERROR;
  if (read_sys(p, v, sizeof(v), "bus/pci/devices/%s/max_link_width", busid) && topo_xml_set(x, "link_width", v) != 0)
    return COLL_GPU_SYSTEM_ERROR;
  return COLL_GPU_SUCCESS;
}

static topo_xml_node_t *child_with(topo_xml_node_t *n, const char *name, const char *key, const char *value) {
  for (int i = 0; i < n->nchildren; ++i) {
    const char *v = topo_xml_attr(n->children[i], key);
    if (strcmp(n->children[i]->name, name) == 0 && v != NULL && strcmp(v, value) == 0) return n->children[i];
  }
  return NULL;
}

/* The <pci> of a device or bridge below x, made on first use. */
static topo_xml_node_t *pci_of(const probe_t *p, topo_xml_node_t *x, const struct hwloc_pcidev_attr_s *a) {
  char busid[TOPO_BUSID_LEN];
  busid_of(a, busid);
  topo_xml_node_t *pci = child_with(x, "pci", "busid", busid);
  if (pci == NULL && ((pci = topo_xml_add(x, "pci")) == NULL || pci_attrs(p, pci, a) != 0)) return NULL;
  return pci;
}

/* The <cpu> of the NUMA node a PCI device hangs from, made on first use. */
static topo_xml_node_t *cpu_of(probe_t *p, hwloc_obj_t dev) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(p->t, dev);
  int numa = anc != NULL && anc->nodeset != NULL ? hwloc_bitmap_first(anc->nodeset) : 0;
  if (numa < 0) numa = 0;
  char id[16];
  snprintf(id, sizeof(id), "%d", numa);
  topo_xml_node_t *cpu = child_with(p->root, "cpu", "numaid", id);
  if (cpu != NULL) return cpu;
  if ((cpu = topo_xml_add(p->root, "cpu")) == NULL || topo_xml_set(cpu, "numaid", id) != 0) return NULL;
  if (anc != NULL && anc->cpuset != NULL) {
    /* NCCL's affinity format: hex words joined by commas, without hwloc's 0x */
    char set[TOPO_XML_MAX_VALUE], out[TOPO_XML_MAX_VALUE];
    if (hwloc_bitmap_snprintf(set, sizeof(set), anc->cpuset) > 0) {
      size_t o = 0;
      for (const char *c = set; *c && o + 1 < sizeof(out); ++c) {
        if (c[0] == '0' && c[1] == 'x') {
          ++c;
          continue;
        }
        out[o++] = *c;
      }
      out[o] = '\0';
      if (topo_xml_set(cpu, "affinity", out) != 0) return NULL;
    }
  }
  struct utsname u;
  if (uname(&u) == 0 && topo_xml_set(cpu, "arch", u.machine) != 0) return NULL;
  hwloc_obj_t pkg = anc != NULL ? hwloc_get_ancestor_obj_by_type(p->t, HWLOC_OBJ_PACKAGE, anc) : NULL;
  if (pkg == NULL && anc != NULL && anc->type == HWLOC_OBJ_PACKAGE) pkg = anc;
  if (pkg == NULL) pkg = hwloc_get_obj_by_type(p->t, HWLOC_OBJ_PACKAGE, 0);
  static const char *const infos[][2] = {
      {"vendor", "CPUVendor"}, {"familyid", "CPUFamilyNumber"}, {"modelid", "CPUModelNumber"}};
  for (size_t i = 0; pkg != NULL && i < sizeof(infos) / sizeof(infos[0]); ++i) {
    const char *v = hwloc_obj_get_info_by_name(pkg, infos[i][1]);
    if (v != NULL && topo_xml_set(cpu, infos[i][0], v) != 0) return NULL;
  }
  return cpu;
}

/* The element a device hangs from: its CPU, then one <pci> per PCIe switch on the way down. */
static topo_xml_node_t *parent_of(probe_t *p, hwloc_obj_t dev) {
  hwloc_obj_t chain[MAX_PCI_DEPTH];
  int n = 0;
  for (hwloc_obj_t b = dev->parent; b != NULL && b->type == HWLOC_OBJ_BRIDGE && n < MAX_PCI_DEPTH; b = b->parent)
    if (b->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) chain[n++] = b; /* host bridges: the CPU */
  topo_xml_node_t *x = cpu_of(p, dev);
  /* chain[n-1] is the root port (no element); below it a switch shows as an upstream port and then
   * a downstream port: the upstream ports are chain[n-2], chain[n-4], ... */
  for (int i = n - 2; x != NULL && i >= 0; i -= 2) x = pci_of(p, x, &chain[i]->attr->bridge.upstream.pci);
  return x;
}

/* A <net> per active port of an OpenFabrics device, speed from the port's rate ("200 Gb/sec (4X HDR)"), counted in
 * *ports. */
static coll_gpu_status_t add_ib_ports(probe_t *p, topo_xml_node_t *nic, const char *name, int *ports) {
  *ports = 0;
  for (int port = 1; port <= 8; ++port) {
    char state[64], rate[64];
    if (!read_sys(p, state, sizeof(state), "class/infiniband/%s/ports/%d/state", name, port)) continue;
    if (strstr(state, "ACTIVE") == NULL) continue;
    topo_xml_node_t *net = topo_xml_add(nic, "net");
    if (net == NULL || topo_xml_set(net, "name", name) != 0 || topo_xml_setf(net, "dev", "%d", p->nnics) != 0 ||
        topo_xml_setf(net, "port", "%d", port) != 0)
      return COLL_GPU_SYSTEM_ERROR;
    if (read_sys(p, rate, sizeof(rate), "class/infiniband/%s/ports/%d/rate", name, port) && atof(rate) > 0 &&
        topo_xml_setf(net, "speed", "%ld", (long)(atof(rate) * 1000)) != 0)
      return COLL_GPU_SYSTEM_ERROR;
    ++*ports;
  }
  return COLL_GPU_SUCCESS;
}

static coll_gpu_status_t add_nic(probe_t *p, hwloc_obj_t dev, hwloc_obj_t os) {
  topo_xml_node_t *parent = parent_of(p, dev);
  topo_xml_node_t *pci = parent != NULL ? pci_of(p, parent, &dev->attr->pcidev) : NULL;
  if (pci == NULL) return COLL_GPU_SYSTEM_ERROR;
  topo_xml_node_t *nic = topo_xml_child(pci, "nic");
  if (nic == NULL && (nic = topo_xml_add(pci, "nic")) == NULL) return COLL_GPU_SYSTEM_ERROR;
  if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
    int ports;
    if (add_ib_ports(p, nic, os->name, &ports) != COLL_GPU_SUCCESS) return COLL_GPU_SYSTEM_ERROR;
    if (ports > 0) {
      ++p->nnics;
      return COLL_GPU_SUCCESS;
    }
    /* no port state to read (a replayed machine): the device, speed unknown */
  }
  char v[64];
  topo_xml_node_t *net = topo_xml_add(nic, "net");
  if (net == NULL || topo_xml_set(net, "name", os->name) != 0 || topo_xml_setf(net, "dev", "%d", p->nnics++) != 0)
    return COLL_GPU_SYSTEM_ERROR;
  if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && topo_xml_set(net, "port", "1") != 0)
    return COLL_GPU_SYSTEM_ERROR;
  if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && read_sys(p, v, sizeof(v), "class/net/%s/speed", os->name) &&
      atol(v) > 0 && topo_xml_set(net, "speed", v) != 0)
    return COLL_GPU_SYSTEM_ERROR;
  return COLL_GPU_SUCCESS;
}

static coll_gpu_status_t add_gpu_pci(probe_t *p, hwloc_obj_t dev) {
  topo_xml_node_t *parent = parent_of(p, dev);
  topo_xml_node_t *pci = parent != NULL ? pci_of(p, parent, &dev->attr->pcidev) : NULL;
  return pci == NULL ? COLL_GPU_SYSTEM_ERROR : add_gpu(pci, p->ngpus++, p->o->gpus);
}

static coll_gpu_status_t walk_pci(probe_t *p, int nics) {
  for (hwloc_obj_t dev = hwloc_get_next_pcidev(p->t, NULL); dev != NULL; dev = hwloc_get_next_pcidev(p->t, dev)) {
    const struct hwloc_pcidev_attr_s *a = &dev->attr->pcidev;
    if (!nics) {
      if (a->vendor_id == NVIDIA_VENDOR && a->class_id >> 8 == 0x03 && add_gpu_pci(p, dev) != 0)
        return COLL_GPU_SYSTEM_ERROR;
      continue;
    }
    for (hwloc_obj_t os = dev->io_first_child; os != NULL; os = os->next_sibling) {
      if (os->type != HWLOC_OBJ_OS_DEVICE) continue;
      const int ib = os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
      if ((ib || (!p->has_ib && os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK)) && add_nic(p, dev, os) != 0)
        return COLL_GPU_SYSTEM_ERROR;
    }
  }
  return COLL_GPU_SUCCESS;
}

coll_gpu_status_t topo_probe(const topo_probe_opts_t *opts, topo_xml_node_t **root, char *err, size_t errlen) {
  probe_t p = {.o = opts};
  *root = NULL;
  if (hwloc_topology_init(&p.t) != 0) return say(err, errlen, "hwloc_topology_init failed");
  coll_gpu_status_t rc = COLL_GPU_SYSTEM_ERROR;
  if (opts->hwloc_xml != NULL && hwloc_topology_set_xml(p.t, opts->hwloc_xml) != 0) {
    say(err, errlen, "%s: hwloc cannot read it as an XML topology", opts->hwloc_xml);
    goto out;
  }
  hwloc_topology_set_io_types_filter(p.t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(p.t) != 0) {
    say(err, errlen, "hwloc_topology_load failed");
    goto out;
  }
  for (hwloc_obj_t os = hwloc_get_next_osdev(p.t, NULL); os != NULL; os = hwloc_get_next_osdev(p.t, os))
    if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) p.has_ib = 1;
  if ((p.root = topo_xml_add(NULL, "system")) == NULL || topo_xml_set(p.root, "version", "1") != 0 ||
      walk_pci(&p, 0) != 0 || walk_pci(&p, 1) != 0) {
    say(err, errlen, "out of memory while probing");
    topo_xml_free(p.root);
    goto out;
  }
  *root = p.root;
  rc = COLL_GPU_SUCCESS;
out:
  hwloc_topology_destroy(p.t);
  return rc;
}
