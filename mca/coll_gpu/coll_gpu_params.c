/*
 * The one parameter registry: every coll_gpu_* MCA variable is registered and checked here.
 * A value out of range is reported with the allowed range and replaced by the default.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "coll_gpu.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/show_help.h"

#define DEFAULT_PRIORITY 80 /* above tuned (30), sync (50) and self (75): this module wraps them */
#define DEFAULT_CACHE ((size_t)256 << 20)

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

static void bad_value(const char *name, const char *value, const char *allowed, const char *used) {
  opal_show_help("help-mpi-coll-gpu.txt", "bad parameter", true, name, value, allowed, used);
}

/* Registers an integer parameter and holds it to [min, max]: a value outside is reported and replaced by
 * the default. */
static void register_int(const char *name, const char *description, int def, int min, int max,
                         mca_base_var_info_lvl_t level, mca_base_var_scope_t scope, int *storage) {
  *storage = def;
  mca_base_component_var_register(component(), name, description, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level, scope,
                                  storage);
  if (*storage >= min && *storage <= max) return;
  char full[64], value[32], allowed[64], fallback[32];
  snprintf(full, sizeof(full), "coll_gpu_%s", name);
  snprintf(value, sizeof(value), "%d", *storage);
  snprintf(allowed, sizeof(allowed), "an integer from %d to %d", min, max);
  snprintf(fallback, sizeof(fallback), "%d", def);
  bad_value(full, value, allowed, fallback);
  *storage = def;
}

int mca_coll_gpu_register_params(void) {
  mca_coll_gpu_component_t *c = &mca_coll_gpu_component;

  c->enable = true;
  mca_base_component_var_register(component(), "enable",
                                  "Enable coll/gpu. When false the component takes no communicator, and "
                                  "collectives on device buffers reach a coll component that is not CUDA-aware. "
                                  "Settable through MPI_T: a change applies to communicators created after it",
                                  MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_SETTABLE, OPAL_INFO_LVL_2,
                                  MCA_BASE_VAR_SCOPE_ALL_EQ, &c->enable);

  register_int("priority",
               "Priority of coll/gpu (0-100). It must be above the priority of every coll component it should "
               "wrap (tuned 30, sync 50, self 75)",
               DEFAULT_PRIORITY, 0, 100, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_READONLY, &c->priority);
  register_int("verbose",
               "Verbosity of coll/gpu (0-100): 0 silent, 1 warnings, 10 info (one line per communicator), 50 debug "
               "(each staged collective), 100 trace (each staged buffer)",
               0, 0, 100, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL, &c->verbose);

  c->verbose_subsys = "all";
  mca_base_component_var_register(component(), "verbose_subsys",
                                  "Subsystems that coll_gpu_verbose reports, comma-separated: INIT (component "
                                  "and communicator set-up), COLL (collective calls), STAGE (staging through "
                                  "host memory), or all; a leading ^ reports all but the ones listed",
                                  MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_LOCAL,
                                  &c->verbose_subsys);
  c->subsys_mask = parse_subsys(c->verbose_subsys);
  if (c->subsys_mask < 0) {
    bad_value("coll_gpu_verbose_subsys", c->verbose_subsys, "all, or a comma-separated list of INIT, COLL, STAGE",
              "all");
    c->subsys_mask = COLL_GPU_LOG_ALL;
  }

  c->stage_cache_size = DEFAULT_CACHE;
  mca_base_component_var_register(component(), "stage_cache_size",
                                  "Bytes of pinned host memory kept for reuse by the staging of device buffers "
                                  "(0 frees every bounce buffer after its collective)",
                                  MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_6, MCA_BASE_VAR_SCOPE_LOCAL,
                                  &c->stage_cache_size);

  c->force_staging = false;
  mca_base_component_var_register(component(), "force_staging",
                                  "Stage host buffers through bounce buffers as if they were device memory: "
                                  "tests the staging path on machines without a GPU (slower; debugging only)",
                                  MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_LOCAL,
                                  &c->force_staging);
  return OMPI_SUCCESS;
}
