/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * The one parameter registry: every coll_gpu_* MCA variable is registered and checked here.
 * A value out of range is reported with the allowed range and replaced by the default.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_gpu.h"
#include "common/ll.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_vari.h" /* a parameter file's value as read */
#include "opal/util/show_help.h"

#define DEFAULT_PRIORITY 80 /* above tuned (30), sync (50) and self (75): this module wraps them */
#define DEFAULT_CACHE ((size_t)256 << 20)
#define MAX_CACHE ((size_t)64 << 30)

static const mca_base_component_t *component(void) { return &mca_coll_gpu_component.super.collm_version; }

/* Parses a comma-separated list of subsystem names, NCCL_DEBUG_SUBSYS style: "all", "INIT,COLL",
 * "^STAGE" (all but). Returns the mask, or -1 on an unknown name. */
static int parse_subsys(const char *s) {
  if (s == NULL || *s == '\0') return COLL_GPU_LOG_ALL;
  int invert = (*s == '^');
  if (invert) ++s;
  int mask = 0;
  while (*s != '\0') {
    size_t n = strcspn(s, ",");
    int bit = 0;
    if (n == 3 && strncasecmp(s, "ALL", 3) == 0) bit = COLL_GPU_LOG_ALL;
    for (int b = 1; b < COLL_GPU_LOG_ALL && bit == 0; b <<= 1) {
      const char *name = mca_coll_gpu_subsys_name(b);
      if (strlen(name) == n && strncasecmp(s, name, n) == 0) bit = b;
    }
    if (bit == 0) return -1;
    mask |= bit;
    s += n;
    if (*s == ',') ++s;
  }
  return invert ? (COLL_GPU_LOG_ALL & ~mask) : mask;
}

/* The variable coll_gpu_<name> (full), or NULL before it is registered. */
static const mca_base_var_t *variable(const char *full) {
  int index = -1;
  const mca_base_var_t *var = NULL;
  if (mca_base_var_find_by_name(full, &index) != OPAL_SUCCESS || mca_base_var_get(index, &var) != OPAL_SUCCESS)
    return NULL;
  return var;
}

/* The parameter file's line that set the variable, or NULL when it was set otherwise. */
static const mca_base_var_file_value_t *file_line(const mca_base_var_t *var) {
  if (var == NULL || (var->mbv_source != MCA_BASE_VAR_SOURCE_FILE && var->mbv_source != MCA_BASE_VAR_SOURCE_OVERRIDE))
    return NULL;
  return (const mca_base_var_file_value_t *)var->mbv_file_value;
}

/* The value of a variable as the user wrote it, where it is still text: mpirun's --mca and the environment
 * both reach the process as OMPI_MCA_<full>, and a parameter file's line is kept as read. NULL when it came
 * from elsewhere (the default, MPI_T). Open MPI has converted the value by now: "abc" to 0. */
static const char *given(const char *full) {
  const mca_base_var_t *var = variable(full);
  if (var == NULL) return NULL;
  const mca_base_var_file_value_t *line = file_line(var);
  if (line != NULL) return line->mbvfv_value;
  char env[96];
  snprintf(env, sizeof(env), "OMPI_MCA_%s", full);
  return getenv(env);
}

/* The values found not valid while the parameters register, reported together in one help message at the
 * end: one box to read, and one message less likely lost than several (Open MPI 4.1 drops a help message on
 * its way to mpirun now and then, open-mpi/ompi#8356). */
static char bad_values[4096];

/* Notes a value that is not valid, quoted as given, with where it was set and what is used instead. */
static void bad_value(const char *name, const char *value, const char *allowed, const char *used) {
  const mca_base_var_t *var = variable(name);
  const mca_base_var_file_value_t *line = file_line(var);
  char origin[PATH_MAX + 64] = "as set";
  if (line != NULL)
    snprintf(origin, sizeof(origin), "in %s, line %d", line->mbvfv_file != NULL ? line->mbvfv_file : "a parameter file",
             line->mbvfv_lineno);
  else if (var != NULL &&
           (var->mbv_source == MCA_BASE_VAR_SOURCE_ENV || var->mbv_source == MCA_BASE_VAR_SOURCE_COMMAND_LINE))
    snprintf(origin, sizeof(origin), "by mpirun --mca or the environment (OMPI_MCA_%s)", name);
  const size_t at = strlen(bad_values);
  snprintf(bad_values + at, sizeof(bad_values) - at,
           "%s  Parameter: %s\n  Value:     \"%s\"\n  Set:       %s\n  Allowed:   %s\n  Used:      %s (the default)\n",
           at > 0 ? "\n" : "", name, value, origin, allowed, used);
}

/* Registers a string parameter. The variable system owns the string: storage may hold NULL for an empty value,
 * and must never be pointed elsewhere. */
static void register_string(const char *name, const char *description, const char *def, mca_base_var_info_lvl_t level,
                            mca_base_var_scope_t scope, char **storage) {
  *storage = (char *)def;
  mca_base_component_var_register(component(), name, description, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level, scope,
                                  storage);
}

/* Whether text is an integer as Open MPI reads one (decimal, 0x hex or 0 octal, then k, m or g for
 * 2^10, 2^20, 2^30): Open MPI itself takes "abc" as 0 and "-1" for a size as 2^64 - 1. */
