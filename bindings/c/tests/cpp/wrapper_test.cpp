// The C++17 wrapper (simak.hpp) as a C++ user meets it, built against the installed headers
// and library by `cargo xtask capi`: the seeds' three examples (../seeds), then execution
// through the wrapper on the repository's MiniLM tensors against the independent oracles of
// ../c/oracle.h, the wrapper's errors, and plan sharing; the output side (Detess, DetessCast,
// DetessDequant, Dequant) in output_side_test.cpp.
//
// Usage: wrapper_test DATA_DIR. The last line is "N passed, M failed".
#include <simak/simak.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "oracle.h"

simak::Status seed_ev74_quant();
simak::Status seed_ev74_casttess();
// The output side (output_side_test.cpp), adding to the counts.
void output_side_tests(int &passed, int &failed);
// Preproc (preproc_test.cpp), adding to the counts.
void preproc_tests(const std::string &dir, int &passed, int &failed);
// simak::Model (model_test.cpp), adding to the counts.
void model_tests(const std::string &dir, int &passed, int &failed);
simak::Status seed_a65_quant(const std::array<simak::ConstHostBuffer, 1> &input_views,
                             const std::array<simak::HostBuffer, 1> &output_views);

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string &what) {
    if (ok) {
        ++passed;
    } else {
        ++failed;
        std::printf("FAILED: %s\n", what.c_str());
    }
}

std::string describe(const simak::Status &s) {
    return s.ok() ? "ok" : "code " + std::to_string(s.code()) + ": " + s.error().message();
}

struct Loaded {
    std::vector<unsigned char> file;
    oracle_tensor t{};
};

Loaded load(const std::string &dir, const char *name, const char *tensor) {
    Loaded l;
    std::size_t len = 0;
    unsigned char *bytes = oracle_read_file((dir + "/" + name).c_str(), &len);
    if (!bytes) {
        std::printf("cannot read %s\n", name);
        std::exit(2);
    }
    l.file.assign(bytes, bytes + len);
    std::free(bytes);
    if (oracle_find_tensor(l.file.data(), l.file.size(), tensor, &l.t) != 0) {
        std::printf("no tensor %s in %s\n", tensor, name);
        std::exit(2);
    }
    return l;
}

/* Storage aligned to 64 bytes. */
struct Aligned {
    explicit Aligned(std::size_t n, unsigned char fill = 0) : storage(n + 64, fill) {
        auto at = reinterpret_cast<std::uintptr_t>(storage.data());
        offset = static_cast<std::size_t>((64 - at % 64) % 64);
    }
    unsigned char *data() { return storage.data() + offset; }
    std::vector<unsigned char> storage;
    std::size_t offset;
};

void seeds() {
    check(seed_ev74_quant().ok(), "seed EV74 Quant: " + describe(seed_ev74_quant()));
    check(seed_ev74_casttess().ok(), "seed EV74 CastTess: " + describe(seed_ev74_casttess()));

    // The A65 example's views over real storage: BF16 [2, 3] with byte strides (8, 2), so a
    // row of 4 BF16 slots of which 3 are read; INT8 output with strides (1, 2): transposed.
    const float values[2][3] = {{1.25f, -3.5f, 0.0078125f}, {100.0f, -0.75f, 63.75f}};
    Aligned input(16, 0xab);
    for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 3; ++j) {
            std::uint32_t bits;
            std::memcpy(&bits, &values[i][j], 4);
            input.data()[i * 8 + j * 2] = static_cast<unsigned char>(bits >> 16);
            input.data()[i * 8 + j * 2 + 1] = static_cast<unsigned char>(bits >> 24);
        }
    }
    unsigned char output[8];
    std::memset(output, 0xee, sizeof output);
    const std::array<simak::ConstHostBuffer, 1> input_views{{{input.data(), 14}}};
    const std::array<simak::HostBuffer, 1> output_views{{{output, 6}}};
    simak::Status s = seed_a65_quant(input_views, output_views);
    check(s.ok(), "seed A65 Quant: " + describe(s));
    int bad = 0;
    for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 3; ++j) {
            const int8_t want = oracle_quant(
                oracle_decode(ORACLE_BF16, input.data() + i * 8 + j * 2), 2.0f, 0, 1);
            bad += static_cast<int8_t>(output[i + j * 2]) != want;
        }
    }
    check(bad == 0, "seed A65 Quant values: " + std::to_string(bad) + " differ");
    check(output[6] == 0xee && output[7] == 0xee, "seed A65 Quant: bytes past the span");
    // The same call with a short output is refused (0x402) and writes nothing.
    std::memset(output, 0xee, sizeof output);
    const std::array<simak::HostBuffer, 1> short_views{{{output, 5}}};
    s = seed_a65_quant(input_views, short_views);
    check(s.code() == 0x402 && output[0] == 0xee, "short output: " + describe(s));
}

