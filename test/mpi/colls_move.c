/* SPDX-License-Identifier: BSD-3-Clause */
/* Copyright (c) 2026 the coll/gpu authors */
/*
 * Data movement: bcast, gather(v), scatter(v), allgather(v), alltoall(v,w), blocking and nonblocking,
 * in place and not, every root, over contiguous and derived datatypes (holes, negative lower bound).
 * Receive images are compared whole: holes and gaps between blocks must keep the poison.
 */
#include "test/mpi/colls.h"

/* Layouts of one element: ints at off[j]; base pointers are moved by `shift` so that the lowest byte
 * touched is the first byte of the allocation. */
typedef struct {
  const char *name;
  MPI_Datatype type;
  int nint;
  ptrdiff_t off[2];
  ptrdiff_t extent;
  ptrdiff_t shift;
} layout_t;
static layout_t layouts[3];

void make_layouts(void) {
  layouts[0] = (layout_t){"MPI_INT", MPI_INT, 1, {0, 0}, 4, 0};
  /* two ints with a hole of 4 bytes between, and 4 bytes of tail: extent 16 */
  MPI_Datatype vec, vecr;
  MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
  MPI_Type_create_resized(vec, 0, 16, &vecr);
  MPI_Type_commit(&vecr);
  MPI_Type_free(&vec);
  layouts[1] = (layout_t){"vector with holes", vecr, 2, {0, 8}, 16, 0};
  /* negative lower bound: ints at -8 and +4, lb -8, extent 16 */
  MPI_Datatype neg;
  int bl[2] = {1, 1};
  MPI_Aint disp[2] = {-8, 4};
  MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &neg);
  MPI_Type_commit(&neg);
  layouts[2] = (layout_t){"negative lb", neg, 2, {-8, 4}, 16, 8};
}

static int val(int origin, size_t elem, int j, uint64_t salt) {
  return (int)(rnd(origin, elem * 2 + j, salt) & 0x7fffffff);
}

/* Writes element `elem` of origin into a host image at element slot `slot`. */
static void put_elem(const layout_t *L, char *base, size_t slot, int origin, size_t elem, uint64_t salt) {
  for (int j = 0; j < L->nint; ++j) {
    int v = val(origin, elem, j, salt);
    memcpy(base + (ptrdiff_t)slot * L->extent + L->off[j], &v, sizeof(int));
  }
}

static size_t alloc_bytes(const layout_t *L, size_t nelem) { return nelem * L->extent + 32; }

typedef enum {
  D_BCAST,
  D_GATHER,
  D_SCATTER,
  D_ALLGATHER,
  D_ALLTOALL,
  D_GATHERV,
  D_SCATTERV,
  D_ALLGATHERV,
  D_ALLTOALLV,
  D_ALLTOALLW
} dcoll_t;
static const char *dcoll_names[] = {"bcast",   "gather",   "scatter",    "allgather", "alltoall",
                                    "gatherv", "scatterv", "allgatherv", "alltoallv", "alltoallw"};

/* The v collectives use counts c + (r % 3) - 1 and leave one element of gap between blocks. */
static int vcount(int c, int r) {
  int n = c + (r % 3) - 1;
  return n < 0 ? 0 : n;
}

/* Other shapes of allgatherv's and alltoallv's counts and displacements, for their GPU path (every block of
 * one count, one after another in rank order, from some displacement on) and for the calls that must stage
 * on every rank although some ranks' layouts would take it. */
typedef enum {
  V_VARIED,   /* counts as vcount, a gap after each block */
  V_EQUAL,    /* one count, blocks from displacement 1 on, no gaps */
  V_GAPS_ODD, /* one count, a gap after each block on odd ranks only */
  V_ONE_PAIR, /* one count but rank 1's block to rank 2 (to 0 with 2 ranks), one more; allgatherv: rank 1's */
  V_REVERSED, /* counts as vcount, the blocks in reverse rank order from displacement 2 on, a gap after each */
  V_SHAPES
} vshape_t;
static const char *vshape_names[] = {"", ", equal blocks", ", equal blocks with gaps on odd ranks",
                                     ", equal blocks but one", ", blocks in reverse rank order"};