static bool well_formed(const char *text, bool is_signed) {
  while (isspace((unsigned char)*text)) ++text;
  if (*text == '-' && !is_signed) return false;
  char *end = NULL;
  errno = 0;
  (void)strtoll(text, &end, 0);
  if (end == text || errno != 0) return false;
  if (*end != '\0' && strchr("kKmMgG", *end) != NULL) ++end;
  while (isspace((unsigned char)*end)) ++end;
  return *end == '\0';
}

/* A size as Open MPI reads one (well_formed, unsigned): k, m or g multiply by 2^10, 2^20, 2^30. */
static size_t size_value(const char *text) {
  char *end = NULL;
  unsigned long long v = strtoull(text, &end, 0);
  const char *units = "kmg";
  const char *unit = *end != '\0' ? strchr(units, tolower((unsigned char)*end)) : NULL;
  if (unit != NULL) v <<= 10 * (unit - units + 1);
  return (size_t)v;
}

/* Parses coll_gpu_net_blocking_min_bytes: COLL:BYTES entries, comma-separated, COLL a collective's name as
 * coll_gpu_<COLL>_algorithm has it. Fills min (SIZE_MAX for a collective it does not name); -1 on an entry
 * that is not one. */
static int parse_blocking_min(const char *s, size_t min[COLL_GPU_NCOLLS]) {
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) min[k] = SIZE_MAX;
  while (s != NULL && *s != '\0') {
    const size_t n = strcspn(s, ","), name = strcspn(s, ":");
    char value[32];
    if (name >= n || n - name - 1 >= sizeof(value)) return -1;
    int coll = -1;
    for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
      const char *known = coll_gpu_coll_name((coll_gpu_coll_t)k);
      if (strlen(known) == name && strncasecmp(s, known, name) == 0) coll = k;
    }
    memcpy(value, s + name + 1, n - name - 1);
    value[n - name - 1] = '\0';
    if (coll < 0 || !well_formed(value, false)) return -1;
    min[coll] = size_value(value);
    s += n;
    if (*s == ',' && *++s == '\0') return -1;
  }
  return 0;
}

/* Checks a registered integer value: a value given as text that is no integer, or one outside [min, max]
 * or not a multiple of `multiple`, is reported (quoted as given) and replaced by the default. */
static bool check_value(const char *name, long long value, bool is_signed, long long min, unsigned long long max,
                        unsigned long long multiple, long long def) {
  char full[64], shown[64], allowed[128], fallback[32];
  snprintf(full, sizeof(full), "coll_gpu_%s", name);
  const char *text = given(full);
  const bool ok = (text == NULL || well_formed(text, is_signed)) &&
                  (is_signed ? value >= min && value <= (long long)max
                             : (unsigned long long)value >= (unsigned long long)min &&
                                   (unsigned long long)value <= max && (unsigned long long)value % multiple == 0);
  if (ok) return true;
  if (text != NULL)
    snprintf(shown, sizeof(shown), "%s", text);
  else if (is_signed)
    snprintf(shown, sizeof(shown), "%lld", value);
  else
    snprintf(shown, sizeof(shown), "%llu", (unsigned long long)value);
  if (multiple > 1)
    snprintf(allowed, sizeof(allowed), "a multiple of %llu from %lld to %llu", multiple, min, max);
  else
    snprintf(allowed, sizeof(allowed), "an integer from %lld to %llu", min, max);
  snprintf(fallback, sizeof(fallback), "%lld", def);
  bad_value(full, shown, allowed, fallback);
  return false;
}

/* Registers an integer parameter and holds it to [min, max] (check_value). */
static void register_int(const char *name, const char *description, int def, int min, int max,
                         mca_base_var_info_lvl_t level, mca_base_var_scope_t scope, int *storage) {
  *storage = def;
  mca_base_component_var_register(component(), name, description, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level, scope,
                                  storage);
  if (!check_value(name, *storage, true, min, (unsigned long long)max, 1, def)) *storage = def;
}

/* Registers a size parameter and holds it to [min, max] and to a multiple of `multiple` (check_value). */
static void register_size(const char *name, const char *description, size_t def, size_t min, size_t max,
                          size_t multiple, mca_base_var_info_lvl_t level, mca_base_var_scope_t scope, size_t *storage) {
  *storage = def;
  mca_base_component_var_register(component(), name, description, MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, level, scope,
                                  storage);
  if (!check_value(name, (long long)*storage, false, (long long)min, max, multiple, (long long)def)) *storage = def;
}

/* Registers an integer parameter whose values are names (Open MPI checks them against the list). */
static void register_enum(const char *name, const char *description, const mca_base_var_enum_value_t *values, int def,
                          int *storage) {
  char full[64];
  mca_base_var_enum_t *e = NULL;
  snprintf(full, sizeof(full), "coll_gpu_%s", name);
  *storage = def;
  mca_base_var_enum_create(full, values, &e);
  mca_base_component_var_register(component(), name, description, MCA_BASE_VAR_TYPE_INT, e, 0, 0, OPAL_INFO_LVL_5,
                                  MCA_BASE_VAR_SCOPE_ALL_EQ, storage);
  if (e != NULL) OBJ_RELEASE(e);
  /* Open MPI takes an empty value as 0 and a number modulo 2^32 as it is: only a name, or a number that is
   * one of the values, is one */
  const char *text = given(full);
  if (text == NULL) return;
  char allowed[160] = "";
  for (int i = 0; values[i].string != NULL; ++i) {
    if (strcasecmp(text, values[i].string) == 0) return;
    char num[16];
    snprintf(num, sizeof(num), "%d", values[i].value);
    if (strcmp(text, num) == 0) return;
    const size_t at = strlen(allowed);
    snprintf(allowed + at, sizeof(allowed) - at, "%s%s", i > 0 ? ", " : "", values[i].string);
  }
  const char *fallback = "";
  for (int i = 0; values[i].string != NULL; ++i)
    if (values[i].value == def) fallback = values[i].string;
  bad_value(full, text, allowed, fallback);
  *storage = def;
}

