/*
 * Independent oracles for the C and C++ tests of the C ABI, written from SPEC §3-§5 in
 * floating-point terms rather than simak's integer formulation, plus a minimal reader of
 * the repository's safetensors files. C99; also compiles as C++17.
 *
 * - Quant: the exact product of the input and the multiplier in binary64 (both have at most
 *   24 significant bits, so the product is exact), rounded once to binary32 by the C
 *   conversion, rounded to an integer by rint/trunc/ceil/floor, plus the zero point in
 *   binary64, saturated to [-128, 127]; NaN gives the zero point.
 * - FP32/FP16 -> BF16: the value divided by its BF16 quantum (a power of two, so exact),
 *   rounded to nearest-even by rint, times the quantum; above the largest finite BF16, an
 *   infinity. (simak instead adds 0x7fff plus the round bit to the binary32 bits.)
 * - MlaTiled: bytes written in storage order by plain loops over the tiles of a 2-D
 *   [W, C] tensor (simak computes offsets from weighted tile tables).
 * - The MLA's output layouts (SPEC §12.1): bytes written in storage order by one small loop
 *   nest per channel encoding (Compact and PadTo16: pixel, plane, channel; CBlock16: block,
 *   pixel, plane, lane) over the tiles of [N, H, W, C]; padding gets a junk byte, so a
 *   reader that reads padding into a result is caught.
 * - Dequantization (SPEC §12.2): q - zp in int64, converted to float by C, divided by the
 *   multiplier in binary32 (simak instead runs an integer division of the significands);
 *   FP16 and BF16 by the quantum-and-rint rounding of oracle_bf16.
 *
 * The oracles must run in the default FP environment (round to nearest, gradual underflow).
 */
#ifndef SIMAK_TEST_ORACLE_H
#define SIMAK_TEST_ORACLE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The oracles are file-local; a test need not use every one. */
#if defined(__GNUC__)
#define ORACLE_API static __attribute__((unused))
#else
#define ORACLE_API static
#endif

/* Dtype codes as in simak.h. */
enum { ORACLE_BF16 = 1, ORACLE_F32 = 3, ORACLE_F16 = 4 };

ORACLE_API double oracle_decode(int dtype, const unsigned char *p) {
    if (dtype == ORACLE_F32) {
        float f;
        uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                        (uint32_t)p[3] << 24;
        memcpy(&f, &bits, 4);
        return (double)f;
    }
    if (dtype == ORACLE_BF16) {
        float f;
        uint32_t bits = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
        memcpy(&f, &bits, 4);
        return (double)f;
    } else {
        unsigned h = (unsigned)p[0] | (unsigned)p[1] << 8;
        int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f;
        unsigned mant = h & 0x3ff;
        double v;
        if (exp == 0x1f) {
            v = mant ? NAN : INFINITY;
        } else if (exp == 0) {
            v = ldexp((double)mant, -24);
        } else {
            v = ldexp((double)(mant | 0x400), exp - 25);
        }
        return sign ? -v : v;
    }
}

ORACLE_API size_t oracle_size(int dtype) { return dtype == ORACLE_F32 ? 4 : 2; }

/* SPEC §3 for one element; rounding codes as simak_rounding. */
ORACLE_API int8_t oracle_quant(double x, float multiplier, int zero_point, int rounding) {
    float product;
    double r, v;
    if (isnan(x)) return (int8_t)zero_point;
    product = (float)(x * (double)multiplier);
    if (isinf(product)) return product > 0 ? 127 : -128;
    switch (rounding) {
    case 0: r = trunc((double)product); break;
    case 1: r = rint((double)product); break; /* the default mode: ties to even */
    case 2: r = ceil((double)product); break;
    default: r = floor((double)product); break;
    }
    v = r + (double)zero_point;
    if (v > 127.0) return 127;
    if (v < -128.0) return -128;
    return (int8_t)v;
}