void real_data(const std::string &dir) {
    namespace k = simak;
    const char *name = "encoder.layer.0.attention.self.query.weight[:64]";
    Loaded l = load(dir, "minilm-l6-layer0-f32-subset.safetensors", name);
    const std::uint64_t rows = l.t.shape[0], cols = l.t.shape[1];
    const std::size_t n = static_cast<std::size_t>(rows * cols);
    Aligned input(l.t.bytes);
    std::memcpy(input.data(), l.t.data, l.t.bytes);

    // Quant, nearest-even and toward-negative with a zero point.
    for (k::Rounding mode : {k::Rounding::NearestEven, k::Rounding::TowardNegative}) {
        const std::array inputs{k::TensorSpec{{rows, cols}, k::DType::Float32}};
        const std::array outputs{k::TensorSpec{{rows, cols}, k::DType::Int8}};
        auto prepared = k::a65::quant::check_inference({inputs, outputs, {64.0f, -9, mode}});
        check(std::holds_alternative<k::a65::quant::Prepared>(prepared), "Quant admitted");
        const auto &plan = std::get<k::a65::quant::Prepared>(prepared);
        std::vector<unsigned char> out(n, 0xee);
        k::Status s = k::a65::quant::execute(plan, {{{input.data(), l.t.bytes}}},
                                             {{{out.data(), out.size()}}});
        check(s.ok(), "Quant execute: " + describe(s));
        std::size_t bad = 0;
        for (std::size_t i = 0; i < n; ++i) {
            bad += static_cast<int8_t>(out[i]) !=
                   oracle_quant(oracle_decode(ORACLE_F32, input.data() + 4 * i), 64.0f, -9,
                                static_cast<int>(mode));
        }
        check(bad == 0, std::string("Quant on MiniLM via ") + plan.implementation() + ": " +
                            std::to_string(bad) + " bytes differ");
    }

    // CastTess into W = 0, C = 1 tiles of 5 x 48, compact channels.
    {
        k::MlaTiled tiled;
        tiled.axes = {-1, -1, 0, 1};
        tiled.tile_shape = {1, 1, 5, 48};
        const std::array inputs{k::TensorSpec{{rows, cols}, k::DType::Float32}};
        const std::array outputs{k::TensorSpec{{rows, cols}, k::DType::BFloat16, tiled}};
        auto checked = k::ops::casttess::check_inference({inputs, outputs, {}});
        check(std::holds_alternative<k::ops::casttess::Plan>(checked), "CastTess admitted");
        const auto prepared = k::a65::casttess::prepare(std::get<k::ops::casttess::Plan>(checked));
        struct Ctx {
            const unsigned char *data;
            std::size_t cols;
        } ctx{input.data(), static_cast<std::size_t>(cols)};
        std::size_t want_len = 0;
        unsigned char *want = oracle_tiled_2d(
            static_cast<std::size_t>(rows), static_cast<std::size_t>(cols), 5, 48, 0, 2,
            [](const void *c, std::size_t w, std::size_t ch, unsigned char *bytes) {
                const Ctx *x = static_cast<const Ctx *>(c);
                const std::uint16_t v =
                    oracle_bf16(oracle_decode(ORACLE_F32, x->data + (w * x->cols + ch) * 4));
                bytes[0] = static_cast<unsigned char>(v & 0xff);
                bytes[1] = static_cast<unsigned char>(v >> 8);
            },
            &ctx, &want_len);
        check(prepared.plan().output_capacity() == want_len, "CastTess capacity");
        Aligned out(want_len + 16, 0xee);
        k::Status s = k::a65::casttess::execute(prepared, {{{input.data(), l.t.bytes}}},
                                                {{{out.data(), want_len + 16}}});
        check(s.ok(), "CastTess execute: " + describe(s));
        check(std::memcmp(out.data(), want, want_len) == 0, "CastTess bytes equal the oracle");
        check(out.data()[want_len] == 0xee, "CastTess: bytes past the capacity");
        std::free(want);

        // EV74: encode, bind, validate through the wrapper.
        auto encoded = k::ev74::casttess::encode_relocatable(prepared.plan());
        check(std::holds_alternative<k::ev74::casttess::Packet>(encoded), "CastTess encoded");
        const auto &packet = std::get<k::ev74::casttess::Packet>(encoded);
        check(!k::ev74::casttess::validate(packet).ok() &&
                  k::ev74::casttess::validate(packet).code() == 38,
              "an unbound packet is refused by the device (38)");
        auto bound = k::ev74::casttess::bind(prepared.plan(), packet, {0x10000, l.t.bytes},
                                             {0x200000, want_len});
        check(std::holds_alternative<k::ev74::casttess::Packet>(bound), "CastTess bound");
        if (auto *b = std::get_if<k::ev74::casttess::Packet>(&bound)) {
            check(k::ev74::casttess::validate(*b).ok(), "the device accepts the bound packet");
        }
        auto misaligned = k::ev74::casttess::bind(prepared.plan(), packet, {0x10000, l.t.bytes},
                                                  {0x200004, want_len});
        const auto *e = std::get_if<k::Error>(&misaligned);
        check(e && e->code() == 50, "misaligned output region: 50");
    }
}

