/*
 * A model from its manifest through the C ABI (SPEC §14), run by capi_test's main.
 *
 * Expectations are written here by hand from the manifests (the stages, their shapes,
 * sizes, offsets and parameters). Oracles, independent of simak: oracle_quant (SPEC §3) for
 * an input stage, oracle_mla_fill (the MLA's tiled bytes of SPEC §12.1) and oracle_dequant
 * (SPEC §12.2) for the heads of an OFM. Every refusal is checked for its code and for leaving
 * the outputs untouched.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simak/simak.h>

#include "fp_env.h"
#include "model.h"
#include "oracle.h"

static int *passed_, *failed_;

#define CHECK_PASSED (*passed_)
#define CHECK_FAILED (*failed_)
#include "check.h"

/* A buffer whose data starts 16-byte aligned (`base` is what to free). */
typedef struct buffer {
    unsigned char *base, *data;
    size_t bytes;
} buffer;

static buffer buffer_new(size_t n, unsigned char fill) {
    buffer b;
    b.base = (unsigned char *)malloc(n + 32);
    b.data = b.base + (16 - (uintptr_t)b.base % 16) % 16;
    b.bytes = n;
    memset(b.base, fill, n + 32);
    return b;
}

static int all_equal(const unsigned char *p, size_t n, unsigned char v) {
    size_t i;
    for (i = 0; i < n; ++i)
        if (p[i] != v) return 0;
    return 1;
}