/* Elements rank s sends to rank d (alltoallv), or rank s's block (allgatherv: d < 0). */
static int vcnt(vshape_t v, int c, int s, int d) {
  if (v == V_VARIED || v == V_REVERSED) return vcount(c, d < 0 ? s : s + d);
  if (v == V_ONE_PAIR) return c + (s == 1 && (d < 0 || d == (nranks > 2 ? 2 : 0)));
  return c;
}
/* The gap after each block in rank r's buffers, and the first block's displacement. */
static int vgap(vshape_t v, int r) { return v == V_VARIED || v == V_REVERSED || (v == V_GAPS_ODD && (r & 1)) ? 1 : 0; }
static int vfirst(vshape_t v) { return v == V_VARIED ? 0 : v == V_REVERSED ? 2 : 1; }
/* The rank whose block is the i-th of n in a buffer. */
static int vat(vshape_t v, int i, int n) { return v == V_REVERSED ? n - 1 - i : i; }

static void run_move(dcoll_t c, const layout_t *L, int count, bool inplace, bool nb, int root, vshape_t v) {
  char what[256];
  snprintf(what, sizeof(what), "%s%s %s count %d%s root %d%s", nb ? "i" : "", dcoll_names[c], L->name, count,
           inplace ? " in place" : "", root, vshape_names[v]);
  if (verbose) fprintf(stderr, "[rank %d] %s\n", rank, what);
  uint64_t salt = rnd(100 + c, count, (uint64_t)(L - layouts) * 7 + inplace + 2 * v);
  int n = nranks;
  int *cnt = malloc(sizeof(int) * n), *dsp = malloc(sizeof(int) * n), *rcnt = malloc(sizeof(int) * n),
      *rdsp = malloc(sizeof(int) * n);
  MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * n);
  int vtotal = vfirst(v);
  for (int i = 0; i < n; ++i) {
    const int r = vat(v, i, n);
    cnt[r] = vcnt(v, count, r, -1);
    dsp[r] = vtotal;
    vtotal += cnt[r] + vgap(v, rank);
    types[r] = L->type;
  }
  /* alltoallv/w: rank s sends vcnt(v, count, s, d) elements to d */
  int stotal = vfirst(v), rtotal = vfirst(v);
  int *scnt = malloc(sizeof(int) * n), *sdsp = malloc(sizeof(int) * n);
  for (int i = 0; i < n; ++i) {
    const int d = vat(v, i, n);
    scnt[d] = vcnt(v, count, rank, d);
    sdsp[d] = stotal;
    stotal += scnt[d] + vgap(v, rank);
    rcnt[d] = vcnt(v, count, d, rank);
    rdsp[d] = rtotal;
    rtotal += rcnt[d] + vgap(v, rank);
  }
  size_t selems = 0, relems = 0;
  switch (c) {
    case D_BCAST:
      selems = relems = count;
      break;
    case D_GATHER:
    case D_ALLGATHER:
      selems = count;
      relems = (size_t)count * n;
      break;
    case D_SCATTER:
      selems = (size_t)count * n;
      relems = count;
      break;
    case D_ALLTOALL:
      selems = relems = (size_t)count * n;
      break;
    case D_GATHERV:
    case D_ALLGATHERV:
      selems = cnt[rank];
      relems = vtotal;
      break;
    case D_SCATTERV:
      selems = vtotal;
      relems = cnt[rank];
      break;
    case D_ALLTOALLV:
    case D_ALLTOALLW:
      selems = stotal;
      relems = rtotal;
      break;
  }
  buf_t sb = buf_new(alloc_bytes(L, selems)), rb = buf_new(alloc_bytes(L, relems));
  char *simg = sb.img + L->shift, *rimg = rb.img + L->shift;
  char *sdev = sb.dev + L->shift, *rdev = rb.dev + L->shift;
  /* send data: element e of rank r holds val(r, e) */
  for (size_t e = 0; e < selems; ++e) put_elem(L, simg, e, rank, e, salt);
  if (c == D_BCAST && rank == root)
    for (size_t e = 0; e < relems; ++e) put_elem(L, rimg, e, rank, e, salt);
  /* in place: the receive buffer holds what this rank contributes, where it belongs */
  if (inplace) {
    switch (c) {
      case D_GATHER:
      case D_ALLGATHER:
        for (int e = 0; e < count; ++e) put_elem(L, rimg, (size_t)rank * count + e, rank, e, salt);
        break;
      case D_GATHERV:
      case D_ALLGATHERV:
        for (int e = 0; e < cnt[rank]; ++e) put_elem(L, rimg, dsp[rank] + e, rank, e, salt);
        break;
      case D_ALLTOALL:
        for (size_t e = 0; e < relems; ++e) put_elem(L, rimg, e, rank, e, salt);
        break;
      default:
        break; /* scatter(v): the root's block stays in its send buffer */
    }
  }
  buf_push(&sb);
  buf_push(&rb);
  /* expected receive image */
  char *want = malloc(rb.bytes > sb.bytes ? rb.bytes : sb.bytes);
  memcpy(want, rb.img, rb.bytes);
  char *wimg = want + L->shift;
  switch (c) {
    case D_BCAST:
      for (size_t e = 0; e < relems; ++e) put_elem(L, wimg, e, root, e, salt);
      break;
    case D_GATHER:
    case D_ALLGATHER:
      if (c == D_ALLGATHER || rank == root)
        for (int r = 0; r < n; ++r)
          for (int e = 0; e < count; ++e) put_elem(L, wimg, (size_t)r * count + e, r, e, salt);
      break;
    case D_SCATTER:
      if (!(inplace && rank == root))
        for (int e = 0; e < count; ++e) put_elem(L, wimg, e, root, (size_t)rank * count + e, salt);
      break;
    case D_ALLTOALL:
      for (int r = 0; r < n; ++r)
        for (int e = 0; e < count; ++e) put_elem(L, wimg, (size_t)r * count + e, r, (size_t)rank * count + e, salt);
      break;
    case D_GATHERV:
    case D_ALLGATHERV:
      if (c == D_ALLGATHERV || rank == root)
        for (int r = 0; r < n; ++r)
          for (int e = 0; e < cnt[r]; ++e) put_elem(L, wimg, dsp[r] + e, r, e, salt);
      break;
    case D_SCATTERV:
      if (!(inplace && rank == root))
        for (int e = 0; e < cnt[rank]; ++e) put_elem(L, wimg, e, root, dsp[rank] + e, salt);
      break;
    case D_ALLTOALLV:
    case D_ALLTOALLW:
      for (int s = 0; s < n; ++s) {
        /* rank s placed our block at its sdsp[rank] */
        int off = vfirst(v);
        for (int i = 0, d = vat(v, 0, n); d != rank; d = vat(v, ++i, n)) off += vcnt(v, count, s, d) + vgap(v, s);
        for (int e = 0; e < rcnt[s]; ++e) put_elem(L, wimg, rdsp[s] + e, s, off + e, salt);
      }
      break;
  }
  const void *s = inplace && (c != D_SCATTER && c != D_SCATTERV) ? MPI_IN_PLACE : sdev;
  void *r = rdev;
  if (inplace && (c == D_GATHER || c == D_GATHERV) && rank != root) s = sdev;
  if (inplace && (c == D_SCATTER || c == D_SCATTERV) && rank == root) r = MPI_IN_PLACE;
  int *wsd = malloc(sizeof(int) * n), *wrd = malloc(sizeof(int) * n);
  for (int d = 0; d < n; ++d) {
    wsd[d] = (int)(sdsp[d] * L->extent);
    wrd[d] = (int)(rdsp[d] * L->extent);
  }
  MPI_Datatype T = L->type;
  MPI_Comm W = MPI_COMM_WORLD;
  MPI_Request req;
  int err = MPI_SUCCESS;
  /* -G: allgatherv and alltoallv on ints, blocking and nonblocking, stage nothing on one host: of equal blocks one
   * after another they run as allgather and alltoall (alltoall of at most 8 ranks, not in place), of any other
   * layout as the zero-copy call with counts (at most 8 ranks of one node, not split into virtual ones; alltoallv
   * not in place); nor do gather(v) and scatter(v) (as the call with counts) and alltoall in place (from a copy
   * of the receive buffer), at most 8 ranks of one node and not over the SHM node transport (no zero-copy call);
   * not with -m mixed, where a rank of host memory stages them all (a call with counts takes no joining rank) */
  const bool zero_copy = n <= 8 && one_node() && !node_shm;
  const bool counts_gpu = v == V_EQUAL || zero_copy;
  const bool rooted = c == D_GATHER || c == D_GATHERV || c == D_SCATTER || c == D_SCATTERV;
  const bool must_gpu = gpu_path && count > 0 && L == &layouts[0] && kind != TBUF_MIXED && one_host() &&
                        ((counts_gpu && (c == D_ALLGATHERV || (c == D_ALLTOALLV && !inplace && n <= 8))) ||
                         ((rooted || (c == D_ALLTOALL && inplace)) && zero_copy));
  const unsigned long long staged_before = must_gpu ? staged_count() : 0;
  random_gap(salt + 31 * (uint64_t)root + nb);
  switch (c) {
    case D_BCAST:
      err = nb ? MPI_Ibcast(rdev, count, T, root, W, &req) : MPI_Bcast(rdev, count, T, root, W);
      break;
    case D_GATHER:
      err = nb ? MPI_Igather(s, count, T, r, count, T, root, W, &req) : MPI_Gather(s, count, T, r, count, T, root, W);
      break;
    case D_SCATTER:
      err = nb ? MPI_Iscatter(s, count, T, r, count, T, root, W, &req) : MPI_Scatter(s, count, T, r, count, T, root, W);
      break;
    case D_ALLGATHER:
      err = nb ? MPI_Iallgather(s, count, T, r, count, T, W, &req) : MPI_Allgather(s, count, T, r, count, T, W);
      break;
    case D_ALLTOALL:
      err = nb ? MPI_Ialltoall(s, count, T, r, count, T, W, &req) : MPI_Alltoall(s, count, T, r, count, T, W);
      break;
    case D_GATHERV:
      err = nb ? MPI_Igatherv(s, cnt[rank], T, r, cnt, dsp, T, root, W, &req)
               : MPI_Gatherv(s, cnt[rank], T, r, cnt, dsp, T, root, W);
      break;
    case D_SCATTERV:
      err = nb ? MPI_Iscatterv(s, cnt, dsp, T, r, cnt[rank], T, root, W, &req)
               : MPI_Scatterv(s, cnt, dsp, T, r, cnt[rank], T, root, W);
      break;
    case D_ALLGATHERV:
      err = nb ? MPI_Iallgatherv(s, cnt[rank], T, r, cnt, dsp, T, W, &req)
               : MPI_Allgatherv(s, cnt[rank], T, r, cnt, dsp, T, W);
      break;
    case D_ALLTOALLV:
      err = nb ? MPI_Ialltoallv(s, scnt, sdsp, T, r, rcnt, rdsp, T, W, &req)
               : MPI_Alltoallv(s, scnt, sdsp, T, r, rcnt, rdsp, T, W);
      break;
    case D_ALLTOALLW:
      err = nb ? MPI_Ialltoallw(s, scnt, wsd, types, r, rcnt, wrd, types, W, &req)
               : MPI_Alltoallw(s, scnt, wsd, types, r, rcnt, wrd, types, W);
      break;
  }
  if (err == MPI_SUCCESS && nb) err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  checks++;
  if (err != MPI_SUCCESS) fail(what, "returned an error");
  if (must_gpu) {
    checks++;
    if (staged_count() != staged_before) fail(what, "staged its buffers");
  }
  buf_check(what, &rb, want);
  /* the send buffer is never written */
  memcpy(want, sb.img, sb.bytes);
  buf_check(what, &sb, want);
  free(want);
  free(cnt);
  free(dsp);
  free(rcnt);
  free(rdsp);
  free(scnt);
  free(sdsp);
  free(types);
  free(wsd);
  free(wrd);
  buf_free(&sb);
  buf_free(&rb);
}