/* SPEC §4 for a finite or infinite value: the nearest-even BF16, as its 16 bits. */
ORACLE_API uint16_t oracle_bf16(double x) {
    double ax = fabs(x), r, quantum;
    int e;
    float f;
    uint32_t bits;
    const double max_finite = ldexp(255.0, 120); /* 0x7f7f: (2 - 2^-7) * 2^127 */
    if (isinf(x)) return x > 0 ? 0x7f80 : 0xff80;
    if (ax == 0.0) return signbit(x) ? 0x8000 : 0x0000;
    frexp(ax, &e); /* ax = m * 2^e, m in [0.5, 1) */
    quantum = ldexp(1.0, e - 8 < -133 ? -133 : e - 8);
    r = rint(ax / quantum) * quantum;
    if (r > max_finite) return x > 0 ? 0x7f80 : 0xff80;
    f = (float)r; /* exact: at most 8 significant bits */
    memcpy(&bits, &f, 4);
    return (uint16_t)((bits >> 16) | (x < 0 ? 0x8000u : 0u));
}

/* The physical bytes of a 2-D [W, C] tensor (row-major elements `value(w, c)` given as
 * bytes per `planes`: 2 for BF16, 1 for INT8) in MlaTiled with W = axis 0, C = axis 1,
 * tiles tw x tc, channels padded to 16 or not. `out` gets `*len` bytes (malloc'd). */
typedef void (*oracle_element)(const void *ctx, size_t w, size_t c, unsigned char *bytes);

ORACLE_API unsigned char *oracle_tiled_2d(size_t W, size_t C, size_t tw, size_t tc, int pad16,
                                      int planes, oracle_element value, const void *ctx,
                                      size_t *len) {
    size_t cap = 0, pos = 0, ct, wt, w, c, cap_bound;
    unsigned char *out;
    unsigned char bytes[2];
    int plane;
    /* Upper bound: every tile padded fully. */
    cap_bound = ((W + tw - 1) / tw) * ((C + tc - 1) / tc) * (tw * (tc + 16) * 2 + 16);
    out = (unsigned char *)calloc(cap_bound, 1);
    if (!out) return NULL;
    for (ct = 0; ct * tc < C; ++ct) {
        size_t c0 = ct * tc, tcp = C - c0 < tc ? C - c0 : tc;
        size_t sc = pad16 ? (tcp + 15) / 16 * 16 : tcp;
        for (wt = 0; wt * tw < W; ++wt) {
            size_t w0 = wt * tw, twp = W - w0 < tw ? W - w0 : tw, start = pos;
            for (w = 0; w < twp; ++w) {
                for (plane = 0; plane < planes; ++plane) {
                    for (c = 0; c < sc; ++c) {
                        unsigned char b = 0;
                        if (c < tcp) {
                            value(ctx, w0 + w, c0 + c, bytes);
                            b = bytes[plane];
                        }
                        out[pos++] = b;
                    }
                }
            }
            while ((pos - start) % 16 != 0) out[pos++] = 0;
        }
    }
    cap = pos;
    *len = cap;
    return out;
}

/* ---- SPEC §12: the MLA's output layouts and dequantization ---- */

/* Channel encodings as simak_channels. */
enum { ORACLE_COMPACT = 0, ORACLE_PAD16 = 1, ORACLE_CBLOCK16 = 2 };

/* An output-side layout of a logical [N, H, W, C] tensor: N frames (the outer axis), the
 * roles H, W, C (D absent), tiles th x tw x tc, the encoding, the tile alignment (16 or 1)
 * and the element size E (1, 2 or 4). */
typedef struct oracle_mla {
    size_t n, h, w, c;
    size_t th, tw, tc;
    int channels;
    size_t align;
    size_t e;
} oracle_mla;

/* The test data: the E little-endian bytes of element (n, h, w, c) under `seed` (a hash;
 * every bit pattern occurs, NaN patterns for BF16 included). */
