/*
 * Preproc through the C ABI (SPEC §13), run by capi_test's main: 8-bit frames whose planes
 * live in one buffer at byte offsets with their own row strides.
 *
 * Oracles, independent of simak: the RGB of the NV12 and I420 frames of tests/data/yuv as
 * OpenCV's cv2.cvtColor decoded them (committed bytes); the §13 normalization written here,
 * n = ((float)p / divisor - mean) / std in binary32 (C float arithmetic, FLT_EVAL_METHOD 0);
 * oracle_quant and oracle_bf16 of oracle.h; oracle_tiled_2d for a one-row frame, whose
 * [1, W, C] MlaTiled layout (axes -1, 0, 1, 2; tile 1, 1, tw, C) is the 2-D [W, C] one.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simak/simak.h>

#include "oracle.h"
#include "preproc.h"

static int *passed_, *failed_;

#define CHECK_PASSED (*passed_)
#define CHECK_FAILED (*failed_)
#include "check.h"

static unsigned char *read_data(const char *dir, const char *name, size_t *len) {
    char path[1024];
    unsigned char *bytes;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    bytes = oracle_read_file(path, len);
    if (!bytes) {
        printf("cannot read %s\n", path);
        exit(2);
    }
    return bytes;
}

static float norm(unsigned char p, float divisor, float mean, float std) {
    float a = (float)p / divisor;
    float b = a - mean;
    return b / std;
}

static uint32_t bits_of(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

/* NV12 and I420 frames, packed (OpenCV's single array) and re-laid with wide row strides
 * and planes in another order in one buffer: OpenCV's RGB bytes (divisor 1: n = p), and
 * with BGR order and per-channel mean/std the §13 formula on them. */
static void yuv_frames(const char *dir) {
    const char *names[2] = {"nv12", "i420"};
    uint32_t formats[2] = {SIMAK_PREPROC_NV12, SIMAK_PREPROC_I420};
    int k;
    for (k = 0; k < 2; ++k) {
        char file[64];
        size_t yuv_len = 0, rgb_len = 0, i;
        unsigned char *yuv, *rgb;
        simak_preproc_frame frame;
        simak_preproc_params params = simak_preproc_params_default();
        simak_preproc_output out;
        simak_preproc_plan *plan = NULL;
        simak_error err;
        float *values;
        uint32_t code;
        int ok;
        snprintf(file, sizeof file, "yuv/%s.yuv", names[k]);
        yuv = read_data(dir, file, &yuv_len);
        snprintf(file, sizeof file, "yuv/%s.rgb", names[k]);
        rgb = read_data(dir, file, &rgb_len);
        CHECK(yuv_len == 240 && rgb_len == 480, "%s sizes %zu %zu", names[k], yuv_len, rgb_len);

        memset(&out, 0, sizeof out);
        out.kind = SIMAK_PREPROC_TO_F32;
        params.divisor = 1.0f;
        frame = simak_preproc_frame_packed(formats[k], 10, 16);
        code = simak_preproc_plan_new(&frame, &params, &out, &plan, &err);
        CHECK_CODE(code, 0u, err);
        CHECK(simak_preproc_plan_input_span(plan) == 240, "input span");
        CHECK(simak_preproc_plan_output_span(plan) == 480 * 4, "output span");
        values = (float *)malloc(480 * 4);
        code = simak_preproc_execute(plan, yuv, yuv_len, values, 480 * 4, &err);
        CHECK_CODE(code, 0u, err);
        ok = 1;
        for (i = 0; i < 480; ++i) ok &= values[i] == (float)rgb[i];
        CHECK(ok, "%s packed equals OpenCV", names[k]);
        simak_preproc_plan_free(plan);

        /* The same frame with rows of 20 bytes (Y), 24 (chroma), chroma planes first. */
        {
            size_t y_rows = 10, c_rows = 5, c_bytes = k == 0 ? 16 : 8, r;
            size_t buf_len = 3 * 5 * 24 + 10 * 20 + 7;
            unsigned char *buf = (unsigned char *)calloc(buf_len, 1);
            const unsigned char *src_c1 = yuv + 160, *src_c2 = yuv + 200;
            float mean[3] = {0.406f, 0.456f, 0.485f}, stdv[3] = {0.225f, 0.224f, 0.229f};
            frame.planes[1].offset = 3;
            frame.planes[1].row_stride = 24;
            frame.planes[2].offset = 3 + 5 * 24;
            frame.planes[2].row_stride = 24;
            frame.planes[0].offset = 3 + (k == 0 ? 1 : 2) * 5 * 24;
            frame.planes[0].row_stride = 20;
            for (r = 0; r < y_rows; ++r) {
                memcpy(buf + frame.planes[0].offset + r * 20, yuv + r * 16, 16);
            }
            for (r = 0; r < c_rows; ++r) {
                memcpy(buf + 3 + r * 24, src_c1 + r * c_bytes, c_bytes);
                if (k == 1) memcpy(buf + 3 + 5 * 24 + r * 24, src_c2 + r * c_bytes, c_bytes);
            }
            params.divisor = 255.0f;
            params.mean_count = 3;
            params.std_count = 3;
            memcpy(params.mean, mean, sizeof mean);
            memcpy(params.std, stdv, sizeof stdv);
            params.bgr = 1;
            code = simak_preproc_plan_new(&frame, &params, &out, &plan, &err);
            CHECK_CODE(code, 0u, err);
            code = simak_preproc_execute(plan, buf, buf_len, values, 480 * 4, &err);
            CHECK_CODE(code, 0u, err);
            ok = 1;
            for (i = 0; i < 480; ++i) {
                size_t c = i % 3;
                unsigned char p = rgb[i - c + (2 - c)]; /* B, G, R from R, G, B */
                ok &= bits_of(values[i]) == bits_of(norm(p, 255.0f, mean[c], stdv[c]));
            }
            CHECK(ok, "%s strided, BGR, mean/std", names[k]);
            simak_preproc_plan_free(plan);
            free(buf);
        }
        free(values);
        free(yuv);
        free(rgb);
    }
}

