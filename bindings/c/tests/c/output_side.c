/*
 * The output side of the C ABI (SPEC §12): Detess, DetessCast, DetessDequant, Dequant and
 * the placement of heads, as a C99 program meets them. Built into capi_test (natively,
 * with ASan/UBSan, under valgrind, for AArch64 under qemu).
 *
 * Every expectation comes from oracle.h (the tiled bytes written in storage order by one
 * loop nest per encoding from SPEC §12.1, dequantization in binary32 from SPEC §12.2) or is
 * written here by hand (SiMa's fixture sizes, the BF16 c16 pixel), never from simak.
 * Padding in the tiled inputs is a junk byte, so reading padding into a result fails.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simak/simak.h>

#include "fp_env.h"
#include "oracle.h"
#include "output_side.h"

static int *n_passed, *n_failed;

#define CHECK_PASSED (*n_passed)
#define CHECK_FAILED (*n_failed)
#include "check.h"

/* Junk in padding channels and tile padding. */
#define PAD 0xa5
/* The untouched-output marker. */
#define MARK 0xee

/* 64-byte aligned storage of n bytes (plus slack), filled with `fill`. */
typedef struct buffer {
    void *base;
    unsigned char *p;
} buffer;

static buffer buffer_new(size_t n, unsigned char fill) {
    buffer b;
    b.base = malloc(n + 128);
    if (!b.base) exit(2);
    b.p = (unsigned char *)(((uintptr_t)b.base + 63) & ~(uintptr_t)63);
    memset(b.p, fill, n + 64);
    return b;
}

static int untouched(const unsigned char *p, size_t n) {
    size_t k;
    for (k = 0; k < n; ++k)
        if (p[k] != MARK) return 0;
    return 1;
}

static uint32_t int_dtype(size_t e) {
    return e == 1 ? SIMAK_DTYPE_I8 : e == 2 ? SIMAK_DTYPE_I16 : SIMAK_DTYPE_I32;
}

static size_t out_size(uint32_t dtype) { return dtype == SIMAK_DTYPE_F32 ? 4 : 2; }

/* The logical [N, H, W, C] tensor of `m` (rank 4), or [H, W, C] when `rank3` (N = 1). */
static simak_tensor logical(const oracle_mla *m, int rank3, uint32_t dtype, const uint64_t *strides) {
    simak_tensor t;
    memset(&t, 0, sizeof t);
    if (rank3) {
        t.rank = 3;
        t.extents[0] = m->h;
        t.extents[1] = m->w;
        t.extents[2] = m->c;
    } else {
        t.rank = 4;
        t.extents[0] = m->n;
        t.extents[1] = m->h;
        t.extents[2] = m->w;
        t.extents[3] = m->c;
    }
    t.strides = strides;
    t.dtype = dtype;
    return t;
}

static simak_mla_tiled_v2 layout_of(const oracle_mla *m, int rank3) {
    simak_mla_tiled_v2 l = simak_mla_tiled_v2_default();
    int base = rank3 ? 0 : 1;
    l.axes[1] = base;
    l.axes[2] = base + 1;
    l.axes[3] = base + 2;
    l.tile[1] = (uint32_t)m->th;
    l.tile[2] = (uint32_t)m->tw;
    l.tile[3] = (uint32_t)m->tc;
    l.channels = (uint32_t)m->channels;
    l.tile_align = (uint32_t)m->align;
    return l;
}

/* Byte offset of element (n, h, w, c) in an output of element size `es`: NHWC contiguous,
 * or NCHW (channels-first) when `nchw`. */
static size_t out_offset(const oracle_mla *m, int nchw, size_t es, size_t n, size_t h, size_t w,
                         size_t c) {
    if (nchw) return (((n * m->c + c) * m->h + h) * m->w + w) * es;
    return (((n * m->h + h) * m->w + w) * m->c + c) * es;
}

static void nchw_strides(const oracle_mla *m, size_t es, uint64_t strides[4]) {
    strides[0] = (uint64_t)(m->c * m->h * m->w * es);
    strides[1] = (uint64_t)(m->w * es);
    strides[2] = (uint64_t)es;
    strides[3] = (uint64_t)(m->h * m->w * es);
}

/* The ops with a tiled input, by one index: 0 Detess, 1 DetessCast, 2 DetessDequant. */
enum { DETESS = 0, DETESSCAST = 1, DETESSDEQUANT = 2 };

typedef struct any_plan {
    int op;
    simak_detess_plan *detess;
    simak_detesscast_plan *cast;
    simak_detessdequant_plan *dequant;
} any_plan;

static uint32_t plan_new(int op, const simak_tensor *in, const simak_tensor *out,
                         const simak_mla_tiled_v2 *layout, const simak_dequant_params *params,
                         any_plan *plan, simak_error *err) {
    memset(plan, 0, sizeof *plan);
    plan->op = op;
    if (op == DETESS) return simak_detess_plan_new(in, out, layout, &plan->detess, err);
    if (op == DETESSCAST) return simak_detesscast_plan_new(in, out, layout, &plan->cast, err);
    return simak_detessdequant_plan_new(in, out, layout, params, &plan->dequant, err);
}

static uint64_t plan_capacity(const any_plan *p) {
    if (p->op == DETESS) return simak_detess_plan_input_capacity(p->detess);
    if (p->op == DETESSCAST) return simak_detesscast_plan_input_capacity(p->cast);
    return simak_detessdequant_plan_input_capacity(p->dequant);
}