ORACLE_API void oracle_value_bytes(unsigned seed, size_t n, size_t h, size_t w, size_t c, size_t e,
                               unsigned char *bytes) {
    uint32_t x = (uint32_t)(n * 1000003u + h * 7919u + w * 131u + c * 17u) + seed * 2654435761u;
    size_t k;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    x ^= x >> 15;
    for (k = 0; k < e; ++k) bytes[k] = (unsigned char)(x >> (8 * k));
}

ORACLE_API size_t oracle_min(size_t a, size_t b) { return a < b ? a : b; }

/* The tiled bytes of `m` holding oracle_value_bytes(seed, ...), padding channels and tile
 * padding set to `pad`; `*len` gets the capacity. With `out` NULL only the capacity is
 * computed (and NULL returned); else `out` is filled and returned. */
ORACLE_API unsigned char *oracle_mla_fill(const oracle_mla *m, unsigned seed, unsigned char pad,
                                          unsigned char *out, size_t *len) {
    size_t pos = 0, n, ct, ht, wt, h, w, c, p, b, l;
    unsigned char v[4];
    for (n = 0; n < m->n; ++n)
        for (ct = 0; ct * m->tc < m->c; ++ct)
            for (ht = 0; ht * m->th < m->h; ++ht)
                for (wt = 0; wt * m->tw < m->w; ++wt) {
                    size_t c0 = ct * m->tc, h0 = ht * m->th, w0 = wt * m->tw, start = pos;
                    size_t tcp = oracle_min(m->tc, m->c - c0), thp = oracle_min(m->th, m->h - h0);
                    size_t twp = oracle_min(m->tw, m->w - w0);
                    size_t sc = m->channels == ORACLE_COMPACT ? tcp : (tcp + 15) / 16 * 16;
                    if (m->channels != ORACLE_CBLOCK16) {
                        for (h = 0; h < thp; ++h)
                            for (w = 0; w < twp; ++w)
                                for (p = 0; p < m->e; ++p)
                                    for (c = 0; c < sc; ++c) {
                                        unsigned char byte = pad;
                                        if (c < tcp) {
                                            oracle_value_bytes(seed, n, h0 + h, w0 + w, c0 + c, m->e, v);
                                            byte = v[p];
                                        }
                                        if (out) out[pos] = byte;
                                        ++pos;
                                    }
                    } else {
                        for (b = 0; b < sc / 16; ++b)
                            for (h = 0; h < thp; ++h)
                                for (w = 0; w < twp; ++w)
                                    for (p = 0; p < m->e; ++p)
                                        for (l = 0; l < 16; ++l) {
                                            unsigned char byte = pad;
                                            c = b * 16 + l;
                                            if (c < tcp) {
                                                oracle_value_bytes(seed, n, h0 + h, w0 + w, c0 + c,
                                                               m->e, v);
                                                byte = v[p];
                                            }
                                            if (out) out[pos] = byte;
                                            ++pos;
                                        }
                    }
                    while ((pos - start) % m->align != 0) {
                        if (out) out[pos] = pad;
                        ++pos;
                    }
                }
    *len = pos;
    return out;
}