/* A 4 x 5 RGB frame with a border to strided INT8 (rank 3, strides given), each rounding
 * mode: oracle_quant of the formula. */
static void rgb_to_i8(void) {
    enum { H = 4, W = 5, T = 1, B = 2, L = 0, R = 3, OH = T + H + B, OW = L + W + R };
    unsigned char frame_bytes[H * W * 3];
    int8_t out[OH * OW * 3 + 16];
    uint64_t strides[3] = {OW * 3, 3, 1};
    simak_preproc_frame frame = simak_preproc_frame_packed(SIMAK_PREPROC_RGB8, H, W);
    simak_preproc_params params = simak_preproc_params_default();
    simak_preproc_output o;
    int rounding, i;
    for (i = 0; i < H * W * 3; ++i) frame_bytes[i] = (unsigned char)(i * 53 + 11);
    memset(&o, 0, sizeof o);
    o.kind = SIMAK_PREPROC_TO_I8;
    o.strides = strides;
    o.strides_count = 3;
    params.mean[0] = 0.5f;
    params.std[0] = 0.25f;
    params.border_top = T;
    params.border_bottom = B;
    params.border_left = L;
    params.border_right = R;
    params.pad_value[0] = 114;
    params.pad_value[1] = 0;
    params.pad_value[2] = 255;
    params.pad_count = 3;
    for (rounding = 0; rounding < 4; ++rounding) {
        simak_preproc_plan *plan = NULL;
        simak_error err;
        uint64_t extents[4] = {0, 0, 0, 0};
        uint32_t rank = 0, code;
        int ok = 1, y, x, c;
        o.params = simak_quant_params_default(37.0f);
        o.params.zero_point = -4;
        o.params.rounding = (uint32_t)rounding;
        code = simak_preproc_plan_new(&frame, &params, &o, &plan, &err);
        CHECK_CODE(code, 0u, err);
        code = simak_preproc_plan_output_extents(plan, extents, 4, &rank, &err);
        CHECK_CODE(code, 0u, err);
        CHECK(rank == 3 && extents[0] == OH && extents[1] == OW && extents[2] == 3, "extents");
        CHECK(simak_preproc_plan_output_dtype(plan) == SIMAK_DTYPE_I8, "dtype");
        memset(out, 0x5a, sizeof out);
        code = simak_preproc_execute(plan, frame_bytes, sizeof frame_bytes, out, OH * OW * 3,
                                     &err);
        CHECK_CODE(code, 0u, err);
        for (y = 0; y < OH; ++y) {
            for (x = 0; x < OW; ++x) {
                for (c = 0; c < 3; ++c) {
                    int inside = y >= T && y < T + H && x >= L && x < L + W;
                    unsigned char p = inside ? frame_bytes[((y - T) * W + x - L) * 3 + c]
                                             : params.pad_value[c];
                    float n = norm(p, 255.0f, 0.5f, 0.25f);
                    ok &= out[(y * OW + x) * 3 + c] ==
                          oracle_quant((double)n, 37.0f, -4, rounding);
                }
            }
        }
        CHECK(ok, "rgb -> i8, rounding %d", rounding);
        CHECK(out[OH * OW * 3] == 0x5a, "nothing past the span");
        simak_preproc_plan_free(plan);
    }
}

