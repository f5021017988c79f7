// The output side through the C++17 wrapper (simak.hpp, SPEC §12): each of Detess,
// DetessCast, DetessDequant and Dequant as `ops::X::check_inference` → `a65::X::prepare` →
// `a65::X::execute`, on SiMa's fixture sizes, against the independent oracles of
// ../c/oracle.h (the tiled bytes written in storage order per encoding, dequantization in
// binary32), never against simak; one-byte-short buffers refused with their codes and the
// output untouched; the wrapper's errors; head placement. Linked into wrapper_test.
#include <simak/simak.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "oracle.h"

namespace {

int *n_passed = nullptr;
int *n_failed = nullptr;

void check(bool ok, const std::string &what) {
    if (ok) {
        ++*n_passed;
    } else {
        ++*n_failed;
        std::printf("FAILED: %s\n", what.c_str());
    }
}

std::string describe(const simak::Status &s) {
    return s.ok() ? "ok" : "code " + std::to_string(s.code()) + ": " + s.error().message();
}

constexpr unsigned char kPad = 0xa5;
constexpr unsigned char kMark = 0xee;

/* Storage aligned to 64 bytes, with 64 bytes of slack. */
struct Aligned {
    explicit Aligned(std::size_t n, unsigned char fill) : storage(n + 128, fill) {
        auto at = reinterpret_cast<std::uintptr_t>(storage.data());
        offset = static_cast<std::size_t>((64 - at % 64) % 64);
    }
    unsigned char *data() { return storage.data() + offset; }
    bool untouched_from(std::size_t from, std::size_t n) {
        for (std::size_t k = from; k < from + n; ++k)
            if (data()[k] != kMark) return false;
        return true;
    }
    std::vector<unsigned char> storage;
    std::size_t offset;
};

oracle_mla mla(std::size_t h, std::size_t w, std::size_t c, int channels, std::size_t align,
               std::size_t e) {
    oracle_mla m{};
    m.n = 1;
    m.h = h;
    m.w = w;
    m.c = c;
    m.th = h;
    m.tw = w;
    m.tc = c;
    m.channels = channels;
    m.align = align;
    m.e = e;
    return m;
}

simak::MlaTiled tiled_of(const oracle_mla &m) {
    simak::MlaTiled t;
    t.axes = {{-1, 0, 1, 2}};
    t.tile_shape = {{1, static_cast<std::uint32_t>(m.th), static_cast<std::uint32_t>(m.tw),
                     static_cast<std::uint32_t>(m.tc)}};
    t.channels = static_cast<simak::Channels>(m.channels);
    t.tile_align = m.align == 1 ? simak::TileAlign::Bytes1 : simak::TileAlign::Bytes16;
    return t;
}

/* The oracle's tiled bytes of `m`, padding junk, in aligned storage. */
Aligned tiled_input(const oracle_mla &m, unsigned seed, std::size_t &capacity) {
    oracle_mla_fill(&m, seed, kPad, nullptr, &capacity);
    Aligned in(capacity, kPad);
    oracle_mla_fill(&m, seed, kPad, in.data(), &capacity);
    return in;
}

/* The expected output bytes (NHWC, element size `es`): `convert` maps an element's E
 * bytes to its output bits. */
template <class Convert>
std::vector<unsigned char> expected(const oracle_mla &m, unsigned seed, std::size_t es,
                                    Convert convert) {
    std::vector<unsigned char> want;
    unsigned char v[4];
    for (std::size_t h = 0; h < m.h; ++h)
        for (std::size_t w = 0; w < m.w; ++w)
            for (std::size_t c = 0; c < m.c; ++c) {
                oracle_value_bytes(seed, 0, h, w, c, m.e, v);
                std::uint32_t bits = convert(v);
                for (std::size_t k = 0; k < es; ++k)
                    want.push_back(static_cast<unsigned char>(bits >> (8 * k)));
            }
    return want;
}

/* Runs `execute` one byte short on each port (0x401, 0x402; nothing written), then with
 * exact lengths, and compares with `want`. */
template <class Prepared, class Execute>
void run(const std::string &name, const Prepared &prepared, Execute execute, Aligned &in,
         std::size_t in_bytes, const std::vector<unsigned char> &want) {
    Aligned out(want.size(), kMark);
    auto short_in = execute(prepared, {simak::ConstHostBuffer{in.data(), in_bytes - 1}},
                            {simak::HostBuffer{out.data(), want.size()}});
    check(short_in.code() == 0x401, name + ": input one byte short: " + describe(short_in));
    auto short_out = execute(prepared, {simak::ConstHostBuffer{in.data(), in_bytes}},
                             {simak::HostBuffer{out.data(), want.size() - 1}});
    check(short_out.code() == 0x402, name + ": output one byte short: " + describe(short_out));
    check(out.untouched_from(0, want.size() + 64), name + ": a refused call wrote");
    auto ok = execute(prepared, {simak::ConstHostBuffer{in.data(), in_bytes}},
                      {simak::HostBuffer{out.data(), want.size()}});
    check(ok.ok(), name + ": " + describe(ok));
    std::size_t bad = 0;
    for (std::size_t k = 0; k < want.size(); ++k) bad += out.data()[k] != want[k];
    check(bad == 0, name + ": " + std::to_string(bad) + " bytes differ from the oracle");
    check(out.untouched_from(want.size(), 64), name + ": bytes past the output written");
}

std::uint32_t le(const unsigned char *v, std::size_t e) {
    std::uint32_t x = 0;
    for (std::size_t k = 0; k < e; ++k) x |= static_cast<std::uint32_t>(v[k]) << (8 * k);
    return x;
}

void detess() {
    struct Case {
        const char *name;
        oracle_mla m;
        simak::DType dtype;
        std::uint64_t capacity;
    };
    const Case cases[] = {
        {"BF16 [2,3,33] Compact align 1", mla(2, 3, 33, ORACLE_COMPACT, 1, 2),
         simak::DType::BFloat16, 396},
        {"BF16 [2,3,33] PadTo16", mla(2, 3, 33, ORACLE_PAD16, 16, 2), simak::DType::BFloat16, 576},
        {"INT8 19x19x273 CBlock16", mla(19, 19, 273, ORACLE_CBLOCK16, 16, 1), simak::DType::Int8,
         103968},
        {"INT8 60x80x65 PadTo16", mla(60, 80, 65, ORACLE_PAD16, 16, 1), simak::DType::Int8, 384000},
        {"INT16 [3,5,40] CBlock16 align 1", mla(3, 5, 40, ORACLE_CBLOCK16, 1, 2),
         simak::DType::Int16, 3 * 5 * 48 * 2},
        {"INT32 [3,5,7] Compact align 1", mla(3, 5, 7, ORACLE_COMPACT, 1, 4), simak::DType::Int32,
         3 * 5 * 7 * 4},
    };
    unsigned seed = 200;
    for (const Case &c : cases) {
        const oracle_mla &m = c.m;
        simak::Shape shape{m.h, m.w, m.c};
        simak::ops::detess::Request request{
            {simak::TensorSpec(shape, c.dtype, tiled_of(m))}, {simak::TensorSpec(shape, c.dtype)}, {}};
        auto checked = simak::ops::detess::check_inference(request);
        if (auto *e = std::get_if<simak::Error>(&checked)) {
            check(false, std::string(c.name) + ": " + e->message());
            continue;
        }
        auto plan = std::get<simak::ops::detess::Plan>(checked);
        check(plan.input_capacity() == c.capacity,
              std::string(c.name) + ": capacity " + std::to_string(plan.input_capacity()));
        std::size_t cap = 0;
        Aligned in = tiled_input(m, ++seed, cap);
        check(cap == c.capacity, std::string(c.name) + ": oracle capacity " + std::to_string(cap));
        auto want = expected(m, seed, m.e, [&](const unsigned char *v) { return le(v, m.e); });
        simak::a65::detess::Prepared prepared = simak::a65::detess::prepare(plan);
        run(c.name, prepared, simak::a65::detess::execute, in, cap, want);
    }
}

void detesscast() {
    const oracle_mla m = mla(2, 3, 33, ORACLE_COMPACT, 1, 2);
    simak::Shape shape{2, 3, 33};
    simak::ops::detesscast::Request request{
        {simak::TensorSpec(shape, simak::DType::BFloat16, tiled_of(m))},
        {simak::TensorSpec(shape, simak::DType::Float32)},
        {}};
    auto prepared = simak::a65::detesscast::check_inference(request);
    if (auto *e = std::get_if<simak::Error>(&prepared)) {
        check(false, "DetessCast: " + e->message());
        return;
    }
    std::size_t cap = 0;
    Aligned in = tiled_input(m, 300, cap);
    check(cap == 396, "DetessCast: 396 bytes");
    auto want = expected(m, 300, 4, [](const unsigned char *v) { return le(v, 2) << 16; });
    run("DetessCast BF16 [2,3,33] Compact align 1", std::get<simak::a65::detesscast::Prepared>(prepared),
        simak::a65::detesscast::execute, in, cap, want);

    // A BF16 C = 1 pixel in CBlock16 storage reads (b[16] << 8) | b[0].
    simak::MlaTiled c16;
    c16.axes = {{-1, -1, 0, 1}};
    c16.channels = simak::Channels::CBlock16;
    simak::ops::detesscast::Request pixel{
        {simak::TensorSpec(simak::Shape{1, 1}, simak::DType::BFloat16, c16)},
        {simak::TensorSpec(simak::Shape{1, 1}, simak::DType::Float32)},
        {}};
    auto p = simak::a65::detesscast::check_inference(pixel);
    check(std::holds_alternative<simak::a65::detesscast::Prepared>(p), "c16 pixel plan");
    if (auto *pp = std::get_if<simak::a65::detesscast::Prepared>(&p)) {
        Aligned b(32, kPad);
        b.data()[0] = 0x49;
        b.data()[16] = 0x40;
        float f = 0.0f;
        auto s = simak::a65::detesscast::execute(*pp, {simak::ConstHostBuffer{b.data(), 32}},
                                                 {simak::HostBuffer{&f, 4}});
        check(s.ok() && f == 3.140625f, "c16 pixel: " + std::to_string(f));
    }
}

void detessdequant() {
    const oracle_mla m = mla(19, 19, 273, ORACLE_CBLOCK16, 16, 1);
    simak::Shape shape{19, 19, 273};
    const simak::DType outs[3] = {simak::DType::Float32, simak::DType::Float16,
                                  simak::DType::BFloat16};
    for (simak::DType out : outs) {
        simak::ops::detessdequant::Request request{
            {simak::TensorSpec(shape, simak::DType::Int8, tiled_of(m))},
            {simak::TensorSpec(shape, out)},
            {0.0421f, -17}};
        auto checked = simak::ops::detessdequant::check_inference(request);
        if (auto *e = std::get_if<simak::Error>(&checked)) {
            check(false, "DetessDequant: " + e->message());
            continue;
        }
        auto plan = std::get<simak::ops::detessdequant::Plan>(checked);
        check(plan.input_capacity() == 103968, "DetessDequant: 103,968 bytes");
        std::size_t cap = 0;
        Aligned in = tiled_input(m, 400, cap);
        std::size_t es = out == simak::DType::Float32 ? 4 : 2;
        int code = static_cast<int>(out);
        auto want = expected(m, 400, es, [&](const unsigned char *v) {
            return oracle_dequant(oracle_int(v, 1), -17, 0.0421f, code);
        });
        run("DetessDequant INT8 19x19x273 CBlock16 out " + std::to_string(code),
            simak::a65::detessdequant::prepare(plan), simak::a65::detessdequant::execute, in, cap,
            want);
    }
}

void dequant() {
    // INT8, INT16 and INT32 codes, contiguous, into each float dtype: spot values.
    const std::int64_t i8[] = {-128, -127, -1, 0, 1, 5, 126, 127};
    const std::int64_t i16[] = {-32768, -32767, -300, 0, 299, 32766, 32767, 12345};
    const std::int64_t i32[] = {INT32_MIN, INT32_MAX, 16777217, -16777217, 16777215, 0, 7, -1};
    struct In {
        simak::DType dtype;
        std::size_t e;
        const std::int64_t *codes;
        std::int32_t zp;
    };
    const In ins[] = {{simak::DType::Int8, 1, i8, -128},
                      {simak::DType::Int16, 2, i16, 32767},
                      {simak::DType::Int32, 4, i32, INT32_MIN}};
    const simak::DType outs[3] = {simak::DType::Float32, simak::DType::Float16,
                                  simak::DType::BFloat16};
    const float s = 1.0f / 3.0f;
    for (const In &in : ins) {
        for (simak::DType out : outs) {
            std::size_t es = out == simak::DType::Float32 ? 4 : 2;
            simak::ops::dequant::Request request{{simak::TensorSpec(simak::Shape{8}, in.dtype)},
                                                 {simak::TensorSpec(simak::Shape{8}, out)},
                                                 {s, in.zp}};
            auto prepared = simak::a65::dequant::check_inference(request);
            if (auto *e = std::get_if<simak::Error>(&prepared)) {
                check(false, "Dequant: " + e->message());
                continue;
            }
            Aligned codes(8 * in.e, 0);
            std::vector<unsigned char> want;
            for (std::size_t k = 0; k < 8; ++k) {
                for (std::size_t j = 0; j < in.e; ++j)
                    codes.data()[k * in.e + j] =
                        static_cast<unsigned char>(static_cast<std::uint64_t>(in.codes[k]) >> (8 * j));
                std::uint32_t bits = oracle_dequant(in.codes[k], in.zp, s, static_cast<int>(out));
                for (std::size_t j = 0; j < es; ++j)
                    want.push_back(static_cast<unsigned char>(bits >> (8 * j)));
            }
            run("Dequant E " + std::to_string(in.e) + " out " +
                    std::to_string(static_cast<int>(out)),
                std::get<simak::a65::dequant::Prepared>(prepared), simak::a65::dequant::execute,
                codes, 8 * in.e, want);
        }
    }
}

template <class V>
std::uint32_t code_of(const V &v) {
    if (auto *e = std::get_if<simak::Error>(&v)) return e->code();
    return 0;
}

void errors() {
    simak::Shape shape{2, 3, 40};
    simak::MlaTiled t;
    t.axes = {{-1, 0, 1, 2}};
    t.tile_shape = {{1, 2, 3, 20}};
    t.channels = simak::Channels::PadTo16;
    // The c16 tile-channel rule.
    simak::ops::detess::Request r{{simak::TensorSpec(shape, simak::DType::Int8, t)},
                                  {simak::TensorSpec(shape, simak::DType::Int8)},
                                  {}};
    check(code_of(simak::ops::detess::check_inference(r)) == 0x224, "c16 tile channels: 0x224");
    // A contiguous input spec: the layout is missing.
    r.inputs[0] = simak::TensorSpec(shape, simak::DType::Int8);
    check(code_of(simak::ops::detess::check_inference(r)) == 0x603, "contiguous input: 0x603");
    // The zero point out of the INT8 range.
    t.tile_shape[3] = 40;
    simak::ops::detessdequant::Request d{{simak::TensorSpec(shape, simak::DType::Int8, t)},
                                         {simak::TensorSpec(shape, simak::DType::Float32)},
                                         {0.5f, 200}};
    check(code_of(simak::ops::detessdequant::check_inference(d)) == 0x223, "zero point: 0x223");
    d.params = {0.0f, 0};
    check(code_of(simak::a65::detessdequant::check_inference(d)) == 14, "zero multiplier: 14");
    // The input-side ops refuse CBlock16 and tile alignment 1.
    simak::MlaTiled cb = t;
    cb.channels = simak::Channels::CBlock16;
    simak::ops::casttess::Request c{{simak::TensorSpec(shape, simak::DType::Float32)},
                                    {simak::TensorSpec(shape, simak::DType::BFloat16, cb)},
                                    {}};
    check(code_of(simak::ops::casttess::check_inference(c)) == 0x220, "CastTess CBlock16: 0x220");
    cb.channels = simak::Channels::Compact;
    cb.tile_align = simak::TileAlign::Bytes1;
    c.outputs[0] = simak::TensorSpec(shape, simak::DType::BFloat16, cb);
    check(code_of(simak::ops::casttess::check_inference(c)) == 0x221, "CastTess align 1: 0x221");
    // Channel flags.
    check(code_of(simak::channels_from_flags(false, true)) == 0x222, "flags (false, true)");
    auto cbl = simak::channels_from_flags(true, true);
    check(std::holds_alternative<simak::Channels>(cbl) &&
              std::get<simak::Channels>(cbl) == simak::Channels::CBlock16,
          "flags (true, true): CBlock16");
}

void heads() {
    using simak::ops::detess::Head;
    auto placed = simak::ops::detess::place_heads(100, {Head{48, {}}, Head{32, {}}, Head{0, 100}});
    auto *offsets = std::get_if<std::vector<std::uint64_t>>(&placed);
    check(offsets && offsets->size() == 3 && (*offsets)[0] == 0 && (*offsets)[1] == 48 &&
              (*offsets)[2] == 100,
          "heads by running sums");
    check(code_of(simak::ops::detess::place_heads(100, {Head{48, {}}, Head{32, 40}})) == 0x228,
          "overlapping heads: 0x228");
    check(code_of(simak::ops::detess::place_heads(100, {Head{48, 60}})) == 0x227,
          "a head past the end: 0x227");
    check(code_of(simak::ops::detess::place_heads(100, {})) == 0x225, "no heads: 0x225");
}

/* The Detess-family EV74 descriptors through the wrapper: SiMa's INT8 19×19×273 CBlock16
 * head (103,968 bytes) as DetessDequant to FP32: the packet's size and magic, binding with
 * the tiled input's 16-byte alignment, validation and the decoded fields. */
void ev74_descriptors() {
    const oracle_mla m = mla(19, 19, 273, ORACLE_CBLOCK16, 16, 1);
    simak::Shape shape{19, 19, 273};
    simak::ops::detessdequant::Request request{
        {simak::TensorSpec(shape, simak::DType::Int8, tiled_of(m))},
        {simak::TensorSpec(shape, simak::DType::Float32)},
        {0.0421f, -17}};
    auto checked = simak::ops::detessdequant::check_inference(request);
    if (auto *e = std::get_if<simak::Error>(&checked)) {
        check(false, "ev74 DetessDequant: " + e->message());
        return;
    }
    auto plan = std::get<simak::ops::detessdequant::Plan>(checked);
    auto encoded = simak::ev74::detessdequant::encode_relocatable(plan);
    auto *packet = std::get_if<simak::ev74::detessdequant::Packet>(&encoded);
    check(packet != nullptr, "ev74 DetessDequant encodes");
    if (!packet) return;
    check(packet->bytes.size() == 224 && std::memcmp(packet->bytes.data(), "SKDQ", 4) == 0,
          "224 bytes, magic SKDQ");
    const std::uint64_t out_bytes = 19ull * 19 * 273 * 4;
    auto misaligned = simak::ev74::detessdequant::bind(plan, *packet, {0x1008, 103968},
                                                       {0x100000, out_bytes});
    check(code_of(misaligned) == 36, "the tiled input at 0x1008: 36");
    auto bound = simak::ev74::detessdequant::bind(plan, *packet, {0x1000, 103968},
                                                  {0x100000, out_bytes});
    auto *b = std::get_if<simak::ev74::detessdequant::Packet>(&bound);
    check(b != nullptr, "ev74 DetessDequant binds");
    if (!b) return;
    auto valid = simak::ev74::detessdequant::validate(*b);
    check(valid.ok(), "bound packet validates: " + describe(valid));
    check(!simak::ev74::detess::validate(*b).ok(), "Detess's decoder refuses SKDQ");
    auto fields = simak::ev74::detessdequant::decode(*b);
    auto *f = std::get_if<simak_ev74_detess_fields>(&fields);
    check(f && f->input_span == 103968 && f->output_span == out_bytes && f->conversion == 2 &&
              f->channels == SIMAK_CHANNELS_CBLOCK16 && f->zero_point == -17 &&
              f->input_address == 0x1000 && f->input_dtype == SIMAK_DTYPE_I8,
          "decoded fields");
}

}  // namespace

void output_side_tests(int &passed, int &failed) {
    n_passed = &passed;
    n_failed = &failed;
    detess();
    detesscast();
    detessdequant();
    dequant();
    errors();
    heads();
    ev74_descriptors();
}