static uint64_t plan_output_span(const any_plan *p) {
    if (p->op == DETESS) return simak_detess_plan_output_span(p->detess);
    if (p->op == DETESSCAST) return simak_detesscast_plan_output_span(p->cast);
    return simak_detessdequant_plan_output_span(p->dequant);
}

static uint32_t plan_execute(const any_plan *p, const void *in, size_t in_bytes, void *out,
                             size_t out_bytes, simak_error *err) {
    if (p->op == DETESS) return simak_detess_execute(p->detess, in, in_bytes, out, out_bytes, err);
    if (p->op == DETESSCAST)
        return simak_detesscast_execute(p->cast, in, in_bytes, out, out_bytes, err);
    return simak_detessdequant_execute(p->dequant, in, in_bytes, out, out_bytes, err);
}

static void plan_free(any_plan *p) {
    simak_detess_plan_free(p->detess);
    simak_detesscast_plan_free(p->cast);
    simak_detessdequant_plan_free(p->dequant);
}

/* One case: op over layout `m` whose input dtype is `in_dtype` (element size m->e), output
 * `out_dtype`, NHWC or NCHW; the result against the oracle, the one-byte-short buffers
 * refused with their codes and the output untouched. `want_capacity` 0: not checked. */
static void run_case(const char *name, int op, const oracle_mla *m, int rank3, uint32_t in_dtype,
                     uint32_t out_dtype, int nchw, const simak_dequant_params *params,
                     size_t want_capacity, unsigned seed) {
    size_t cap = 0, es = op == DETESS ? m->e : out_size(out_dtype), n, h, w, c, bad = 0;
    size_t elements = m->n * m->h * m->w * m->c, out_bytes = elements * es;
    uint64_t strides[4];
    simak_tensor ti, to;
    simak_mla_tiled_v2 layout = layout_of(m, rank3);
    any_plan plan;
    simak_error err;
    uint32_t code;
    buffer in, out;
    float s = 0.0f;
    unsigned char v[4];
    if (params) memcpy(&s, &params->multiplier_bits, 4);
    oracle_mla_fill(m, seed, PAD, NULL, &cap);
    if (want_capacity) CHECK(cap == want_capacity, "%s: oracle capacity %zu", name, cap);
    nchw_strides(m, es, strides);
    ti = logical(m, rank3, in_dtype, NULL);
    /* Channels-first: [H, W, C] takes the last three strides. */
    to = logical(m, rank3, out_dtype, nchw ? (rank3 ? strides + 1 : strides) : NULL);
    code = plan_new(op, &ti, &to, &layout, params, &plan, &err);
    CHECK_CODE(code, 0u, err);
    if (code != 0) return;
    CHECK(plan_capacity(&plan) == cap, "%s: input capacity %llu, oracle %zu", name,
          (unsigned long long)plan_capacity(&plan), cap);
    CHECK(plan_output_span(&plan) == out_bytes, "%s: output span %llu, want %zu", name,
          (unsigned long long)plan_output_span(&plan), out_bytes);
    in = buffer_new(cap, PAD);
    oracle_mla_fill(m, seed, PAD, in.p, &cap);
    out = buffer_new(out_bytes, MARK);

    /* One byte short: refused, nothing written. */
    code = plan_execute(&plan, in.p, cap - 1, out.p, out_bytes, &err);
    CHECK_CODE(code, 0x401u, err);
    code = plan_execute(&plan, in.p, cap, out.p, out_bytes - 1, &err);
    CHECK_CODE(code, 0x402u, err);
    CHECK(untouched(out.p, out_bytes + 64), "%s: a refused call wrote", name);

    code = plan_execute(&plan, in.p, cap, out.p, out_bytes, &err);
    CHECK_CODE(code, 0u, err);
    for (n = 0; n < m->n; ++n)
        for (h = 0; h < m->h; ++h)
            for (w = 0; w < m->w; ++w)
                for (c = 0; c < m->c; ++c) {
                    const unsigned char *got = out.p + out_offset(m, nchw, es, n, h, w, c);
                    unsigned char want[4];
                    size_t k;
                    oracle_value_bytes(seed, n, h, w, c, m->e, v);
                    if (op == DETESS) {
                        memcpy(want, v, m->e);
                    } else {
                        uint32_t bits;
                        if (op == DETESSCAST)
                            bits = (uint32_t)(v[0] | v[1] << 8) << 16;
                        else
                            bits = oracle_dequant(oracle_int(v, m->e), params->zero_point, s,
                                                  (int)out_dtype);
                        for (k = 0; k < 4; ++k) want[k] = (unsigned char)(bits >> (8 * k));
                    }
                    for (k = 0; k < es; ++k) bad += got[k] != want[k];
                }
    CHECK(bad == 0, "%s: %zu bytes differ from the oracle", name, bad);
    CHECK(untouched(out.p + out_bytes, 64), "%s: bytes past the output written", name);
    plan_free(&plan);
    free(in.base);
    free(out.base);
}

static oracle_mla mla(size_t n, size_t h, size_t w, size_t c, size_t th, size_t tw, size_t tc,
                      int channels, size_t align, size_t e) {
    oracle_mla m;
    m.n = n;
    m.h = h;
    m.w = w;
    m.c = c;
    m.th = th;
    m.tw = tw;
    m.tc = tc;
    m.channels = channels;
    m.align = align;
    m.e = e;
    return m;
}