void test_moves(void) {
  const int counts[] = {0, 1, 5, 300};
  for (int c = D_BCAST; c <= D_ALLTOALLW; ++c) {
    for (int l = 0; l < 3; ++l) {
      for (int v = 0; v < 4; ++v) {
        bool nb = v & 1, inplace = v & 2;
        if (inplace && c == D_BCAST) continue;
        if (inplace && (c == D_ALLTOALLV || c == D_ALLTOALLW))
          continue; /* in place needs equal send and receive counts */
        /* allgatherv's and alltoallv's other shapes: on ints (their GPU path) and a layout with holes */
        const int shapes = (c == D_ALLGATHERV || c == D_ALLTOALLV) && l < 2 ? V_SHAPES : 1;
        for (int k = 0; k < 4; ++k)
          for (int sh = 0; sh < shapes; ++sh)
            run_move((dcoll_t)c, &layouts[l], counts[k], inplace, nb, (c + l + v + k) % nranks, (vshape_t)sh);
      }
    }
  }
}

void free_layouts(void) {
  MPI_Type_free(&layouts[1].type);
  MPI_Type_free(&layouts[2].type);
}

/* MPI_BOTTOM with a datatype of absolute addresses (MPI_Get_address of the buffer, device memory too): a
 * bcast, blocking and nonblocking, of two runs of ints with a gap between that keeps its poison elsewhere. */