typedef struct {
    const float *n;
    int bf16;
    float multiplier;
} tiled_ctx;

static void tiled_value(const void *ctx, size_t w, size_t c, unsigned char *bytes) {
    const tiled_ctx *t = (const tiled_ctx *)ctx;
    float n = t->n[w * 3 + c];
    if (t->bf16) {
        uint16_t b = oracle_bf16((double)n);
        bytes[0] = (unsigned char)(b & 0xff);
        bytes[1] = (unsigned char)(b >> 8);
    } else {
        bytes[0] = (unsigned char)oracle_quant((double)n, t->multiplier, 0, 1);
        bytes[1] = 0;
    }
}

/* A one-row BGRX frame of 37 pixels to CastTess and QuantTess (tile 1, 1, 8, 3; pad16 for
 * QuantTess): every byte of the buffer, padding included. */
static void bgrx_to_tiled(void) {
    enum { W = 37 };
    unsigned char frame_bytes[W * 4];
    float n[W * 3];
    simak_preproc_frame frame = simak_preproc_frame_packed(SIMAK_PREPROC_BGRX8, 1, W);
    simak_preproc_params params = simak_preproc_params_default();
    simak_preproc_output o;
    int i, pass;
    for (i = 0; i < W * 4; ++i) frame_bytes[i] = (unsigned char)(i * 97 + 5);
    params.divisor = 64.0f;
    params.mean[0] = 1.0f;
    params.std[0] = 0.75f;
    for (i = 0; i < W * 3; ++i) {
        int px = i / 3, c = i % 3;
        n[i] = norm(frame_bytes[px * 4 + (2 - c)], 64.0f, 1.0f, 0.75f);
    }
    for (pass = 0; pass < 2; ++pass) {
        tiled_ctx ctx;
        size_t len = 0;
        unsigned char *expect, *buf;
        simak_preproc_plan *plan = NULL;
        simak_error err;
        uint32_t code;
        void *raw;
        memset(&o, 0, sizeof o);
        o.kind = pass == 0 ? SIMAK_PREPROC_TO_CASTTESS : SIMAK_PREPROC_TO_QUANTTESS;
        o.params = simak_quant_params_default(20.0f);
        o.layout = simak_mla_tiled_default();
        o.layout.axes[0] = -1;
        o.layout.axes[1] = 0;
        o.layout.axes[2] = 1;
        o.layout.axes[3] = 2;
        o.layout.tile[0] = 1;
        o.layout.tile[1] = 1;
        o.layout.tile[2] = 8;
        o.layout.tile[3] = 3;
        o.layout.pad_to_16 = pass == 1;
        ctx.n = n;
        ctx.bf16 = pass == 0;
        ctx.multiplier = 20.0f;
        expect = oracle_tiled_2d(W, 3, 8, 3, pass == 1, pass == 0 ? 2 : 1, tiled_value, &ctx,
                                 &len);
        code = simak_preproc_plan_new(&frame, &params, &o, &plan, &err);
        CHECK_CODE(code, 0u, err);
        CHECK(simak_preproc_plan_output_span(plan) == len, "capacity %llu, oracle %zu",
              (unsigned long long)simak_preproc_plan_output_span(plan), len);
        raw = malloc(len + 32);
        if (!raw) exit(2);
        /* The first 16-byte-aligned byte of the allocation. */
        buf = (unsigned char *)raw + ((16 - (uintptr_t)raw % 16) % 16);
        memset(buf, 0xee, len + 16);
        code = simak_preproc_execute(plan, frame_bytes, sizeof frame_bytes, buf, len, &err);
        CHECK_CODE(code, 0u, err);
        CHECK(memcmp(buf, expect, len) == 0, "bgrx -> %s bytes", pass == 0 ? "casttess" : "quanttess");
        CHECK(buf[len] == 0xee, "nothing past the capacity");
        simak_preproc_plan_free(plan);
        free(raw);
        free(expect);
    }
}