/* SiMa's fixture sizes, each read back against the oracle. */
static void fixtures(void) {
    oracle_mla m;
    simak_dequant_params p = simak_dequant_params_default(0.0625f);
    p.zero_point = -3;
    m = mla(1, 2, 3, 33, 2, 3, 33, ORACLE_COMPACT, 1, 2);
    run_case("BF16 [2,3,33] Compact align 1", DETESS, &m, 1, SIMAK_DTYPE_BF16, SIMAK_DTYPE_BF16,
             0, NULL, 396, 1);
    run_case("BF16 [2,3,33] Compact align 1 cast", DETESSCAST, &m, 1, SIMAK_DTYPE_BF16,
             SIMAK_DTYPE_F32, 1, NULL, 396, 2);
    m = mla(1, 2, 3, 33, 2, 3, 33, ORACLE_PAD16, 16, 2);
    run_case("BF16 [2,3,33] PadTo16", DETESS, &m, 1, SIMAK_DTYPE_BF16, SIMAK_DTYPE_BF16, 0, NULL,
             576, 3);
    m = mla(1, 19, 19, 273, 19, 19, 273, ORACLE_CBLOCK16, 16, 1);
    run_case("INT8 19x19x273 CBlock16", DETESS, &m, 1, SIMAK_DTYPE_I8, SIMAK_DTYPE_I8, 0, NULL,
             103968, 4);
    run_case("INT8 19x19x273 CBlock16 dequant", DETESSDEQUANT, &m, 1, SIMAK_DTYPE_I8,
             SIMAK_DTYPE_F32, 1, &p, 103968, 5);
    m = mla(1, 16, 16, 16, 16, 16, 16, ORACLE_COMPACT, 1, 1);
    run_case("INT8 [16,16,16] Compact", DETESS, &m, 1, SIMAK_DTYPE_I8, SIMAK_DTYPE_I8, 0, NULL,
             4096, 6);
    m = mla(1, 60, 80, 65, 60, 80, 65, ORACLE_PAD16, 16, 1);
    run_case("INT8 60x80x65 PadTo16", DETESS, &m, 1, SIMAK_DTYPE_I8, SIMAK_DTYPE_I8, 0, NULL,
             384000, 7);
}

/* Every encoding, element size and op, with boundary tiles on H, W and C, two frames, NHWC
 * and NCHW outputs. */
static void sweep(void) {
    static const int encodings[3] = {ORACLE_COMPACT, ORACLE_PAD16, ORACLE_CBLOCK16};
    static const size_t sizes[3] = {1, 2, 4};
    static const uint32_t floats[3] = {SIMAK_DTYPE_F32, SIMAK_DTYPE_F16, SIMAK_DTYPE_BF16};
    static const int32_t zps[3] = {-128, 32767, -2000000000};
    int k, j, o;
    unsigned seed = 100;
    char name[128];
    for (k = 0; k < 3; ++k) {
        for (j = 0; j < 3; ++j) {
            size_t align, tc = encodings[k] == ORACLE_COMPACT ? 20 : 32;
            for (align = 1; align <= 16; align += 15) {
                oracle_mla m = mla(2, 3, 5, 37, 2, 3, tc, encodings[k], align, sizes[j]);
                snprintf(name, sizeof name, "Detess enc %d E %zu align %zu", encodings[k],
                         sizes[j], align);
                run_case(name, DETESS, &m, 0, int_dtype(sizes[j]), int_dtype(sizes[j]),
                         (int)align == 16, NULL, 0, ++seed);
                for (o = 0; o < 3; ++o) {
                    simak_dequant_params p = simak_dequant_params_default(0.37f);
                    p.zero_point = sizes[j] == 1 ? zps[0] : sizes[j] == 2 ? zps[1] : zps[2];
                    snprintf(name, sizeof name, "DetessDequant enc %d E %zu align %zu out %u",
                             encodings[k], sizes[j], align, (unsigned)floats[o]);
                    run_case(name, DETESSDEQUANT, &m, 0, int_dtype(sizes[j]), floats[o], o == 1,
                             &p, 0, ++seed);
                }
            }
        }
        {
            oracle_mla m = mla(2, 3, 5, 37, 2, 3, encodings[k] == ORACLE_COMPACT ? 20 : 32,
                               encodings[k], 16, 2);
            snprintf(name, sizeof name, "BF16 Detess enc %d", encodings[k]);
            run_case(name, DETESS, &m, 0, SIMAK_DTYPE_BF16, SIMAK_DTYPE_BF16, 1, NULL, 0, ++seed);
            snprintf(name, sizeof name, "DetessCast enc %d", encodings[k]);
            run_case(name, DETESSCAST, &m, 0, SIMAK_DTYPE_BF16, SIMAK_DTYPE_F32, 0, NULL, 0,
                     ++seed);
        }
    }
}