/* The sign-extended integer of E little-endian bytes. */
ORACLE_API int64_t oracle_int(const unsigned char *bytes, size_t e) {
    if (e == 1) return (int8_t)bytes[0];
    if (e == 2) return (int16_t)(uint16_t)(bytes[0] | bytes[1] << 8);
    return (int32_t)((uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
                     (uint32_t)bytes[3] << 24);
}

/* IEEE binary16 of a binary32 value: nearest-even, subnormals kept, overflow to infinity. */
ORACLE_API uint16_t oracle_f16(float y) {
    double x = (double)y, ax = fabs(x), r, quantum;
    uint16_t sign = signbit(x) ? 0x8000 : 0, bits;
    int e;
    if (isnan(x)) return (uint16_t)(sign | 0x7e00);
    if (isinf(x)) return (uint16_t)(sign | 0x7c00);
    if (ax == 0.0) return sign;
    frexp(ax, &e); /* ax = m * 2^e, m in [0.5, 1): 11 significant bits below 2^e */
    quantum = ldexp(1.0, e - 11 < -24 ? -24 : e - 11);
    r = rint(ax / quantum) * quantum;
    if (r > 65504.0) return (uint16_t)(sign | 0x7c00);
    if (r < ldexp(1.0, -14)) {
        bits = (uint16_t)(r / ldexp(1.0, -24)); /* 1024 is the smallest normal, 0x0400 */
    } else {
        double m = frexp(r, &e);
        bits = (uint16_t)((unsigned)(e - 1 + 15) << 10 | (unsigned)((m * 2.0 - 1.0) * 1024.0));
    }
    return (uint16_t)(sign | bits);
}

/* SPEC §12.2 for one code: the output bits (binary32, or binary16 / BF16 in the low 16
 * bits) of q with zero point zp and multiplier s, for an output dtype code as simak_dtype. */
ORACLE_API uint32_t oracle_dequant(int64_t q, int32_t zp, float s, int out_dtype) {
    int64_t d = q - (int64_t)zp;
    volatile float x = (float)d; /* step 2: one rounding */
    volatile float y = x / s;     /* step 3: one binary32 division */
    uint32_t bits;
    float yy = y;
    if (out_dtype == ORACLE_F32) {
        memcpy(&bits, &yy, 4);
        return bits;
    }
    if (out_dtype == ORACLE_F16) return oracle_f16(yy);
    return oracle_bf16((double)yy);
}

/* A tensor of a safetensors file: dtype code, shape, and its bytes (into the file). */
typedef struct oracle_tensor {
    int dtype;
    size_t rank;
    uint64_t shape[6];
    const unsigned char *data;
    size_t bytes;
} oracle_tensor;

/* Reads a whole file; NULL on failure. */
ORACLE_API unsigned char *oracle_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    buf = (unsigned char *)malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Finds `name` in a safetensors file's bytes (8-byte header length, JSON header, data);
 * 0 on success. The header is searched as text: the repository's files have no nesting
 * beyond each tensor's object. */
ORACLE_API int oracle_find_tensor(const unsigned char *file, size_t len, const char *name,
                              oracle_tensor *t) {
    uint64_t n = 0;
    size_t k;
    char *header, *at, *end, key[256];
    unsigned long long a, b;
    if (len < 8) return -1;
    for (k = 0; k < 8; ++k) n |= (uint64_t)file[k] << (8 * k);
    if (n > len - 8) return -1;
    header = (char *)malloc((size_t)n + 1);
    if (!header) return -1;
    memcpy(header, file + 8, (size_t)n);
    header[n] = 0;
    snprintf(key, sizeof key, "\"%s\":{", name);
    at = strstr(header, key);
    if (!at) goto fail;
    end = strchr(at, '}');
    if (!end) goto fail;
    *end = 0;
    if (strstr(at, "\"dtype\":\"F32\"")) t->dtype = ORACLE_F32;
    else if (strstr(at, "\"dtype\":\"BF16\"")) t->dtype = ORACLE_BF16;
    else if (strstr(at, "\"dtype\":\"F16\"")) t->dtype = ORACLE_F16;
    else goto fail;
    {
        char *s = strstr(at, "\"shape\":[");
        if (!s) goto fail;
        s += 9;
        t->rank = 0;
        while (*s && *s != ']' && t->rank < 6) {
            t->shape[t->rank++] = strtoull(s, &s, 10);
            if (*s == ',') ++s;
        }
    }
    {
        char *s = strstr(at, "\"data_offsets\":[");
        if (!s || sscanf(s + 16, "%llu,%llu", &a, &b) != 2) goto fail;
    }
    if (b < a || 8 + n + b > len) goto fail;
    t->data = file + 8 + n + a;
    t->bytes = (size_t)(b - a);
    free(header);
    return 0;
fail:
    free(header);
    return -1;
}

#endif /* SIMAK_TEST_ORACLE_H */