/* Admission and execute errors: each code, nothing written. */
static void preproc_errors(void) {
    unsigned char in[2 * 4 * 3];
    float out[2 * 4 * 3 + 4];
    simak_preproc_frame frame = simak_preproc_frame_packed(SIMAK_PREPROC_RGB8, 2, 4);
    simak_preproc_params params = simak_preproc_params_default();
    simak_preproc_output o;
    simak_preproc_plan *plan = (simak_preproc_plan *)&frame; /* set to NULL on failure */
    simak_error err;
    uint32_t code;
    uint64_t extents[4];
    uint32_t rank = 99;
    size_t i;
    int untouched;
    memset(in, 7, sizeof in);
    memset(&o, 0, sizeof o);
    o.kind = SIMAK_PREPROC_TO_F32;

#define ADMIT(want, what)                                                     \
    do {                                                                      \
        code = simak_preproc_plan_new(&frame, &params, &o, &plan, &err);      \
        CHECK_CODE(code, (uint32_t)(want), err);                              \
        CHECK(plan == NULL, "%s: no plan", what);                             \
        frame = simak_preproc_frame_packed(SIMAK_PREPROC_RGB8, 2, 4);         \
        params = simak_preproc_params_default();                              \
        memset(&o, 0, sizeof o);                                              \
        o.kind = SIMAK_PREPROC_TO_F32;                                        \
    } while (0)

    code = simak_preproc_plan_new(NULL, &params, &o, &plan, &err);
    CHECK_CODE(code, 0x603u, err);
    code = simak_preproc_plan_new(&frame, NULL, &o, &plan, &err);
    CHECK_CODE(code, 0x603u, err);
    code = simak_preproc_plan_new(&frame, &params, NULL, &plan, &err);
    CHECK_CODE(code, 0x603u, err);
    code = simak_preproc_plan_new(&frame, &params, &o, NULL, &err);
    CHECK_CODE(code, 0x603u, err);

    frame = simak_preproc_frame_packed(SIMAK_PREPROC_NV12, 3, 4);
    ADMIT(0x240, "odd NV12");
    frame.planes[0].row_stride = 11;
    ADMIT(0x241, "short row stride");
    frame = simak_preproc_frame_packed(SIMAK_PREPROC_I420, 4, 4);
    frame.planes[2].offset = frame.planes[1].offset + 2;
    ADMIT(0x242, "overlapping planes");
    frame.has_batch = 1;
    frame.batch = 2;
    frame.frame_stride = 10;
    ADMIT(0x243, "short frame stride");
    params.mean[0] = NAN;
    ADMIT(0x244, "NaN mean");
    params.divisor = 0.0f;
    ADMIT(0x245, "zero divisor");
    params.std[0] = -0.0f;
    ADMIT(0x246, "zero std");
    params.mean_count = 2;
    ADMIT(0x247, "two means");
    params.pad_count = 4;
    ADMIT(0x247, "four pad values");
    o.kind = SIMAK_PREPROC_TO_I8; /* zero-filled params: multiplier 0 */
    ADMIT(14, "INT8 without a multiplier");
    o.kind = 9;
    ADMIT(0x601, "unknown output kind");
    frame.format = 7;
    ADMIT(0x601, "unknown format");
    frame.has_batch = 2;
    ADMIT(0x601, "has_batch 2");
    params.bgr = 3;
    ADMIT(0x601, "bgr 3");
    o.strides_count = 2;
    {
        uint64_t s[2] = {12, 3};
        o.strides = s;
        ADMIT(0x206, "two strides for rank 3");
    }
    {
        uint64_t s[3] = {48, 12, 4};
        o.kind = SIMAK_PREPROC_TO_CASTTESS;
        o.layout = simak_mla_tiled_default();
        o.strides = s;
        o.strides_count = 3;
        ADMIT(0x206, "strides on a tiled output");
    }

    /* Execute: NULL and short buffers refused before any write. */
    code = simak_preproc_plan_new(&frame, &params, &o, &plan, &err);
    CHECK_CODE(code, 0u, err);
    memset(out, 0x33, sizeof out);
    code = simak_preproc_execute(plan, NULL, sizeof in, out, sizeof out, &err);
    CHECK_CODE(code, 0x409u, err);
    code = simak_preproc_execute(plan, in, sizeof in, NULL, sizeof out, &err);
    CHECK_CODE(code, 0x40au, err);
    code = simak_preproc_execute(plan, in, sizeof in - 1, out, sizeof out, &err);
    CHECK_CODE(code, 0x401u, err);
    code = simak_preproc_execute(plan, in, sizeof in, out, 2 * 4 * 3 * 4 - 1, &err);
    CHECK_CODE(code, 0x402u, err);
    code = simak_preproc_execute(NULL, in, sizeof in, out, sizeof out, &err);
    CHECK_CODE(code, 0x603u, err);
    untouched = 1;
    for (i = 0; i < sizeof out; ++i) untouched &= ((unsigned char *)out)[i] == 0x33;
    CHECK(untouched, "refused calls write nothing");
    code = simak_preproc_plan_output_extents(plan, extents, 2, &rank, &err);
    CHECK_CODE(code, 0x609u, err);
    CHECK(rank == 99, "short extents: rank not written");
    code = simak_preproc_plan_output_extents(plan, NULL, 4, &rank, &err);
    CHECK_CODE(code, 0x603u, err);
    code = simak_preproc_execute(plan, in, sizeof in, out, sizeof out, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(out[0] == 7.0f / 255.0f, "7 / 255");
    CHECK(simak_preproc_plan_implementation(plan) != NULL, "implementation");
    {
        simak_preproc_plan *shared = simak_preproc_plan_clone(plan);
        simak_preproc_plan_free(plan);
        CHECK(simak_preproc_plan_input_span(shared) == sizeof in, "shared plan lives on");
        simak_preproc_plan_free(shared);
    }
    CHECK(simak_preproc_plan_input_span(NULL) == 0, "NULL plan");
#undef ADMIT
}

/* Reads the little-endian u64 at byte `at` of `p`. */
static uint64_t le64(const unsigned char *p, size_t at) {
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; --i) v = (v << 8) | p[at + (size_t)i];
    return v;
}