/* A BF16 C = 1 pixel in c16 storage reads (b[16] << 8) | b[0] (SPEC §12.1, certain). */
static void bf16_c16_pixel(void) {
    int enc;
    for (enc = SIMAK_CHANNELS_PAD_TO_16; enc <= SIMAK_CHANNELS_CBLOCK16; ++enc) {
        simak_tensor ti, to;
        simak_mla_tiled_v2 l = simak_mla_tiled_v2_default();
        simak_detess_plan *d = NULL;
        simak_detesscast_plan *c = NULL;
        simak_error err;
        buffer in = buffer_new(32, PAD), out = buffer_new(4, MARK);
        uint32_t code;
        float f;
        memset(&ti, 0, sizeof ti);
        ti.rank = 2;
        ti.extents[0] = 1;
        ti.extents[1] = 1;
        ti.dtype = SIMAK_DTYPE_BF16;
        to = ti;
        l.axes[2] = 0;
        l.axes[3] = 1;
        l.channels = (uint32_t)enc;
        in.p[0] = 0x49;
        in.p[16] = 0x40;
        code = simak_detess_plan_new(&ti, &to, &l, &d, &err);
        CHECK_CODE(code, 0u, err);
        CHECK(simak_detess_plan_input_capacity(d) == 32, "c16 pixel: 32 bytes");
        code = simak_detess_execute(d, in.p, 32, out.p, 2, &err);
        CHECK_CODE(code, 0u, err);
        CHECK(out.p[0] == 0x49 && out.p[1] == 0x40 && out.p[2] == MARK,
              "c16 pixel %d: %02x %02x", enc, out.p[0], out.p[1]);
        to.dtype = SIMAK_DTYPE_F32;
        code = simak_detesscast_plan_new(&ti, &to, &l, &c, &err);
        CHECK_CODE(code, 0u, err);
        code = simak_detesscast_execute(c, in.p, 32, out.p, 4, &err);
        CHECK_CODE(code, 0u, err);
        memcpy(&f, out.p, 4);
        CHECK(f == 3.140625f, "c16 pixel cast: %g", (double)f);
        simak_detess_plan_free(d);
        simak_detesscast_plan_free(c);
        free(in.base);
        free(out.base);
    }
}

/* Dequant of strided codes: spot values against SPEC §12.2, the output strided with gaps. */
static void dequant_case(size_t e, const int64_t *codes, size_t count, int32_t zp, float s,
                         uint32_t out_dtype) {
    size_t es = out_size(out_dtype), k, j, bad = 0;
    buffer in = buffer_new(count * e, 0), out = buffer_new(count * es * 2, MARK);
    simak_tensor ti, to;
    uint64_t ostride = (uint64_t)(2 * es);
    simak_dequant_params p = simak_dequant_params_default(s);
    simak_dequant_plan *plan = NULL;
    simak_error err;
    uint32_t code;
    size_t out_span = (count - 1) * 2 * es + es;
    for (k = 0; k < count; ++k)
        for (j = 0; j < e; ++j) in.p[k * e + j] = (unsigned char)((uint64_t)codes[k] >> (8 * j));
    memset(&ti, 0, sizeof ti);
    ti.rank = 1;
    ti.extents[0] = count;
    ti.dtype = int_dtype(e);
    to = ti;
    to.strides = &ostride;
    to.dtype = out_dtype;
    p.zero_point = zp;
    code = simak_dequant_plan_new(&ti, &to, &p, &plan, &err);
    CHECK_CODE(code, 0u, err);
    if (code != 0) return;
    CHECK(simak_dequant_plan_input_span(plan) == count * e, "dequant input span");
    CHECK(simak_dequant_plan_output_span(plan) == out_span, "dequant output span");
    code = simak_dequant_execute(plan, in.p, count * e - 1, out.p, out_span, &err);
    CHECK_CODE(code, 0x401u, err);
    code = simak_dequant_execute(plan, in.p, count * e, out.p, out_span - 1, &err);
    CHECK_CODE(code, 0x402u, err);
    CHECK(untouched(out.p, count * es * 2 + 64), "dequant: a refused call wrote");
    code = simak_dequant_execute(plan, in.p, count * e, out.p, out_span, &err);
    CHECK_CODE(code, 0u, err);
    for (k = 0; k < count; ++k) {
        uint32_t want = oracle_dequant(codes[k], zp, s, (int)out_dtype), got = 0;
        for (j = 0; j < es; ++j) got |= (uint32_t)out.p[k * 2 * es + j] << (8 * j);
        if (got != want) {
            if (bad < 3)
                printf("  dequant E %zu code %lld zp %d s %a out %u: got 0x%x, want 0x%x\n", e,
                       (long long)codes[k], (int)zp, (double)s, (unsigned)out_dtype,
                       (unsigned)got, (unsigned)want);
            ++bad;
        }
        CHECK(untouched(out.p + k * 2 * es + es, es), "dequant: a gap was written");
    }
    CHECK(bad == 0, "dequant E %zu zp %d s %a out %u: %zu of %zu values differ", e, (int)zp,
          (double)s, (unsigned)out_dtype, bad, count);
    simak_dequant_plan_free(plan);
    free(in.base);
    free(out.base);
}