void test_bottom(void) {
  const int run = 64;
  buf_t b = buf_new(3 * run * sizeof(int));
  buf_push(&b); /* poisoned */
  MPI_Aint disp[2];
  MPI_Get_address(b.dev, &disp[0]);
  MPI_Get_address(b.dev + 2 * run * sizeof(int), &disp[1]);
  int bl[2] = {run, run};
  MPI_Datatype abs_type;
  MPI_Type_create_hindexed(2, bl, disp, MPI_INT, &abs_type);
  MPI_Type_commit(&abs_type);
  char *want = malloc(b.bytes);
  for (int nb = 0; nb < 2; ++nb) {
    const int root = (nb + 1) % nranks;
    memset(b.img, POISON, b.bytes);
    memset(want, POISON, b.bytes);
    for (int i = 0; i < run; ++i)
      for (int part = 0; part < 2; ++part) {
        const int v = (int)(rnd((uint64_t)root, (uint64_t)(part * run + i), 0xb0770) & 0x7fffffff);
        memcpy(want + ((size_t)part * 2 * run + i) * sizeof(int), &v, sizeof(int));
      }
    if (rank == root) memcpy(b.img, want, b.bytes);
    buf_push(&b);
    checks++;
    MPI_Request req;
    const int rc = nb ? MPI_Ibcast(MPI_BOTTOM, 1, abs_type, root, MPI_COMM_WORLD, &req)
                      : MPI_Bcast(MPI_BOTTOM, 1, abs_type, root, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && nb) MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) fail(nb ? "ibcast from MPI_BOTTOM" : "bcast from MPI_BOTTOM", "returned an error");
    buf_check(nb ? "ibcast from MPI_BOTTOM" : "bcast from MPI_BOTTOM", &b, want);
  }
  free(want);
  MPI_Type_free(&abs_type);
  buf_free(&b);
}