/* Registers a boolean parameter. Open MPI reports a value that is neither an integer nor one of its words (true,
 * false, yes, no, enabled, disabled, t, f, y, n) itself, but reads any integer as a boolean (-1 as true) and an
 * empty value as false: of those only 0 and 1 are taken, the others are reported and the default kept. */
static void register_bool(const char *name, const char *description, bool def, int flags, mca_base_var_info_lvl_t level,
                          mca_base_var_scope_t scope, bool *storage) {
  char full[64];
  snprintf(full, sizeof(full), "coll_gpu_%s", name);
  *storage = def;
  mca_base_component_var_register(component(), name, description, MCA_BASE_VAR_TYPE_BOOL, NULL, 0, flags, level, scope,
                                  storage);
  const char *text = given(full);
  if (text == NULL || strcmp(text, "0") == 0 || strcmp(text, "1") == 0) return;
  if (*text != '\0' && !well_formed(text, true)) return; /* not an integer: Open MPI took it, or reported it */
  bad_value(full, text, "true or false (also 1, 0, yes, no, enabled, disabled)", def ? "true" : "false");
  *storage = def;
}

/* Registers coll_gpu_verbose as Open MPI's verbosity variables are: a number from 0 to 100 or one of the names
 * of its levels (Open MPI's enumerator checks the value), at ompi_info level 9. */
static void register_verbose(mca_coll_gpu_component_t *c) {
  c->verbose = 0;
  mca_base_component_var_register(
      component(), "verbose",
      "Verbosity of coll/gpu, 0-100 or a name as Open MPI's verbosity variables take them: error (0: only "
      "errors and the watchdog's line), warn (20: warnings), info (40: one line per communicator, its GPU set-up "
      "and channels), trace (60: each staged collective, the engine's file:line breadcrumbs when a GPU call "
      "fails), debug (80: each staged buffer, each GPU call's algorithm, the path between every pair of ranks), "
      "max (100)",
      MCA_BASE_VAR_TYPE_INT, &mca_base_var_enum_verbose, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);
}

static void register_topology(mca_coll_gpu_component_t *c) {
  register_string("topo_file",
                  "Topology of this node in NCCL's XML format (<system version=\"1\"> with <cpu>, <pci>, <gpu>, "
                  "<nvlink>, <nic>): used instead of probing with hwloc; GPUs the file gives without <gpu> get their "
                  "NVLinks from NVML. Empty: probe. It must be a regular file (a FIFO or device is refused, never "
                  "waited on). A file that cannot be opened or read is reported (with the line at fault) when a "
                  "communicator first takes the GPU path, and the probe is used",
                  "", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->topo_file);
  register_string("topo_dump_file",
                  "File that rank 0 of each communicator of up to 8 ranks taking the GPU path writes the topology "
                  "to, as every rank merged it (NCCL's XML format, GPUs carrying their rank; larger communicators "
                  "exchange no topology and write none), as a new file renamed over the name "
                  "(a symbolic link there is replaced, never written through): read it back with coll_gpu_topo "
                  "--xml or coll_gpu_topo_file. Empty: none",
                  "", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->topo_dump_file);
}

/* coll_gpu_tuning_rules' description, with the collectives and their algorithms as common/colls.h has them. */
static const char *rules_help(void) {
  static char help[1536];
  const unsigned every = (1u << COLL_GPU_NCOLLS) - 1;
  unsigned by_block = 0; /* the chooser counts these calls' bytes a block at a time */
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    const coll_gpu_shape_t shape = coll_gpu_coll_info((coll_gpu_coll_t)k)->shape;
    if (shape == COLL_GPU_SHAPE_BLOCKS || shape == COLL_GPU_SHAPE_PAIRS) by_block |= 1u << k;
  }
  char all[160], blocks[160], algos[320] = "";
  for (unsigned left = every; left != 0;) { /* the collectives grouped by the algorithms they have */
    const int k = __builtin_ctz(left);
    unsigned alike = 0;
    for (int j = k; j < COLL_GPU_NCOLLS; ++j)
      if (coll_gpu_coll_info((coll_gpu_coll_t)j)->algos == coll_gpu_coll_info((coll_gpu_coll_t)k)->algos)
        alike |= 1u << j;
    left &= ~alike;
    char names[160], has[64];
    const size_t at = strlen(algos);
    snprintf(algos + at, sizeof(algos) - at, "%s%s: %s", at == 0 ? "" : "; ",
             coll_gpu_coll_names(alike, " and ", names, sizeof(names)),
             coll_gpu_algo_names((coll_gpu_coll_t)k, has, sizeof(has)));
  }
  snprintf(help, sizeof(help),
           "Per collective and range of sizes, the algorithm the tuning model's choice gives way to, as "
           "coll/tuned's dynamic rules do: COLL:FROM-TO:ALGO entries, comma-separated, COLL one of %s; FROM and TO "
           "bytes, both included (k, m, g allowed; TO left out: no end), of the message, or for %s of a rank's "
           "block; ALGO one the collective has (%s). The first rule that matches a call and fits it takes it "
           "(oneshot and twoshot run on one node within coll_gpu_oneshot_max_bytes and coll_gpu_twoshot_max_bytes, "
           "chain over several nodes only, allgather there where every rank's input together takes at most 64 KiB); a "
           "coll_gpu_<COLL>_algorithm other than auto wins over the rules, and "
           "communicators of more than 8 ranks run the ring. Every rank must use the same. Empty: no rule. "
           "Example: allreduce:0-32k:oneshot,allreduce:32k-:ring",
           coll_gpu_coll_names(every, " or ", all, sizeof(all)),
           coll_gpu_coll_names(by_block, " and ", blocks, sizeof(blocks)), algos);
  return help;
}