static void dequant_spot_values(void) {
    static const uint32_t floats[3] = {SIMAK_DTYPE_F32, SIMAK_DTYPE_F16, SIMAK_DTYPE_BF16};
    /* 1/3, 2^-3, a subnormal, a huge one, an ordinary scale, 12345.678, 2^20 and 10^6
     * (FP16 subnormal results, exact and rounded). */
    static const uint32_t multipliers[8] = {0x3eaaaaabu, 0x3e000000u, 0x000116c2u, 0x7f000000u,
                                            0x3c23d70au, 0x4640e6b7u, 0x49800000u, 0x49742400u};
    int64_t i8[256], i16[258], i32[12];
    size_t k, n16 = 0;
    int o, m;
    for (k = 0; k < 256; ++k) i8[k] = (int64_t)k - 128;
    for (k = 0; k < 256; ++k) i16[n16++] = (int64_t)k * 257 - 32768;
    i16[n16++] = 32767;
    i16[n16++] = -1;
    i32[0] = INT32_MIN;
    i32[1] = INT32_MAX;
    i32[2] = 16777216 + 1;
    i32[3] = -16777216 - 1;
    i32[4] = 16777216 - 1;
    i32[5] = -16777216 + 1;
    i32[6] = 0;
    i32[7] = 123456789;
    i32[8] = -987654321;
    i32[9] = 33554435;
    i32[10] = 1;
    i32[11] = -1;
    for (o = 0; o < 3; ++o) {
        for (m = 0; m < 8; ++m) {
            float s;
            memcpy(&s, &multipliers[m], 4);
            dequant_case(1, i8, 256, -128, s, floats[o]);
            dequant_case(1, i8, 256, 127, s, floats[o]);
            dequant_case(2, i16, n16, -32768, s, floats[o]);
            dequant_case(2, i16, n16, 32767, s, floats[o]);
            dequant_case(4, i32, 12, 0, s, floats[o]);
            dequant_case(4, i32, 12, INT32_MIN, s, floats[o]);
            dequant_case(4, i32, 12, INT32_MAX, s, floats[o]);
        }
    }
}

/* A Dequant call on a thread whose FP environment flushes subnormals. */
typedef struct ftz_job {
    const simak_dequant_plan *plan;
    const unsigned char *in;
    size_t in_bytes;
    unsigned char *out;
    size_t out_bytes;
    uint32_t code;
    int applied;
} ftz_job;

static void *ftz_thread(void *arg) {
    ftz_job *job = (ftz_job *)arg;
    simak_error err;
    job->applied = set_ftz();
    job->code = simak_dequant_execute(job->plan, job->in, job->in_bytes, job->out,
                                      job->out_bytes, &err);
    return NULL;
}

/* SPEC §12.2: INT8 / INT16 / INT32 → FP32 never depends on the caller's FP environment.
 * Under flush-to-zero the FP paths must give way to the table (INT8, INT16) or the integer
 * path (INT32): the same bytes as in the default environment, whose values the spot checks
 * above compare with the oracle. The largest finite multiplier makes the results of
 * codes -3..3 subnormal (so a flushing FP path would differ: checked), 1/3 gives ordinary
 * ones. */
static void dequant_under_ftz(void) {
    static const uint32_t multipliers[2] = {0x7f7fffffu, 0x3eaaaaabu};
    size_t e, m, k;
    for (e = 1; e <= 4; e *= 2) {
        for (m = 0; m < 2; ++m) {
            size_t count = e == 4 ? 1024 : (e == 2 ? 4096 : 256), subnormal = 0;
            buffer in = buffer_new(count * e, 0), main_out = buffer_new(count * 4, MARK),
                   ftz_out = buffer_new(count * 4, MARK);
            simak_tensor ti, to;
            simak_dequant_params p;
            simak_dequant_plan *plan = NULL;
            simak_error err;
            uint32_t code;
            pthread_t thread;
            ftz_job job;
            float s;
            memcpy(&s, &multipliers[m], 4);
            p = simak_dequant_params_default(s);
            /* Codes spread over the dtype's range, every third one in -3..3. */
            for (k = 0; k < count; ++k) {
                uint32_t v = k % 3 == 0 ? (uint32_t)((int32_t)(k % 7) - 3)
                                        : (uint32_t)(k * 2654435761u);
                size_t j;
                for (j = 0; j < e; ++j) in.p[k * e + j] = (unsigned char)(v >> (8 * j));
            }
            memset(&ti, 0, sizeof ti);
            ti.rank = 1;
            ti.extents[0] = count;
            ti.dtype = int_dtype(e);
            to = ti;
            to.dtype = SIMAK_DTYPE_F32;
            code = simak_dequant_plan_new(&ti, &to, &p, &plan, &err);
            CHECK_CODE(code, 0u, err);
            if (code != 0) continue;
            code = simak_dequant_execute(plan, in.p, count * e, main_out.p, count * 4, &err);
            CHECK_CODE(code, 0u, err);
            memset(&job, 0, sizeof job);
            job.plan = plan;
            job.in = in.p;
            job.in_bytes = count * e;
            job.out = ftz_out.p;
            job.out_bytes = count * 4;
            CHECK(pthread_create(&thread, NULL, ftz_thread, &job) == 0, "thread");
            pthread_join(thread, NULL);
            for (k = 0; k < count; ++k) {
                uint32_t bits = 0;
                size_t j;
                for (j = 0; j < 4; ++j) bits |= (uint32_t)main_out.p[k * 4 + j] << (8 * j);
                subnormal += (bits & 0x7f800000u) == 0 && (bits & 0x007fffffu) != 0;
            }
            if (m == 0) CHECK(subnormal > 0, "E %zu: no subnormal result", e);
            if (!job.applied) {
                printf("note: flush-to-zero did not stick on this CPU or emulator; Dequant "
                       "under FTZ is not checked in this run\n");
            } else {
                CHECK(job.code == 0, "E %zu s %a under FTZ: code 0x%x", e, (double)s,
                      (unsigned)job.code);
                CHECK(memcmp(main_out.p, ftz_out.p, count * 4) == 0,
                      "E %zu s %a: under FTZ the bytes differ from the default environment's",
                      e, (double)s);
            }
            simak_dequant_plan_free(plan);
            free(in.base);
            free(main_out.base);
            free(ftz_out.base);
        }
    }
}