/* The EV74 Preproc v1 descriptor (docs/contract.md §7): a 4x6 NV12 frame with a border,
 * BGR, per-channel mean and std, to INT8 [5, 8, 3]; the offsets and values are the
 * contract's table, written out here. */
static void ev74_descriptor(void) {
    simak_preproc_frame frame = simak_preproc_frame_packed(SIMAK_PREPROC_NV12, 4, 6);
    simak_preproc_params params = simak_preproc_params_default();
    simak_preproc_output o;
    simak_preproc_plan *plan = NULL;
    simak_ev74_preproc_fields f;
    simak_error err;
    unsigned char packet[SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE + 8];
    unsigned char bound[SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE];
    uint32_t code;
    memset(&o, 0, sizeof o);
    o.kind = SIMAK_PREPROC_TO_I8;
    o.params = simak_quant_params_default(0.0078125f);
    o.params.zero_point = -3;
    params.bgr = 1;
    params.mean[0] = 0.5f;
    params.mean[1] = 0.25f;
    params.mean[2] = 0.125f;
    params.mean_count = 3;
    params.std[0] = 0.5f;
    params.std[1] = 1.0f;
    params.std[2] = 2.0f;
    params.std_count = 3;
    params.border_top = 1;
    params.border_right = 2;
    params.pad_value[0] = 114;
    params.pad_value[1] = 115;
    params.pad_value[2] = 116;
    params.pad_count = 3;
    code = simak_preproc_plan_new(&frame, &params, &o, &plan, &err);
    CHECK_CODE(code, 0u, err);
    memset(packet, 0xee, sizeof packet);
    code = simak_ev74_preproc_encode_relocatable(plan, packet, SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE - 1,
                                                 &err);
    CHECK_CODE(code, 0x609u, err);
    CHECK(packet[0] == 0xee, "nothing written into a short buffer");
    code = simak_ev74_preproc_encode_relocatable(plan, packet, sizeof packet, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(memcmp(packet, "SKPP", 4) == 0 && packet[6] == 0x70 && packet[7] == 0x01, "magic, size");
    CHECK(packet[8] == 5 && packet[12] == 3 && packet[16] == 1, "INT8, rank 3, bgr");
    CHECK(le64(packet, 40) == 120 && le64(packet, 48) == 36 && le64(packet, 56) == 120, "spans");
    CHECK(le64(packet, 112) == 24 && le64(packet, 120) == 3 && le64(packet, 128) == 1, "strides");
    CHECK(packet[164] == 6 && packet[212] == 2, "NV12, INT8 strided");
    CHECK(le64(packet, 216) == 4 && le64(packet, 224) == 6 && le64(packet, 240) == 24, "frame");
    CHECK(le64(packet, 288) == 1 && le64(packet, 312) == 2, "border");
    CHECK(packet[320] == 114 && packet[322] == 116 && packet[323] == 0, "pad values");
    CHECK(packet[356] == 0xfd && packet[360] == 1, "zero point, rounding");
    CHECK(packet[SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE] == 0xee, "nothing past 368 bytes");
    code = simak_ev74_preproc_decode(packet, SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE, &f, &err);
    CHECK_CODE(code, 0u, err);
    CHECK(f.format == SIMAK_PREPROC_NV12 && f.to == SIMAK_PREPROC_TO_I8 && f.bgr == 1, "fields");
    CHECK(f.plane_offsets[1] == 24 && f.row_strides[0] == 6 && f.border[3] == 2, "frame fields");
    CHECK(f.mean_bits[2] == 0x3e000000u && f.std_bits[2] == 0x40000000u, "normalization");
    CHECK(f.multiplier_bits == 0x3c000000u && f.zero_point == -3 && f.rounding == 1, "quant");
    /* The frame binds at any byte. */
    code = simak_ev74_preproc_bind(plan, packet, 0x1003, 36, 0x2001, 120, bound, sizeof bound,
                                   &err);
    CHECK_CODE(code, 0u, err);
    CHECK(le64(bound, 24) == 0x1003 && le64(bound, 32) == 0x2001, "bound addresses");
    code = simak_ev74_preproc_validate(bound, sizeof bound, &err);
    CHECK_CODE(code, 0u, err);
    code = simak_ev74_preproc_validate(packet, SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE, &err);
    CHECK_CODE(code, 38u, err);
    code = simak_ev74_preproc_bind(plan, packet, 0x1000, 35, 0x2000, 120, bound, sizeof bound,
                                   &err);
    CHECK_CODE(code, 0x311u, err);
    /* A 6-row frame under a 5-row output: the device's rule 89. */
    packet[216] = 6;
    code = simak_ev74_preproc_validate(packet, SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE, &err);
    CHECK_CODE(code, 89u, err);
    simak_preproc_plan_free(plan);
    {
        /* SPEC §13's default roles, for a frame and for a batch. */
        simak_mla_tiled one = simak_preproc_layout_default(0);
        simak_mla_tiled batch = simak_preproc_layout_default(2);
        CHECK(one.axes[0] == -1 && one.axes[1] == 0 && one.axes[2] == 1 && one.axes[3] == 2 &&
                  one.tile[3] == 1 && one.pad_to_16 == 0,
              "default layout");
        CHECK(batch.axes[0] == -1 && batch.axes[1] == 1 && batch.axes[3] == 3,
              "default batch layout");
    }
}

void preproc_tests(const char *data_dir, int *passed, int *failed) {
    passed_ = passed;
    failed_ = failed;
    yuv_frames(data_dir);
    rgb_to_i8();
    bgrx_to_tiled();
    preproc_errors();
    ev74_descriptor();
}