/* The algorithms of the collectives on device buffers, and their channels: a coll_gpu_<name>_algorithm for each row
 * of common/colls.h, whose values are auto, the algorithms the collective has and staged. */
static void register_algorithms(mca_coll_gpu_component_t *c) {
  static mca_base_var_enum_value_t algorithms[COLL_GPU_NCOLLS][COLL_GPU_NALGOS + 3];
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) {
    const coll_gpu_coll_info_t *info = coll_gpu_coll_info((coll_gpu_coll_t)k);
    mca_base_var_enum_value_t *v = algorithms[k];
    int n = 0;
    v[n++] = (mca_base_var_enum_value_t){-1, "auto"};
    for (int a = 0; a < COLL_GPU_NALGOS; ++a)
      if (coll_gpu_coll_has((coll_gpu_coll_t)k, (coll_gpu_algo_t)a))
        v[n++] = (mca_base_var_enum_value_t){a, coll_gpu_algo_name((coll_gpu_algo_t)a)};
    v[n++] = (mca_base_var_enum_value_t){COLL_GPU_NALGOS, "staged"};
    v[n] = (mca_base_var_enum_value_t){0, NULL};
    char name[64];
    snprintf(name, sizeof(name), "%s_algorithm", info->name);
    register_enum(name, info->algorithm_help, v, -1, &c->algorithm[k]);
  }
  static const mca_base_var_enum_value_t protocols[] = {
      {-1, "auto"}, {COLL_GPU_PROTO_LL, "LL"}, {COLL_GPU_PROTO_SIMPLE, "Simple"}, {0, NULL}};
  register_enum(
      "allreduce_protocol",
      "Protocol of MPI_Allreduce on device buffers: auto, LL (flags travel with the data: one-shot) or "
      "Simple (bulk data, then a release flag: two-shot and ring). Restricts the algorithms auto chooses from",
      protocols, -1, &c->allreduce_protocol);
  register_string("tuning_rules", rules_help(), "", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->tuning_rules);
  char why[256];
  if (coll_gpu_tune_parse_rules(c->tuning_rules, c->tuning_rule, &c->ntuning_rules, why, sizeof(why)) !=
      COLL_GPU_SUCCESS) {
    char allowed[384];
    snprintf(allowed, sizeof(allowed), "empty, or COLL:FROM-TO:ALGO entries separated by commas; here %s", why);
    bad_value("coll_gpu_tuning_rules", c->tuning_rules, allowed, "none");
    c->ntuning_rules = 0;
  }
  register_int("nchannels",
               "Thread blocks of the two-shot allreduce and channels (one block each) of the ring; 0 lets the "
               "tuning model choose by size (inside a node every ring channel, but 64 where each link carries more "
               "than 512 MiB in one call; across nodes a channel per 4 KiB of a ring step, up to 16, and "
               "MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter at most one per proxy thread while a step is "
               "below 16 MiB, MPI_Bcast and MPI_Reduce up to 256 KiB). The ring takes at most coll_gpu_max_channels "
               "(the 2-rank MPI_Alltoall at most 64), two-shot at most 128; where up to k ranks share a GPU (MPS), "
               "at most (its multiprocessors - 1) / k blocks a kernel",
               0, 0, COLL_GPU_MAX_CHANNELS, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->nchannels);
  /* 128 channels of 256 KiB slots (256 MiB per rank, as 64 of 512 KiB before): on 2 H200 at 256 MiB, bcast
   * 742 us, reduce 742, allgather 765, reduce-scatter 775, allreduce 777, against 765, 785, 818, 818 and 832
   * with 64 channels of 512 KiB, and 741, 745, 774, 795 and 802 with 128 of 512 KiB (coll_gpu_allreduce_bench
   * -C COLL -m 16777216 -M 268435456 with both parameters set, one run); 64 channels of 512 KiB had
   * taken allreduce at 1 GiB to 311-316 GB/s against 224 with 32 and 99 with 16 channels of 128 KiB. Each
   * rank allocates channels x 8 x slot bytes */
  register_int("max_channels",
               "Ring channels (one thread block each) each engine allocates FIFOs for (1-128; communicators over "
               "the same ranks share one engine); each takes 8 x coll_gpu_ring_slot_bytes of device memory per rank, "
               "within coll_gpu_scratch_max_bytes",
               COLL_GPU_MAX_CHANNELS, 1, COLL_GPU_MAX_CHANNELS, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
               &c->max_channels);
}