/* A deterministic byte stream (xorshift32). */
static uint32_t next(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* The value of parameter `name` of `stage`, or NULL. */
static const char *param(const simak_model_stage *stage, const char *name) {
    size_t k;
    for (k = 0; k < stage->param_count; ++k)
        if (strcmp(stage->param_names[k], name) == 0) return stage->param_values[k];
    return NULL;
}

static int param_is(const simak_model_stage *stage, const char *name, const char *value) {
    const char *v = param(stage, name);
    return v != NULL && strcmp(v, value) == 0;
}

static simak_model *open_fixture(const char *dir, const char *name, simak_error *error,
                                 uint32_t *code) {
    char path[1024];
    simak_model *model = NULL;
    snprintf(path, sizeof path, "%s/mpk/%s", dir, name);
    *code = simak_model_from_mpk(path, 0, &model, error);
    return model;
}

/* tests/data/mpk/classifier.mpk.json: a batch-2 float tensor [2, 8, 8, 3] → Quant
 * (multiplier 0.5, zero point 3, nearest even) → IFM of 384 bytes; an INT8 Compact OFM of
 * 20 bytes (tile [1, 1, 10], alignment 1) → DetessDequant (multiplier 12.75, zero point -5)
 * → FP32 [2, 1, 1, 10]. */
static void classifier(const char *dir) {
    simak_error error;
    uint32_t code = 0, seed = 12345;
    simak_model *model = open_fixture(dir, "classifier.mpk.json", &error, &code);
    simak_model_stage in, out;
    buffer frame, ifm, ifm2, ofm, probs;
    size_t i;
    int same = 1;
    CHECK_CODE(code, 0u, error);
    if (!model) return;
    CHECK(strcmp(simak_model_name(model), "classifier-batch-2") == 0, "name %s",
          simak_model_name(model));
    CHECK(simak_model_batch(model) == 2, "batch %llu",
          (unsigned long long)simak_model_batch(model));
    CHECK(simak_model_ifm_size(model) == 384 && simak_model_ofm_size(model) == 20,
          "IFM %llu, OFM %llu", (unsigned long long)simak_model_ifm_size(model),
          (unsigned long long)simak_model_ofm_size(model));
    CHECK(simak_model_input_count(model) == 1 && simak_model_output_count(model) == 1,
          "%zu inputs, %zu outputs", simak_model_input_count(model),
          simak_model_output_count(model));

    code = simak_model_input(model, 0, &in, &error);
    CHECK_CODE(code, 0u, error);
    CHECK(strcmp(in.name, "pixels") == 0 && strcmp(in.op, "quant") == 0, "%s %s", in.name,
          in.op);
    CHECK(in.rank == 4 && in.shape[0] == 2 && in.shape[1] == 8 && in.shape[2] == 8 &&
              in.shape[3] == 3 && in.shape[4] == 0,
          "rank %u", in.rank);
    CHECK(in.dtype == SIMAK_DTYPE_F32 && in.size == 384 && in.offset == 0 &&
              in.input_bytes == 1536 && in.output_bytes == 384 && in.ev74 == 1,
          "dtype %u size %llu", in.dtype, (unsigned long long)in.size);
    CHECK(in.plugin_count == 1 && strcmp(in.plugins[0], "quant_0") == 0, "%zu plugins",
          in.plugin_count);
    CHECK(param_is(&in, "multiplier", "0.5") && param_is(&in, "zero_point", "3") &&
              param_is(&in, "rounding", "nearest-even"),
          "quant params");
    CHECK(in.rule_count == 1 && strstr(in.rules[0], "in_dtype") != NULL, "%zu rules",
          in.rule_count);

    code = simak_model_output(model, 0, &out, &error);
    CHECK_CODE(code, 0u, error);
    CHECK(strcmp(out.name, "probs") == 0 && strcmp(out.op, "detessdequant") == 0, "%s %s",
          out.name, out.op);
    CHECK(out.rank == 4 && out.shape[0] == 2 && out.shape[1] == 1 && out.shape[2] == 1 &&
              out.shape[3] == 10,
          "rank %u", out.rank);
    CHECK(out.dtype == SIMAK_DTYPE_F32 && out.size == 20 && out.offset == 0 &&
              out.input_bytes == 20 && out.output_bytes == 80 && out.ev74 == 1,
          "dtype %u", out.dtype);
    CHECK(out.plugin_count == 2 && strcmp(out.plugins[0], "detessdequant_0") == 0 &&
              strcmp(out.plugins[1], "dequant_0") == 0,
          "%zu plugins", out.plugin_count);
    CHECK(param_is(&out, "channels", "compact") && param_is(&out, "tile_align", "1") &&
              param_is(&out, "multiplier", "12.75") && param_is(&out, "zero_point", "-5"),
          "detessdequant params");

    /* An index past the stages: 0x70e, `stage` untouched. */
    memset(&in, 0xab, sizeof in);
    code = simak_model_input(model, 1, &in, &error);
    CHECK_CODE(code, 0x70eu, error);
    CHECK(all_equal((const unsigned char *)&in, sizeof in, 0xab), "stage written");
    code = simak_model_output(model, 0, NULL, &error);
    CHECK_CODE(code, 0x603u, error);

    /* preprocess: every byte is SPEC §3's, ties and saturation included. */
    frame = buffer_new(1536, 0);
    for (i = 0; i < 384; ++i) {
        float x;
        uint32_t r = next(&seed);
        if (i % 4 == 0) {
            x = (float)((int)(r % 801) - 400) / 2.0f; /* halves: product ties */
        } else {
            x = ((float)(r % 200001) - 100000.0f) / 97.0f;
        }
        memcpy(frame.data + 4 * i, &x, 4);
    }
    ifm = buffer_new(384, 0xee);
    code = simak_model_preprocess(model, 0, frame.data, 1536, ifm.data, 384, 1, &error);
    CHECK_CODE(code, 0u, error);
    for (i = 0; i < 384; ++i) {
        float x;
        memcpy(&x, frame.data + 4 * i, 4);
        if ((int8_t)ifm.data[i] != oracle_quant((double)x, 0.5f, 3, 1)) same = 0;
    }
    CHECK(same, "preprocess differs from SPEC §3");
    ifm2 = buffer_new(384, 0x11);
    code = simak_model_preprocess(model, 0, frame.data, 1536, ifm2.data, 384, 2, &error);
    CHECK_CODE(code, 0u, error);
    CHECK(memcmp(ifm.data, ifm2.data, 384) == 0, "two threads differ from one");

    /* Refusals before any write. */
    memset(ifm2.data, 0x5a, 384);
    code = simak_model_preprocess(model, 0, frame.data, 1535, ifm2.data, 384, 1, &error);
    CHECK_CODE(code, 0x70du, error);
    code = simak_model_preprocess(model, 0, frame.data, 1536, ifm2.data, 385, 1, &error);
    CHECK_CODE(code, 0x70du, error);
    code = simak_model_preprocess(model, 1, frame.data, 1536, ifm2.data, 384, 1, &error);
    CHECK_CODE(code, 0x70eu, error);
    code = simak_model_preprocess(model, 0, NULL, 1536, ifm2.data, 384, 1, &error);
    CHECK_CODE(code, 0x409u, error);
    code = simak_model_preprocess(model, 0, frame.data, 1536, NULL, 384, 1, &error);
    CHECK_CODE(code, 0x40au, error);
    code = simak_model_preprocess(model, 0, frame.data, 1536, frame.data + 100, 384, 1, &error);
    CHECK_CODE(code, 0x407u, error);
    code = simak_model_preprocess(NULL, 0, frame.data, 1536, ifm2.data, 384, 1, &error);
    CHECK_CODE(code, 0x603u, error);
    CHECK(all_equal(ifm2.data, 384, 0x5a), "a refused preprocess wrote the IFM");

    /* postprocess: every value is SPEC §12.2's of the OFM's codes (tile alignment 1, so the
     * 20 bytes are the two frames' 10 codes back to back). */
    ofm = buffer_new(20, 0);
    for (i = 0; i < 20; ++i) ofm.data[i] = (unsigned char)next(&seed);
    ofm.data[0] = 0x80; /* -128 */
    ofm.data[1] = 0x7f;
    ofm.data[2] = 0xfb; /* -5: the zero point, +0.0 */
    probs = buffer_new(80, 0xee);
    {
        void *outs[1];
        size_t bytes[1] = {80};
        outs[0] = probs.data;
        code = simak_model_postprocess(model, ofm.data, 20, outs, bytes, 1, 1, &error);
        CHECK_CODE(code, 0u, error);
        same = 1;
        for (i = 0; i < 20; ++i) {
            uint32_t want = oracle_dequant((int8_t)ofm.data[i], -5, 12.75f, ORACLE_F32), got;
            memcpy(&got, probs.data + 4 * i, 4);
            if (got != want) same = 0;
        }
        CHECK(same, "postprocess differs from SPEC §12.2");

        memset(probs.data, 0x5a, 80);
        code = simak_model_postprocess(model, ofm.data, 19, outs, bytes, 1, 1, &error);
        CHECK_CODE(code, 0x70du, error);
        code = simak_model_postprocess(model, ofm.data, 20, outs, bytes, 0, 1, &error);
        CHECK_CODE(code, 0x710u, error);
        bytes[0] = 79;
        code = simak_model_postprocess(model, ofm.data, 20, outs, bytes, 1, 1, &error);
        CHECK_CODE(code, 0x70du, error);
        bytes[0] = 80;
        code = simak_model_postprocess(model, ofm.data, 20, NULL, bytes, 1, 1, &error);
        CHECK_CODE(code, 0x603u, error);
        code = simak_model_postprocess(model, ofm.data, 20, outs, NULL, 1, 1, &error);
        CHECK_CODE(code, 0x603u, error);
        code = simak_model_postprocess(model, NULL, 20, outs, bytes, 1, 1, &error);
        CHECK_CODE(code, 0x409u, error);
        CHECK(all_equal(probs.data, 80, 0x5a), "a refused postprocess wrote the output");
        /* Outputs may be at any address: the same values one byte on. */
        outs[0] = probs.data + 1;
        code = simak_model_postprocess(model, ofm.data, 20, outs, bytes, 1, 1, &error);
        CHECK_CODE(code, 0u, error);
        same = 1;
        for (i = 0; i < 20; ++i) {
            uint32_t want = oracle_dequant((int8_t)ofm.data[i], -5, 12.75f, ORACLE_F32), got;
            memcpy(&got, probs.data + 1 + 4 * i, 4);
            if (got != want) same = 0;
        }
        CHECK(same, "postprocess into a misaligned output differs");
    }

    /* A shared handle outlives the first. */
    {
        simak_model *second = simak_model_clone(model);
        simak_model_free(model);
        CHECK(simak_model_output_count(second) == 1, "clone");
        simak_model_free(second);
    }
    free(frame.base);
    free(ifm.base);
    free(ifm2.base);
    free(ofm.base);
    free(probs.base);
}

/* A manifest written here with two INT8 CBlock16 heads of an `unpack_transform`, the sizes
 * taken from the oracle's layout: each head at the running sum of the spans before it,
 * read back against oracle_mla_fill and oracle_dequant; the two heads' outputs may be
 * anywhere, but never overlap. */
static void two_heads(void) {
    oracle_mla heads[2];
    size_t span[2], i, k, total;
    char json[4096];
    simak_error error;
    simak_model *model = NULL;
    simak_model_stage stage;
    uint32_t code;
    buffer ofm;
    const float scales[2] = {21.5f, 3.25f};
    const int32_t zps[2] = {-3, 7};
    heads[0].n = 1, heads[0].h = 6, heads[0].w = 5, heads[0].c = 20;
    heads[0].th = 4, heads[0].tw = 4, heads[0].tc = 20;
    heads[1].n = 1, heads[1].h = 3, heads[1].w = 3, heads[1].c = 7;
    heads[1].th = 2, heads[1].tw = 3, heads[1].tc = 7;
    for (k = 0; k < 2; ++k) {
        heads[k].channels = ORACLE_CBLOCK16;
        heads[k].align = 16;
        heads[k].e = 1;
        oracle_mla_fill(&heads[k], 0, 0, NULL, &span[k]);
    }
    total = span[0] + span[1];
    snprintf(json, sizeof json,
             "{\"name\": \"two-heads\", \"input_nodes\": [{\"name\": \"x\"}],"
             " \"output_nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
             " \"plugins\": ["
             "{\"name\": \"q\", \"sequence\": 1, \"kernel\": \"quantization_transform\","
             "  \"input_nodes\": [{\"name\": \"x\"}], \"output_nodes\": [{\"name\": \"ifm\"}],"
             "  \"params\": {\"input_shape\": [1, 4, 4, 3], \"q_scale\": 2.0, \"q_zp\": 0,"
             "  \"rounding\": \"RT_EVEN\"}},"
             "{\"name\": \"mla\", \"sequence\": 2, \"kernel\": \"MLA\","
             "  \"input_nodes\": [{\"name\": \"ifm\", \"size\": 48}],"
             "  \"output_nodes\": [{\"name\": \"ofm\", \"size\": %zu}]},"
             "{\"name\": \"unpack\", \"sequence\": 3, \"kernel\": \"unpack_transform\","
             "  \"input_nodes\": [{\"name\": \"ofm\"}],"
             "  \"output_nodes\": [{\"name\": \"h0\"}, {\"name\": \"h1\"}],"
             "  \"params\": {\"output_shapes\": [[1, %zu], [1, %zu]]}},"
             "{\"name\": \"dd\", \"sequence\": 4, \"kernel\": \"detessdequant\","
             "  \"input_nodes\": [{\"name\": \"h0\"}, {\"name\": \"h1\"}],"
             "  \"output_nodes\": [{\"name\": \"a\"}, {\"name\": \"b\"}],"
             "  \"params\": {\"in_dtype\": \"INT8\", \"out_dtype\": \"FP32\","
             "  \"output_shapes\": [[1, 6, 5, 20], [1, 3, 3, 7]],"
             "  \"slice_shape\": [[4, 4, 20], [2, 3, 7]], \"align_c16\": true, \"cblock\": true,"
             "  \"dq_scale\": [21.5, 3.25], \"dq_zp\": [-3, 7]}}]}",
             total, span[0], span[1]);
    code = simak_model_from_mpk_json(json, strlen(json), 0, &model, &error);
    CHECK_CODE(code, 0u, error);
    if (!model) return;
    code = simak_model_from_mpk_json(json, strlen(json), 0, NULL, &error);
    CHECK_CODE(code, 0x603u, error);
    CHECK(simak_model_ofm_size(model) == total, "OFM %llu, want %zu",
          (unsigned long long)simak_model_ofm_size(model), total);
    code = simak_model_output(model, 1, &stage, &error);
    CHECK_CODE(code, 0u, error);
    CHECK(strcmp(stage.name, "b") == 0 && stage.offset == span[0] && stage.size == span[1] &&
              stage.output_bytes == 3 * 3 * 7 * 4 && param_is(&stage, "channels", "cblock16"),
          "head b at %llu, %llu bytes", (unsigned long long)stage.offset,
          (unsigned long long)stage.size);

    ofm = buffer_new(total, 0);
    oracle_mla_fill(&heads[0], 1, 0x77, ofm.data, &span[0]);
    oracle_mla_fill(&heads[1], 2, 0x77, ofm.data + span[0], &span[1]);
    {
        /* Both outputs in one allocation, b before a. */
        size_t bytes[2] = {6 * 5 * 20 * 4, 3 * 3 * 7 * 4};
        buffer both = buffer_new(bytes[0] + bytes[1], 0xee);
        void *outs[2];
        int same = 1;
        outs[0] = both.data + bytes[1];
        outs[1] = both.data;
        code = simak_model_postprocess(model, ofm.data, total, outs, bytes, 2, 2, &error);
        CHECK_CODE(code, 0u, error);
        for (k = 0; k < 2; ++k) {
            const oracle_mla *m = &heads[k];
            const unsigned char *o = (const unsigned char *)outs[k];
            size_t h, w, c;
            i = 0;
            for (h = 0; h < m->h; ++h)
                for (w = 0; w < m->w; ++w)
                    for (c = 0; c < m->c; ++c, ++i) {
                        unsigned char v;
                        uint32_t got;
                        oracle_value_bytes((unsigned)k + 1, 0, h, w, c, 1, &v);
                        memcpy(&got, o + 4 * i, 4);
                        if (got != oracle_dequant((int8_t)v, zps[k], scales[k], ORACLE_F32))
                            same = 0;
                    }
        }
        CHECK(same, "the heads differ from the oracle");

        /* Overlapping outputs: 0x407, nothing written. */
        memset(both.data, 0x5a, bytes[0] + bytes[1]);
        outs[0] = both.data;
        outs[1] = both.data + 16;
        code = simak_model_postprocess(model, ofm.data, total, outs, bytes, 2, 1, &error);
        CHECK_CODE(code, 0x407u, error);
        CHECK(all_equal(both.data, bytes[0] + bytes[1], 0x5a), "overlapping outputs written");
        CHECK(strstr(error.message, "output 0 (\"a\")") != NULL &&
                  strstr(error.message, "output 1 (\"b\")") != NULL,
              "the message names both outputs: %s", error.message);
        /* A count other than the outputs' is refused before the arrays are read. */
        code = simak_model_postprocess(model, ofm.data, total, NULL, NULL, 3, 1, &error);
        CHECK_CODE(code, 0x710u, error);
        /* An OFM of tile alignment 16 one byte off: 0x403, nothing written. */
        {
            buffer shifted = buffer_new(total + 1, 0);
            memcpy(shifted.data + 1, ofm.data, total);
            outs[0] = both.data + bytes[1];
            outs[1] = both.data;
            code = simak_model_postprocess(model, shifted.data + 1, total, outs, bytes, 2, 1,
                                           &error);
            CHECK_CODE(code, 0x403u, error);
            CHECK(all_equal(both.data, bytes[0] + bytes[1], 0x5a), "misaligned OFM: written");
            free(shifted.base);
        }
        free(both.base);
    }
    simak_model_free(model);
    free(ofm.base);
}

/* A preprocess call on a thread running with flush-to-zero (as -ffast-math sets it). */
typedef struct ftz_job {
    const simak_model *model;
    const unsigned char *frame;
    unsigned char *ifm;
    int stuck;
    uint32_t code;
    simak_error error;
} ftz_job;

static void *ftz_thread(void *arg) {
    ftz_job *job = (ftz_job *)arg;
    job->stuck = set_ftz();
    job->code = simak_model_preprocess(job->model, 0, job->frame, 1536, job->ifm, 384, 1,
                                       &job->error);
    return NULL;
}

/* SIMAK_PLAN_EXACT: the classifier's Quant stage gives the same bytes, also under
 * flush-to-zero, where the model made without it refuses the call (0x408). */
static void exact_flag(const char *dir) {
    char path[1024];
    simak_model *fast = NULL, *exact = NULL;
    simak_error error;
    uint32_t code, seed = 777;
    buffer frame = buffer_new(1536, 0), a = buffer_new(384, 0), b = buffer_new(384, 0);
    size_t i;
    snprintf(path, sizeof path, "%s/mpk/classifier.mpk.json", dir);
    code = simak_model_from_mpk(path, 2, &fast, &error);
    CHECK_CODE(code, 0x601u, error);
    code = simak_model_from_mpk(path, 0, &fast, &error);
    CHECK_CODE(code, 0u, error);
    code = simak_model_from_mpk(path, SIMAK_PLAN_EXACT, &exact, &error);
    CHECK_CODE(code, 0u, error);
    if (!fast || !exact) return;
    for (i = 0; i < 384; ++i) {
        float x = ((float)(next(&seed) % 100001u) - 50000.0f) / 33.0f;
        memcpy(frame.data + 4 * i, &x, 4);
    }
    code = simak_model_preprocess(fast, 0, frame.data, 1536, a.data, 384, 1, &error);
    CHECK_CODE(code, 0u, error);
    code = simak_model_preprocess(exact, 0, frame.data, 1536, b.data, 384, 1, &error);
    CHECK_CODE(code, 0u, error);
    CHECK(memcmp(a.data, b.data, 384) == 0, "the exact path differs");
    {
        pthread_t thread;
        ftz_job job;
        memset(&job, 0, sizeof job);
        job.model = exact;
        job.frame = frame.data;
        job.ifm = b.data;
        memset(b.data, 0, 384);
        pthread_create(&thread, NULL, ftz_thread, &job);
        pthread_join(thread, NULL);
        CHECK_CODE(job.code, 0u, job.error);
        CHECK(memcmp(a.data, b.data, 384) == 0, "the exact path under FTZ differs");
        job.model = fast;
        pthread_create(&thread, NULL, ftz_thread, &job);
        pthread_join(thread, NULL);
        if (job.stuck) {
            CHECK_CODE(job.code, 0x408u, job.error);
        } else {
            printf("note: flush-to-zero did not stick on this CPU or emulator; the model's "
                   "FP-environment refusal is not checked in this run\n");
        }
    }
    simak_model_free(fast);
    simak_model_free(exact);
    free(frame.base);
    free(a.base);
    free(b.base);
}

/* Refused manifests: the code, the plugin named in the message, no model. */
static void refusals(const char *dir) {
    static const struct {
        const char *file;
        uint32_t code;
        const char *plugin;
    } cases[] = {
        {"errors/repeated_key.mpk.json", 0x70f, "dequant_0"},
        {"errors/size_mismatch.mpk.json", 0x709, "mla_0"},
        {"errors/unknown_kernel.mpk.json", 0x705, "dequant_0"},
        {"errors/conflicting_aliases.mpk.json", 0x704, "quant_0"},
        {"errors/missing_key.mpk.json", 0x702, "quant_0"},
    };
    size_t k;
    simak_error error;
    simak_model *model = NULL;
    uint32_t code;
    for (k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        model = open_fixture(dir, cases[k].file, &error, &code);
        CHECK_CODE(code, cases[k].code, error);
        CHECK(model == NULL, "%s gave a model", cases[k].file);
        CHECK(strstr(error.message, cases[k].plugin) != NULL, "%s: \"%s\" names no %s",
              cases[k].file, error.message, cases[k].plugin);
    }
    model = open_fixture(dir, "no-such-file.mpk.json", &error, &code);
    CHECK_CODE(code, 0x700u, error);
    CHECK(model == NULL, "a missing file gave a model");
    code = simak_model_from_mpk(NULL, 0, &model, &error);
    CHECK_CODE(code, 0x603u, error);
    code = simak_model_from_mpk_json("{\"a\": \xff}", 9, 0, &model, &error);
    CHECK_CODE(code, 0x701u, error);
    code = simak_model_from_mpk_json("[1, 2]", 6, 0, &model, &error);
    CHECK_CODE(code, 0x701u, error);
    code = simak_model_from_mpk_json(NULL, 0, 0, &model, &error);
    CHECK_CODE(code, 0x701u, error); /* empty text is not JSON */
    CHECK(simak_model_input_count(NULL) == 0 && simak_model_name(NULL) == NULL &&
              simak_model_ofm_size(NULL) == 0,
          "NULL queries");
}

void model_tests(const char *data_dir, int *passed, int *failed) {
    passed_ = passed;
    failed_ = failed;
    classifier(data_dir);
    exact_flag(data_dir);
    two_heads();
    refusals(data_dir);
}
