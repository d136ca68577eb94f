/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * A rank that joins a call on the GPUs through device memory of the engine's: on a communicator whose
 * calls need no path agreement (an engine of its own, engine/engine.h), every rank takes the GPU path
 * together, whatever memory it passes. A rank whose buffers the engine cannot take as they are (host or
 * managed memory, another GPU's, a layout with holes) copies its input into the engine's device memory
 * before the call and its output back after: a move's data packed, a reduction's elements as they lie (the
 * kernels' layout; copied in whole). Contiguous bytes are copied as they are; other layouts go through the
 * host (device memory staged there first, engine/stage.h), packed by Open MPI's convertor, and only the data
 * of a layout with holes is written back.
 */
#include "coll_gpu.h"
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"

char *mca_coll_gpu_contiguous(const void *buf, struct ompi_datatype_t *dt, size_t count) {
  if (!ompi_datatype_is_contiguous_memory_layout(dt, count > 2 ? 2 : (int32_t)count)) return NULL;
  ptrdiff_t lb, extent;
  ompi_datatype_get_true_extent(dt, &lb, &extent);
  return (char *)buf + lb;
}

/* The user's layout packed into `packed` (image: the buffer in host memory), or unpacked from it. */
static int convert(const mca_coll_gpu_ubuf_t *u, void *image, char *packed, size_t bytes, int pack) {
  opal_convertor_t *conv = opal_convertor_create(opal_local_arch, 0);
  if (conv == NULL) return -1;
  int rc = pack ? opal_convertor_prepare_for_send(conv, &u->dt->super, u->count, image)
                : opal_convertor_prepare_for_recv(conv, &u->dt->super, u->count, image);
  struct iovec iov = {packed, bytes};
  uint32_t n = 1;
  size_t moved = bytes;
  if (rc == OPAL_SUCCESS)
    rc = pack ? opal_convertor_pack(conv, &iov, &n, &moved) : opal_convertor_unpack(conv, &iov, &n, &moved);
  OBJ_RELEASE(conv);
  return rc >= 0 && moved == bytes ? 0 : -1;
}

/* Between the host image of u's buffer and `host`, which holds its bytes as the engine's memory does: packed,
 * or as they lie (out only: then only the elements' bytes are written into the image). */
static int host_move(const mca_coll_gpu_ubuf_t *u, void *image, char *host, size_t bytes, int in) {
  if (!u->laid) return convert(u, image, host, bytes, in);
  return ompi_datatype_copy_content_same_ddt(u->dt, u->count, image, host) == OMPI_SUCCESS ? 0 : -1;
}

/* One buffer's bytes to dev (in) or back from it (out). */
static int join_one(coll_gpu_engine_t *e, const mca_coll_gpu_ubuf_t *u, char *dev, int in, char *why, size_t len) {
  if (u->dt == NULL || u->count == 0) return 0;
  size_t data; /* the elements' bytes, without holes */
  coll_gpu_span_t span = mca_coll_gpu_span(u->dt, u->count, &data);
  const size_t bytes = u->laid ? span.len : data; /* in the engine's memory (laid: a predefined type, lb 0) */
  /* elements that go in as they lie are copied whole, holes too; contiguous bytes either way */
  char *flat = u->laid && in ? (char *)u->buf : mca_coll_gpu_contiguous(u->buf, u->dt, u->count);
  if (flat != NULL)
    return coll_gpu_engine_copy(e, in ? dev : flat, in ? flat : dev, bytes, why, len) == COLL_GPU_SUCCESS ? 0 : -1;
  coll_gpu_stage_t st;
  coll_gpu_stage_init(&st);
  void *image = NULL;
  char *host = malloc(bytes);
  int ok = host != NULL;
  if (!ok) snprintf(why, len, "no host memory for %zu bytes", bytes);
  if (ok && mca_coll_gpu_stage(&st, u->buf, span, data, in ? COLL_GPU_IN : COLL_GPU_OUT, &image) != OMPI_SUCCESS) {
    snprintf(why, len, "%s: %s", st.failed != NULL ? st.failed : "staging", coll_gpu_status_string(st.status));
    ok = 0;
  }
  if (ok && in && host_move(u, image, host, bytes, 1) != 0) {
    snprintf(why, len, "Open MPI could not pack the datatype");
    ok = 0;
  }
  ok = ok && coll_gpu_engine_copy(e, in ? dev : host, in ? host : dev, bytes, why, len) == COLL_GPU_SUCCESS;
  if (ok && !in && host_move(u, image, host, bytes, 0) != 0) {
    snprintf(why, len, "Open MPI could not unpack the datatype");
    ok = 0;
  }
  if (coll_gpu_stage_finish(&st, ok && !in) != COLL_GPU_SUCCESS && ok) {
    snprintf(why, len, "staging back: %s", coll_gpu_status_string(st.status));
    ok = 0;
  }
  free(host);
  return ok ? 0 : -1;
}

int mca_coll_gpu_join_in(coll_gpu_engine_t *e, const mca_coll_gpu_join_t *j, char *dev, char *why, size_t len) {
  return join_one(e, &j->in, dev + j->in_at, 1, why, len);
}

int mca_coll_gpu_join_out(coll_gpu_engine_t *e, const mca_coll_gpu_join_t *j, const char *dev, char *why, size_t len) {
  return join_one(e, &j->out, (char *)dev + j->out_at, 0, why, len);
}