/* The engine's scratch: its parts' bounds and its own. */
static void register_scratch(mca_coll_gpu_component_t *c) {
  register_size(
      "oneshot_max_bytes",
      "Largest MPI_Allreduce message (bytes) the one-shot LL algorithm takes, and the largest piece a one-shot "
      "MPI_Bcast, MPI_Allgather, MPI_Alltoall, MPI_Reduce or MPI_Reduce_scatter moves per peer in one kernel. "
      "Each rank of a communicator of up to 8 ranks allocates 4 x ranks x this much device memory for it (larger "
      "ones run only the rings); 0 disables one-shot",
      512 << 10, 0, 16 << 20, 16, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->oneshot_max_bytes);
  register_size("twoshot_max_bytes",
                "Largest MPI_Allreduce message (bytes) the two-shot algorithm takes. Each rank of a communicator of "
                "up to 8 ranks allocates 4 x this much device memory for it; 0 disables two-shot",
                16 << 20, 0, (size_t)1 << 30, 16, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->twoshot_max_bytes);
  register_size("ring_slot_bytes",
                "Bytes of one ring FIFO slot (a ring step moves one slot per channel); each rank allocates 8 "
                "slots per channel, smaller ones where coll_gpu_scratch_max_bytes needs",
                256 << 10, 4 << 10, 4 << 20, 4096, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->ring_slot_bytes);
  register_size("scratch_max_bytes",
                "Most device memory of scratch each rank's engine allocates (communicators over the same ranks "
                "share one engine). Where the one-shot, two-shot and point-to-point parts and coll_gpu_max_channels "
                "ring channels of coll_gpu_ring_slot_bytes slots would take more, the ring slots shrink (to no "
                "less than 64 KiB), then the ring channels; an engine whose other parts alone do not fit is not "
                "made (its collectives stage). 0: no bound",
                256 << 20, 0, (size_t)64 << 30, 1, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->scratch_max_bytes);
}

/* How ranks reach each other: nodes, the network proxy, the node's transport. */
static void register_transports(mca_coll_gpu_component_t *c) {
  register_int("virtual_nodes",
               "A testing feature: split each host's ranks into virtual nodes of this many consecutive ranks "
               "(0: one node per host). Ranks of different virtual nodes reach each other through the network "
               "proxy over UCX (NET connections, host memory), as ranks of different hosts would, although "
               "CUDA IPC would work; only ring algorithms run across nodes. Steer the proxy's transports with "
               "COLL_GPU_UCX_TLS (for example tcp, or sm)",
               0, 0, COLL_GPU_MAX_DIRECT, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->virtual_nodes);
  register_int("proxy_threads",
               "Progress threads of each rank's network proxy, on communicators that span nodes (0: the rank's "
               "share of the CPUs its threads are placed on, near its GPU and, across machines, its NIC, less one "
               "for the rank, between 1 and 8; at most 16, one per channel of a call). Each thread has its own "
               "UCX worker or sockets (coll_gpu_proxy_net), moves about one core's worth of data and polls while "
               "its channels move; a call's channels (at most 16) spread over the threads. More threads on a "
               "machine than CPUs cost each step a CPU time slice",
               0, 0, COLL_GPU_ENGINE_MAX_PROXY_THREADS, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->proxy_threads);
  static const mca_base_var_enum_value_t nets[] = {{COLL_GPU_ENGINE_PROXY_NET_AUTO, "auto"},
                                                   {COLL_GPU_ENGINE_PROXY_NET_UCX, "ucx"},
                                                   {COLL_GPU_ENGINE_PROXY_NET_SOCKETS, "sockets"},
                                                   {0, NULL}};
  /* 2 hosts of 1 H100 in the mini-cluster (tcp over its bridge), sockets against UCX's tcp (one run of the
   * sockets, UCX's time the mean of two; docs/benchmarks.md): bcast, allgather, reduce and reduce-scatter
   * 0.67-1.02x UCX's time at 1, 16 and 64 MiB and 0.83-1.03x at 64 KiB; allreduce 0.90x at 64 MiB and
   * 0.98-1.04x from 1 to 16 MiB, but 1.12x at 64 KiB and 1.21x at 256 KiB; an 8-byte step one way 7.2-7.9 us
   * against 6.8-8.0 (coll_gpu_proxy_bench) */
  register_enum("proxy_net",
                "What the network proxy moves steps between nodes over: ucx (UCX's transports, steered by "
                "COLL_GPU_UCX_TLS: InfiniBand and RoCE zero-copy, tcp, shared memory between virtual nodes), "
                "sockets (TCP sockets of its own, a socket per peer and thread, written from and read into the FIFO "
                "slots directly, as NCCL's socket transport), or auto: sockets where no rank's host has an RDMA "
                "device and the nodes are hosts, ucx otherwise. Every rank must use the same",
                nets, COLL_GPU_ENGINE_PROXY_NET_AUTO, &c->proxy_net);
  static const mca_base_var_enum_value_t node_transports[] = {{COLL_GPU_ENGINE_NODE_AUTO, "auto"},
                                                              {COLL_GPU_ENGINE_NODE_IPC, "ipc"},
                                                              {COLL_GPU_ENGINE_NODE_SHM, "shm"},
                                                              {0, NULL}};
  register_enum("node_transport",
                "How the ranks of a node reach each other's GPU memory: ipc (each rank's scratch in device memory, "
                "mapped by its peers through CUDA IPC, over NVLink or PCIe peer to peer), shm (each rank's scratch "
                "in pinned shared host memory that the peers' GPUs read and write directly, with no proxy and no "
                "copy by a CPU, as NCCL's shared memory transport; slower than ipc where the GPUs have peer access, "
                "and the zero-copy calls of coll_gpu_zero_copy_min_bytes go through the FIFOs or stage), or auto: "
                "shm where some rank's GPU has no CUDA peer access to another GPU of its node (PCIe GPUs without "
                "peer to peer, some virtual machines), ipc otherwise (one allgather where the engine is made). With "
                "ipc, where a rank cannot map a peer's scratch the communicator's calls stage. Every rank must use "
                "the same",
                node_transports, COLL_GPU_ENGINE_NODE_AUTO, &c->node_transport);
  register_string("socket_ifname",
                  "Network interfaces whose IPv4 addresses the proxy's sockets are reached on, as NCCL_SOCKET_IFNAME: "
                  "name prefixes, comma-separated (eth,ib), a leading ^ to exclude them instead. Empty: every "
                  "interface that is up but loopback, docker* and virbr* (none: loopback, one host only)",
                  "", OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->socket_ifname);
  register_size("net_ll_bytes",
                "Steps between nodes of 1 to this many bytes travel between a kernel and its network proxy as LL "
                "lines (NCCL's LL protocol: each 8 bytes of data in a 16-byte line with the step's flag, in the "
                "FIFO's host memory) instead of in the FIFO slot behind a flag: the sending kernel needs no "
                "system-wide fence, the receiving one reads host memory once instead of twice. Each FIFO holds 16 "
                "times this many bytes of pinned host memory more. 0: never. Larger steps as lines lost to the "
                "slot where measured (docs/benchmarks.md). A multiple of 16, at most 32768; each rank may set its own",
                256, 0, COLL_GPU_LL_MAX_BYTES, 16, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL, &c->net_ll_bytes);
}