/* Refusals: codes, messages, NULL plans. */
static void errors(void) {
    oracle_mla m = mla(1, 2, 3, 40, 2, 3, 40, ORACLE_CBLOCK16, 16, 1);
    simak_tensor ti = logical(&m, 1, SIMAK_DTYPE_I8, NULL), to = ti;
    simak_tensor tf = logical(&m, 1, SIMAK_DTYPE_F32, NULL);
    simak_mla_tiled_v2 l = layout_of(&m, 1);
    simak_dequant_params p = simak_dequant_params_default(0.5f);
    /* Any non-NULL value: a failing call sets it to NULL. */
    simak_detess_plan *d = (simak_detess_plan *)&m;
    simak_detesscast_plan *c = NULL;
    simak_detessdequant_plan *dd = NULL;
    simak_dequant_plan *q = NULL;
    simak_error err;
    uint32_t code, channels = 99;
    uint64_t strides[3] = {3 * 40, 40, 1};
    float nan_f;
    uint32_t nan_bits = 0x7fc00000u;
    memcpy(&nan_f, &nan_bits, 4);

    /* The c16 tile-channel rule (Detess inputs only): C tile 20 of C = 40. */
    l.tile[3] = 20;
    code = simak_detess_plan_new(&ti, &to, &l, &d, &err);
    CHECK_CODE(code, 0x224u, err);
    CHECK(d == NULL, "failure leaves *plan NULL");
    l.tile[3] = 40;
    l.channels = 3;
    code = simak_detess_plan_new(&ti, &to, &l, &d, &err);
    CHECK_CODE(code, 0x601u, err);
    l.channels = SIMAK_CHANNELS_CBLOCK16;
    l.tile_align = 8;
    code = simak_detess_plan_new(&ti, &to, &l, &d, &err);
    CHECK_CODE(code, 0x601u, err);
    l.tile_align = 16;
    ti.strides = strides;
    code = simak_detess_plan_new(&ti, &to, &l, &d, &err);
    CHECK_CODE(code, 0x205u, err);
    ti.strides = NULL;
    code = simak_detess_plan_new(&ti, &to, NULL, &d, &err);
    CHECK_CODE(code, 0x603u, err);
    code = simak_detess_plan_new(&ti, &tf, &l, &d, &err);
    CHECK_CODE(code, 0x201u, err);
    /* DetessCast reads BF16 only. */
    code = simak_detesscast_plan_new(&ti, &tf, &l, &c, &err);
    CHECK_CODE(code, 5u, err);
    /* DetessDequant: zero point out of the INT8 range, zero and NaN multipliers. */
    p.zero_point = 128;
    code = simak_detessdequant_plan_new(&ti, &tf, &l, &p, &dd, &err);
    CHECK_CODE(code, 0x223u, err);
    p.zero_point = 0;
    p.multiplier_bits = 0;
    code = simak_detessdequant_plan_new(&ti, &tf, &l, &p, &dd, &err);
    CHECK_CODE(code, 14u, err);
    memcpy(&p.multiplier_bits, &nan_f, 4);
    code = simak_detessdequant_plan_new(&ti, &tf, &l, &p, &dd, &err);
    CHECK_CODE(code, 13u, err);
    code = simak_detessdequant_plan_new(&ti, &tf, &l, NULL, &dd, &err);
    CHECK_CODE(code, 0x603u, err);
    CHECK(dd == NULL, "failure leaves *plan NULL");
    /* Dequant: an I16 zero point out of range; a float input. */
    p = simak_dequant_params_default(0.5f);
    p.zero_point = -32769;
    ti.dtype = SIMAK_DTYPE_I16;
    code = simak_dequant_plan_new(&ti, &tf, &p, &q, &err);
    CHECK_CODE(code, 0x223u, err);
    p.zero_point = 0;
    code = simak_dequant_plan_new(&tf, &tf, &p, &q, &err);
    CHECK_CODE(code, 5u, err);
    ti.dtype = 8;
    code = simak_dequant_plan_new(&ti, &tf, &p, &q, &err);
    CHECK_CODE(code, 0x601u, err);
    /* The input-side ops refuse the output side's dtypes. */
    {
        simak_quant_plan *qp = NULL;
        simak_quant_params qparams = simak_quant_params_default(1.0f);
        ti.dtype = SIMAK_DTYPE_I32;
        code = simak_quant_plan_new(&ti, &ti, &qparams, &qp, &err);
        CHECK_CODE(code, 5u, err);
    }
    /* NULL plans. */
    CHECK(simak_detess_plan_input_capacity(NULL) == 0, "NULL plan: capacity 0");
    CHECK(simak_dequant_plan_implementation(NULL) == NULL, "NULL plan: NULL name");
    code = simak_detessdequant_execute(NULL, NULL, 0, NULL, 0, &err);
    CHECK_CODE(code, 0x603u, err);
    simak_detess_plan_free(NULL);
    simak_dequant_plan_free(NULL);

    /* Channel flags of a model archive. */
    code = simak_channels_from_flags(0, 1, &channels, &err);
    CHECK_CODE(code, 0x222u, err);
    CHECK(channels == 99, "a refused call wrote");
    code = simak_channels_from_flags(1, 1, &channels, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(channels == SIMAK_CHANNELS_CBLOCK16, "(1, 1) is CBlock16: %u", (unsigned)channels);
    code = simak_channels_from_flags(1, 0, &channels, &err);
    CHECK(code == 0 && channels == SIMAK_CHANNELS_PAD_TO_16, "(1, 0) is PadTo16");
    code = simak_channels_from_flags(2, 0, &channels, &err);
    CHECK_CODE(code, 0x601u, err);
}

/* Heads: placement by running sums and explicit offsets, and two heads of one OFM read. */
static void heads(void) {
    simak_ofm_head h[3];
    uint64_t off[3] = {7, 7, 7};
    simak_error err;
    uint32_t code;
    memset(h, 0, sizeof h);
    h[0].span = 48;
    h[1].span = 32;
    code = simak_place_heads(80, h, 2, off, 3, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(off[0] == 0 && off[1] == 48 && off[2] == 7, "running sums: %llu %llu",
          (unsigned long long)off[0], (unsigned long long)off[1]);
    h[0].has_offset = 1;
    h[0].offset = 32;
    h[1].has_offset = 1;
    h[1].offset = 0;
    code = simak_place_heads(80, h, 2, off, 2, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(off[0] == 32 && off[1] == 0, "explicit offsets");
    off[0] = off[1] = 7;
    code = simak_place_heads(80, h, 2, off, 1, &err);
    CHECK_CODE(code, 0x609u, err);
    CHECK(off[0] == 7, "a refused call wrote");
    code = simak_place_heads(80, h, 0, off, 3, &err);
    CHECK_CODE(code, 0x225u, err);
    h[1].offset = 80;
    code = simak_place_heads(80, h, 2, off, 2, &err);
    CHECK_CODE(code, 0x226u, err);
    h[1].offset = 50;
    code = simak_place_heads(80, h, 2, off, 2, &err);
    CHECK_CODE(code, 0x227u, err);
    h[1].offset = 16;
    code = simak_place_heads(80, h, 2, off, 2, &err);
    CHECK_CODE(code, 0x228u, err);
    CHECK(off[0] == 7 && off[1] == 7, "a refused call wrote");
    h[1].has_offset = 2;
    code = simak_place_heads(80, h, 2, off, 2, &err);
    CHECK_CODE(code, 0x601u, err);
    code = simak_place_heads(80, NULL, 2, off, 2, &err);
    CHECK_CODE(code, 0x603u, err);

    /* Two INT8 heads of one OFM, placed by running sums, each read at its offset. */
    {
        oracle_mla a = mla(1, 3, 4, 20, 3, 4, 20, ORACLE_PAD16, 16, 1);
        oracle_mla b = mla(1, 2, 2, 5, 2, 2, 5, ORACLE_COMPACT, 16, 1);
        simak_tensor ta = logical(&a, 1, SIMAK_DTYPE_I8, NULL), tb = logical(&b, 1, SIMAK_DTYPE_I8, NULL);
        simak_mla_tiled_v2 la = layout_of(&a, 1), lb = layout_of(&b, 1);
        simak_detess_plan *pa = NULL, *pb = NULL;
        size_t ca = 0, cb = 0, k, bad = 0;
        buffer ofm, out;
        unsigned char v[4];
        CHECK(simak_detess_plan_new(&ta, &ta, &la, &pa, &err) == 0, "head a plan");
        CHECK(simak_detess_plan_new(&tb, &tb, &lb, &pb, &err) == 0, "head b plan");
        oracle_mla_fill(&a, 11, PAD, NULL, &ca);
        oracle_mla_fill(&b, 12, PAD, NULL, &cb);
        memset(h, 0, sizeof h);
        h[0].span = simak_detess_plan_input_capacity(pa);
        h[1].span = simak_detess_plan_input_capacity(pb);
        CHECK(h[0].span == ca && h[1].span == cb, "head spans");
        code = simak_place_heads(ca + cb, h, 2, off, 2, &err);
        CHECK_CODE(code, 0u, err);
        ofm = buffer_new(ca + cb, PAD);
        oracle_mla_fill(&a, 11, PAD, ofm.p + off[0], &ca);
        oracle_mla_fill(&b, 12, PAD, ofm.p + off[1], &cb);
        out = buffer_new(240, MARK);
        code = simak_detess_execute(pb, ofm.p + off[1], (size_t)(ca + cb - off[1]), out.p, 20,
                                    &err);
        CHECK_CODE(code, 0u, err);
        for (k = 0; k < 20; ++k) {
            oracle_value_bytes(12, 0, k / 10, k / 5 % 2, k % 5, 1, v);
            bad += out.p[k] != v[0];
        }
        code = simak_detess_execute(pa, ofm.p + off[0], (size_t)(ca + cb), out.p, 240, &err);
        CHECK_CODE(code, 0u, err);
        for (k = 0; k < 240; ++k) {
            oracle_value_bytes(11, 0, k / 80, k / 20 % 4, k % 20, 1, v);
            bad += out.p[k] != v[0];
        }
        CHECK(bad == 0, "two heads: %zu bytes differ", bad);
        simak_detess_plan_free(pa);
        simak_detess_plan_free(pb);
        free(ofm.base);
        free(out.base);
    }
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    int k;
    for (k = 7; k >= 0; --k) v = v << 8 | p[k];
    return v;
}

/* The Detess-family EV74 descriptors (docs/contract.md §7): a DetessDequant head of INT16
 * [W=3, C=17] in PadTo16, tiles of 2 pixels by 16 channels, to FP32, multiplier 0.5, zero
 * point -3: its fields by hand from the table, the lengths of every write, the tiled
 * input's alignment, validation and decoding. */
static void ev74_descriptors(void) {
    simak_tensor in, out;
    simak_mla_tiled_v2 l = simak_mla_tiled_v2_default();
    simak_dequant_params p = simak_dequant_params_default(0.5f);
    simak_detessdequant_plan *plan = NULL;
    simak_error err;
    simak_ev74_detess_fields f;
    unsigned char packet[SIMAK_EV74_DETESS_DESCRIPTOR_SIZE + 8], bound[SIMAK_EV74_DETESS_DESCRIPTOR_SIZE];
    uint32_t code;
    memset(&in, 0, sizeof in);
    in.rank = 2;
    in.extents[0] = 3;
    in.extents[1] = 17;
    in.dtype = SIMAK_DTYPE_I16;
    out = in;
    out.dtype = SIMAK_DTYPE_F32;
    l.axes[0] = -1;
    l.axes[1] = -1;
    l.axes[2] = 0;
    l.axes[3] = 1;
    l.tile[0] = 1;
    l.tile[1] = 1;
    l.tile[2] = 2;
    l.tile[3] = 16;
    l.channels = SIMAK_CHANNELS_PAD_TO_16;
    l.tile_align = 16;
    p.zero_point = -3;
    code = simak_detessdequant_plan_new(&in, &out, &l, &p, &plan, &err);
    CHECK_CODE(code, 0u, err);
    if (code != 0) return;

    /* One byte short: 0x609, nothing written. */
    memset(packet, MARK, sizeof packet);
    code = simak_ev74_detessdequant_encode_relocatable(plan, packet, 223, &err);
    CHECK_CODE(code, 0x609u, err);
    CHECK(untouched(packet, sizeof packet), "a refused encode writes nothing");
    code = simak_ev74_detessdequant_encode_relocatable(plan, packet, sizeof packet, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(memcmp(packet, "SKDQ", 4) == 0 && packet[6] == 224 && packet[7] == 0, "magic, length");
    CHECK(packet[8] == SIMAK_DTYPE_F32 && packet[164] == SIMAK_DTYPE_I16, "dtypes");
    CHECK(packet[16] == 1, "flags: align_c16 (PadTo16)");
    /* 2 pixels × 32 stored channels × 2 bytes + 1 × 32 × 2 = 192; the output 51 × 4. */
    CHECK(le64(packet + 48) == 192 && le64(packet + 56) == 204, "spans %llu %llu",
          (unsigned long long)le64(packet + 48), (unsigned long long)le64(packet + 56));
    CHECK(le64(packet + 112) == 68 && le64(packet + 120) == 4, "output strides");
    CHECK(packet[216] == 0 && packet[219] == 0x3f && packet[220] == 0xfd && packet[223] == 0xff,
          "multiplier 0.5, zero point -3");
    CHECK(untouched(packet + 224, 8), "exactly 224 bytes written");

    /* Bind: the tiled input at tile alignment 16 needs 16-byte addresses (36). */
    code = simak_ev74_detessdequant_bind(plan, packet, 0x1008, 192, 0x2000, 204, bound,
                                         sizeof bound, &err);
    CHECK_CODE(code, 36u, err);
    code = simak_ev74_detessdequant_bind(plan, packet, 0x1000, 192, 0x2000, 204, bound, 100, &err);
    CHECK_CODE(code, 0x609u, err);
    code = simak_ev74_detessdequant_bind(plan, packet, 0x1000, 191, 0x2000, 204, bound,
                                         sizeof bound, &err);
    CHECK_CODE(code, 0x311u, err);
    code = simak_ev74_detessdequant_bind(plan, packet, 0x1000, 192, 0x2000, 204, bound,
                                         sizeof bound, &err);
    CHECK_CODE(code, 0u, err);
    code = simak_ev74_detessdequant_validate(bound, sizeof bound, &err);
    CHECK_CODE(code, 0u, err);
    /* Another entry's decoder refuses it by its magic word (2). */
    code = simak_ev74_detess_validate(bound, sizeof bound, &err);
    CHECK_CODE(code, 2u, err);
    code = simak_ev74_detessdequant_decode(bound, sizeof bound, &f, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(f.conversion == 2 && f.input_dtype == SIMAK_DTYPE_I16 && f.output_dtype == SIMAK_DTYPE_F32,
          "conversion %u", f.conversion);
    CHECK(f.input_address == 0x1000 && f.output_address == 0x2000 && f.rank == 2, "addresses");
    CHECK(f.channels == SIMAK_CHANNELS_PAD_TO_16 && f.tile_align == 16 && f.tile[3] == 16 &&
              f.tile_counts[2] == 2 && f.tile_counts[3] == 2 && f.axes[0] == -1 && f.axes[3] == 1,
          "layout");
    CHECK(f.multiplier_bits == 0x3f000000u && f.zero_point == -3 && f.bytes_per_outer == 192,
          "parameters");
    /* INT16's zero points end at -32768 (57). */
    bound[222] = 0x00;
    code = simak_ev74_detessdequant_validate(bound, sizeof bound, &err);
    CHECK_CODE(code, 57u, err);
    simak_detessdequant_plan_free(plan);
}

void output_side_tests(int *passed, int *failed) {
    n_passed = passed;
    n_failed = failed;
    fixtures();
    sweep();
    bf16_c16_pixel();
    dequant_spot_values();
    dequant_under_ftz();
    errors();
    heads();
    ev74_descriptors();
}