void errors_and_sharing() {
    namespace k = simak;
    // Seven extents: the rank error (6) from check_inference.
    {
        const std::array inputs{k::TensorSpec{{1, 1, 1, 1, 1, 1, 1}, k::DType::Float32}};
        const std::array outputs{k::TensorSpec{{1, 1, 1, 1, 1, 1, 1}, k::DType::Int8}};
        auto r = k::ops::quant::check_inference({inputs, outputs, {1.0f}});
        const auto *e = std::get_if<k::Error>(&r);
        check(e && e->code() == 6, "rank 7: code 6");
    }
    // Strides of another count than the rank.
    {
        const std::array inputs{k::TensorSpec{{2, 3}, k::DType::Float32, k::Strided{{12}}}};
        const std::array outputs{k::TensorSpec{{2, 3}, k::DType::Int8}};
        auto r = k::ops::quant::check_inference({inputs, outputs, {1.0f}});
        const auto *e = std::get_if<k::Error>(&r);
        check(e && e->code() == 0x205, "strides count: 0x205");
    }
    // A non-positive multiplier is the descriptor twin 14; an MlaTiled Quant port is refused.
    {
        const std::array inputs{k::TensorSpec{{2, 3}, k::DType::Float32}};
        const std::array outputs{k::TensorSpec{{2, 3}, k::DType::Int8}};
        auto r = k::ops::quant::check_inference({inputs, outputs, {-1.0f}});
        const auto *e = std::get_if<k::Error>(&r);
        check(e && e->code() == 14 && !e->message().empty(), "multiplier -1: 14");
        const std::array tiled{k::TensorSpec{{2, 3}, k::DType::Int8, k::MlaTiled{}}};
        auto t = k::ops::quant::check_inference({inputs, tiled, {1.0f}});
        const auto *te = std::get_if<k::Error>(&t);
        check(te && te->code() == SIMAK_ERROR_INVALID_ENUM, "MlaTiled Quant output refused");
        // CastTess without a layout on its output.
        auto c = k::ops::casttess::check_inference(
            {inputs, {k::TensorSpec{{2, 3}, k::DType::BFloat16}}, {}});
        const auto *ce = std::get_if<k::Error>(&c);
        check(ce && ce->code() == SIMAK_ERROR_NULL_ARGUMENT, "CastTess without a layout");
        // The message names the real problem, not a null argument.
        check(ce && ce->message().find("is null") == std::string::npos &&
                  ce->message().find("contiguous") != std::string::npos &&
                  ce->message().find("MlaTiled") != std::string::npos,
              "CastTess without a layout: message " + (ce ? ce->message() : std::string("none")));
        auto qt = k::ops::quanttess::check_inference(
            {inputs, {k::TensorSpec{{2, 3}, k::DType::Int8}}, {1.0f}});
        const auto *qe = std::get_if<k::Error>(&qt);
        check(qe && qe->code() == SIMAK_ERROR_NULL_ARGUMENT &&
                  qe->message().find("MlaTiled") != std::string::npos &&
                  qe->message().find("is null") == std::string::npos,
              "QuantTess without a layout: message " + (qe ? qe->message() : std::string("none")));
    }
    // A Prepared outlives the variant it came from; copies share the plan.
    {
        std::vector<k::a65::quant::Prepared> kept;
        {
            const std::array inputs{k::TensorSpec{{4}, k::DType::Float32}};
            const std::array outputs{k::TensorSpec{{4}, k::DType::Int8}};
            auto checked = k::ops::quant::check_inference({inputs, outputs, {0.5f, 3}});
            auto prepared = k::a65::quant::prepare(std::get<k::ops::quant::Plan>(checked));
            kept.push_back(prepared);
            kept.push_back(kept.front());
        }
        const float in[4] = {1.0f, -7.0f, 300.0f, 2.5f};
        signed char out[4] = {0, 0, 0, 0};
        k::Status s = k::a65::quant::execute(kept.back(), {{{in, sizeof in}}}, {{{out, 4}}});
        check(s.ok() && out[0] == 3 && out[1] == -1 && out[2] == 127 && out[3] == 4,
              "shared plan after its variant is gone: " + describe(s));
        // A null output pointer is 0x40a, before anything is written.
        s = k::a65::quant::execute(kept.front(), {{{in, sizeof in}}}, {{{nullptr, 4}}});
        check(s.code() == 0x40a, "null output: " + describe(s));
    }
    // The exact path under a directed FP rounding mode does not matter here; the route name
    // says what ran.
    {
        const std::array inputs{k::TensorSpec{{1024}, k::DType::Float32}};
        const std::array outputs{k::TensorSpec{{1024}, k::DType::Int8}};
        auto exact = k::a65::quant::check_inference_exact({inputs, outputs, {1.0f}});
        check(std::holds_alternative<k::a65::quant::Prepared>(exact) &&
                  std::string(std::get<k::a65::quant::Prepared>(exact).implementation()) ==
                      "exact-scalar",
              "check_inference_exact selects the exact path");
    }
    check(std::string(k::version()).rfind("0.", 0) == 0, "version");
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::printf("usage: %s DATA_DIR\n", argv[0]);
        return 2;
    }
    seeds();
    real_data(argv[1]);
    errors_and_sharing();
    output_side_tests(passed, failed);
    preproc_tests(argv[1], passed, failed);
    model_tests(argv[1], passed, failed);
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