/* The ring's steps and the one-shot kernel's lingering. */
static void register_steps(mca_coll_gpu_component_t *c) {
  register_size("ring_chunk_bytes",
                "Bytes a ring channel moves per step, up to coll_gpu_ring_slot_bytes (larger values take a whole "
                "slot): smaller steps fill a chain's pipeline sooner, larger ones pay the per-step flags less "
                "often. 0 lets the tuning model choose by collective (across nodes, for bcast and reduce, by each "
                "channel's part of the call)",
                0, 0, 4 << 20, 16, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->ring_chunk_bytes);
  register_int("oneshot_linger_us",
               "Microseconds the one-shot kernel (MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather, "
               "MPI_Alltoall, MPI_Reduce_scatter and MPI_Reduce_scatter_block calls, up to 64 KiB of "
               "one-shot data) stays on the GPU after a call, polling host "
               "memory for the next such call, which then needs no kernel launch. While it "
               "lingers it holds one thread block per 4 KiB of its first message, and device-wide "
               "synchronization (cudaDeviceSynchronize, cudaFree) waits for it to leave; it leaves at once when a ring "
               "or two-shot call needs the multiprocessors. 0 launches a kernel "
               "per call (0-10000)",
               50, 0, 10000, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->oneshot_linger_us);
}

/* Waits for peers. */
static void register_waits(mca_coll_gpu_component_t *c) {
  register_int("timeout",
               "Seconds after which a wait for peers is reported once (which communicator, call and ranks) by a "
               "watchdog line printed at every verbosity. The wait goes on as long as the ranks it waits for "
               "have a process: a late rank is not a dead one. A rank whose process is gone ends the call with "
               "an error naming it (1-86400)",
               300, 1, 86400, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->timeout);
  register_int("spin_us",
               "Microseconds a wait for peers spins before it yields the CPU; once the wait has lasted 1 ms it sleeps "
               "in steps of up to 50 us. Not used (no spinning) where Open MPI yields when idle, as with more "
               "ranks than cores (0-1000000)",
               50, 0, 1000000, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL, &c->spin_us);
}

/* The path agreement. */
static void register_agreement(mca_coll_gpu_component_t *c) {
  register_bool(
      "uniform_buffers",
      "Assert that in every collective call all ranks pass the same kind of memory (all host, or all "
      "device memory of one GPU per rank). Skips the agreement on the path each call takes (a few "
      "stores and one cache line read per peer and call; across hosts a 16-byte message to each rank of "
      "the other hosts and a wait for theirs, a trip between the hosts each call; not for blocking calls "
      "on a communicator across hosts with GPU resources of its own, the first over its processes, until another "
      "communicator over them shares them, where "
      "every rank joins the GPU path whatever memory it passes). If a rank breaks the "
      "assertion, the ranks that passed device memory wait for it on the GPU, with a watchdog line naming "
      "it after coll_gpu_timeout seconds",
      false, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->uniform_buffers);
}

/* The zero-copy calls inside a node. */
static void register_zero_copy(mca_coll_gpu_component_t *c) {
  /* 1 MiB a block: on 2 H200 the zero-copy alltoall took 0.91x the FIFOs' time at 1 MiB and 0.83-0.99x from 2 to
   * 256 MiB, the allgather 0.84-0.91x the ring's from 1 to 256 MiB; on 4 H200 the allgather 0.79x and the
   * reduce-scatter 0.89x at 1 MiB (docs/benchmarks.md); below 1 MiB not timed (the LL one-shot kernel takes
   * alltoall to 64 KiB). Up to which block each goes so: coll_gpu_zero_copy_wins (engine/engine.h) */
  register_size("zero_copy_min_bytes",
                "Inside a node, MPI_Alltoall (not in place), MPI_Allgather (with 3 to 8 ranks up to 8 MiB a "
                "block) and, with 2 ranks, MPI_Bcast, blocking, nonblocking and persistent, on device buffers with "
                "blocks of at least this many bytes move each block (a bcast's whole buffer) straight from the "
                "sender's buffer into the receiver's, mapped once per allocation through CUDA IPC, where every "
                "rank's receive buffer is cudaMalloc memory (memory of pools, of the virtual memory management API "
                "or managed memory goes through the FIFOs); a blocking MPI_Reduce_scatter(_block) not in place (up "
                "to 64 MiB a block with 2 ranks, 4 MiB with more) reads its block straight from every rank's send "
                "buffer, mapped the same way where every rank's send buffer is cudaMalloc memory; MPI_Allgatherv and "
                "MPI_Alltoallv of other layouts than the allgather's and alltoall's, and "
                "MPI_Gather(v) and MPI_Scatter(v), blocking, nonblocking and persistent, go so at any size (or "
                "stage); 0: never (and those stage)",
                1 << 20, 0, (size_t)1 << 40, 1, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->zero_copy_min_bytes);
  /* 4 MiB: on 2 H200 a nonblocking alltoall of 1 and 2 MiB blocks took 0.98x and 0.91x the FIFOs' time alone but,
   * overlapped with computation, 1.11x and 1.03x (the exchange and a launch at the call, where the FIFO call goes to
   * the lingering kernel); 0.93x and less from 4 MiB; the allgather 1.02x, 0.97x, 0.96x (docs/benchmarks.md) */
  register_size("zero_copy_nonblocking_min_bytes",
                "Nonblocking and persistent calls that coll_gpu_zero_copy_min_bytes names (MPI_Ialltoall, "
                "MPI_Iallgather, MPI_Ibcast and their _init) go zero-copy from blocks of at least this many bytes "
                "too (and of at least coll_gpu_zero_copy_min_bytes); smaller ones go through the FIFOs, whose start "
                "costs the caller less time: the zero-copy call's exchange with its peers begins at the call",
                (size_t)4 << 20, 0, (size_t)1 << 40, 1, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                &c->zero_copy_nonblocking_min_bytes);
  register_size("zero_copy_map_bytes",
                "The most bytes of the peers' allocations a rank keeps mapped for coll_gpu_zero_copy_min_bytes; "
                "past it the mappings least recently used are closed (never one of the call in progress)",
                (size_t)64 << 30, 1 << 20, (size_t)1 << 50, 1, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                &c->zero_copy_map_bytes);
  /* 64 MiB: on 2 H200 the copy engines took 0.97x the kernel's time at 64 MiB a block, 0.95x at 128, 0.93x at 256
   * (728 us against 782), but 1.02-1.06x at 32 MiB and more below (1.45-1.48x at 1 MiB: three launches and two
   * events around the copy; docs/benchmarks.md) */
  register_size("zero_copy_engines_min_bytes",
                "Of a communicator of 2 ranks, a blocking zero-copy call (coll_gpu_zero_copy_min_bytes) whose "
                "largest block has at least this many bytes moves the peer's block by the GPU's copy engines "
                "(cudaMemcpyAsync) instead of a kernel's stores; with more ranks the kernel is faster, and "
                "nonblocking and persistent calls overlap computation better with it; 0: never",
                (size_t)64 << 20, 0, (size_t)1 << 40, 1, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_ALL_EQ,
                &c->zero_copy_engines_min_bytes);
}

/* Across hosts: which calls take the GPU path. */
static void register_net_sizes(mca_coll_gpu_component_t *c) {
  /* 2 hosts x 2 H100 of the mini-cluster, tcp between them (docs/benchmarks.md): allreduce on the GPU path
   * without the agreement 64-80 us up to 64 KiB against 39-102 us staged, as fast at 8 KiB (70.7 against
   * 70.4), faster from 16 KiB (73 against 78 us), 9-15x faster from 16 MiB; 2 hosts x 1 H100: staged faster
   * up to 32 KiB (21-50 us against 38-57). The agreement adds a message's latency to the GPU path. */
  register_size("net_min_bytes",
                "Across hosts, collectives on device buffers of fewer bytes than this (the message; a block per "
                "rank for MPI_Allgather and MPI_Alltoall) go through Open MPI's own collective over host memory "
                "(staged), without the path agreement, which is faster there than the GPU path over the network "
                "proxy; 0: every call takes the GPU path where it can",
                32 << 10, 0, (size_t)1 << 40, 1, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->net_min_bytes);
  /* 2 hosts x 2 H100 of the mini-cluster, blocking calls on the communicator's own engine (no agreement) against
   * staged (docs/benchmarks.md): bcast 16.6-18.1 us from 8 B to 16 KiB against 22-45 staged on one machine, and
   * 25-39 us staged at 8 and 16 KiB on another (16-19 on the GPUs at 32 and 64 KiB); reduce 16.6-18.4 against
   * 23-49 at 8 and 16 KiB. Below 8 KiB staging took 15-23 us on the second machine, and a rank whose buffers
   * are host memory joins the GPU path through copies (6-7 us each way) where it would pass straight through
   * staged. Allgather and reduce-scatter came within a few us of staging up to 16 KiB, and allreduce was
   * slower (75-90 us against 38-90) */
  static const char *blocking_min = "bcast:8k,reduce:8k";
  register_string(
      "net_blocking_min_bytes",
      "Across hosts, per collective, a lower coll_gpu_net_min_bytes for blocking calls on a communicator whose GPU "
      "resources are its own (the first over its processes, once a call has made them and until another communicator "
      "over them shares them: its blocking calls run "
      "without the path agreement): COLL:BYTES entries, comma-separated, COLL one of allreduce, bcast, allgather, "
      "alltoall, reduce, reduce_scatter, BYTES as coll_gpu_net_min_bytes counts them (k, m, g allowed). The "
      "smaller of the two figures applies; collectives not named, and every other call, take "
      "coll_gpu_net_min_bytes. Empty: none lower",
      blocking_min, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->net_blocking_min);
  if (parse_blocking_min(c->net_blocking_min, c->net_blocking_min_bytes) != 0) {
    bad_value("coll_gpu_net_blocking_min_bytes", c->net_blocking_min,
              "empty, or COLL:BYTES entries separated by commas (COLL one of allreduce, bcast, allgather, "
              "alltoall, reduce, reduce_scatter)",
              blocking_min);
    (void)parse_blocking_min(blocking_min, c->net_blocking_min_bytes);
  }
  for (int k = 0; k < COLL_GPU_NCOLLS; ++k) /* the smaller of the two applies */
    if (c->net_blocking_min_bytes[k] > c->net_min_bytes) c->net_blocking_min_bytes[k] = c->net_min_bytes;
}

static int get_staged_buffers(const struct mca_base_pvar_t *pvar, void *value, void *obj) {
  (void)pvar;
  (void)obj;
  *(unsigned long long *)value = mca_coll_gpu_staged_buffers();
  return OPAL_SUCCESS;
}

/* Performance variables (MPI_T). */
static void register_pvars(void) {
  mca_base_component_pvar_register(component(), "staged_buffers",
                                   "Buffers of collective calls staged through host memory since MPI_Init (a "
                                   "persistent request's are counted once, at *_init)",
                                   OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
                                   NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
                                   MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS, get_staged_buffers,
                                   NULL, NULL, NULL);
}

int mca_coll_gpu_register_params(void) {
  mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
  bad_values[0] = '\0';

  static char *version = COLL_GPU_VERSION " (built against Open MPI " COLL_GPU_OMPI_VERSION ")";
  mca_base_component_var_register(component(), "version",
                                  "Version of coll/gpu, and the Open MPI release it was built "
                                  "against (the only one it runs in)",
                                  MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_3,
                                  MCA_BASE_VAR_SCOPE_CONSTANT, &version);

  register_bool("enable",
                "Enable coll/gpu. When false the component takes no communicator, and collectives on device "
                "buffers reach a coll component that is not CUDA-aware. Settable through MPI_T: a change applies "
                "to communicators created after it",
                true, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_2, MCA_BASE_VAR_SCOPE_ALL_EQ, &c->enable);

  register_int("priority",
               "Priority of coll/gpu (0-100). It must be above the priority of every coll component it should "
               "wrap (tuned 30, sync 50, self 75)",
               DEFAULT_PRIORITY, 0, 100, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &c->priority);
  register_verbose(c);
  register_string("verbose_subsys",
                  "Subsystems that coll_gpu_verbose reports, comma-separated: INIT (component and communicator "
                  "set-up), COLL (collective calls), STAGE (staging through host memory), TOPO (topology and "
                  "rings), PROXY (the network proxy), or all; a leading ^ reports all but the ones listed",
                  "all", OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose_subsys);
  c->subsys_mask = parse_subsys(c->verbose_subsys);
  if (c->subsys_mask < 0) {
    bad_value("coll_gpu_verbose_subsys", c->verbose_subsys,
              "all, or a comma-separated list of INIT, COLL, STAGE, TOPO, PROXY", "all");
    c->subsys_mask = COLL_GPU_LOG_ALL;
  }

  register_size("stage_cache_size",
                "Bytes of pinned host memory kept for reuse by the staging of device buffers (0 frees every "
                "bounce buffer after its collective; at most 64 GiB)",
                DEFAULT_CACHE, 0, MAX_CACHE, 1, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL, &c->stage_cache_size);

  register_bool("force_staging",
                "Stage host buffers through bounce buffers as if they were device memory: tests the staging path "
                "on machines without a GPU (slower; debugging only). The application's buffers only: not those of "
                "collectives that a component below runs inside a staged call (coll/inter on an "
                "intercommunicator). Settable through MPI_T",
                false, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL, &c->force_staging);
  register_algorithms(c);
  register_scratch(c);
  register_transports(c);
  register_steps(c);
  register_waits(c);
  register_agreement(c);
  register_zero_copy(c);
  register_net_sizes(c);
  register_topology(c);
  register_pvars();
  if (bad_values[0] != '\0') opal_show_help("help-mpi-coll-gpu.txt", "bad parameters", true, bad_values);
  return OMPI_SUCCESS;
}
