// simak::Model through the C++17 wrapper (simak.hpp, SPEC §14), run by wrapper_test's main:
// tests/data/mpk/bf16.mpk.json's stages against the values written here by hand from the
// manifest; a random tensor through preprocess against the single CastTess op called with
// the parameters written here; a random OFM through postprocess against the oracle of
// ../c/oracle.h (the MLA's tiled bytes, SPEC §12.1, and BF16 -> FP32 exactly); the errors
// (codes of docs/errors.md; nothing written).
#include <simak/simak.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "oracle.h"

namespace {

int *passed_ = nullptr, *failed_ = nullptr;

void check(bool ok, const std::string &what) {
    if (ok) {
        ++*passed_;
    } else {
        ++*failed_;
        std::printf("FAILED: model: %s\n", what.c_str());
    }
}

std::uint32_t next(std::uint32_t &s) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    return s;
}

std::string param(const simak::ModelStage &s, const std::string &name) {
    for (const auto &p : s.params) {
        if (p.first == name) return p.second;
    }
    return "(none)";
}

void bf16_model(const std::string &dir) {
    auto opened = simak::Model::from_mpk(dir + "/mpk/bf16.mpk.json");
    if (auto *e = std::get_if<simak::Error>(&opened)) {
        check(false, "from_mpk: " + e->message());
        return;
    }
    const simak::Model model = std::get<simak::Model>(opened);
    check(model.name() == "bf16-model" && model.batch() == 1, "name and batch");
    check(model.ifm_size() == 23040 && model.ofm_size() == 13824, "IFM and OFM sizes");

    const auto inputs = model.inputs();
    const auto outputs = model.outputs();
    check(inputs.size() == 1 && outputs.size() == 1, "one input, one output");
    if (inputs.size() != 1 || outputs.size() != 1) return;
    const simak::ModelStage &in = inputs[0];
    check(in.name == "features" && in.op == "casttess", "input " + in.name + " " + in.op);
    check(in.shape == std::vector<std::uint64_t>{1, 24, 24, 20}, "input shape");
    check(in.dtype == simak::DType::Float32 && in.size == 23040 && in.offset == 0 &&
              in.input_bytes == 46080 && in.output_bytes == 23040 && in.ev74,
          "input sizes");
    check(in.plugins == std::vector<std::string>{"cast_0", "tess_0"}, "input plugins");
    check(param(in, "tile") == "[1, 8, 8, 20]" && param(in, "channels") == "compact",
          "input params: tile " + param(in, "tile"));
    const simak::ModelStage &out = outputs[0];
    check(out.name == "logits" && out.op == "detesscast", "output " + out.name + " " + out.op);
    check(out.shape == std::vector<std::uint64_t>{1, 12, 12, 40}, "output shape");
    check(out.dtype == simak::DType::Float32 && out.size == 13824 && out.offset == 0 &&
              out.input_bytes == 13824 && out.output_bytes == 23040 && out.ev74,
          "output sizes");
    check(out.plugins == std::vector<std::string>{"detess_0", "cast_1"}, "output plugins");
    check(param(out, "channels") == "pad16" && param(out, "tile") == "[1, 4, 12, 40]",
          "output params: channels " + param(out, "channels"));

    // preprocess equals CastTess with the manifest's parameters written here.
    std::uint32_t seed = 99;
    std::vector<float> x(24 * 24 * 20);
    for (float &v : x) {
        v = (static_cast<float>(next(seed) % 2000001u) - 1000000.0f) / 4093.0f;
    }
    const simak::ConstHostBuffer frame{x.data(), x.size() * 4};
    auto ifm = model.preprocess(0, frame);
    check(std::holds_alternative<std::vector<std::uint8_t>>(ifm), "preprocess");
    simak::MlaTiled tiled;
    tiled.axes = {{-1, 1, 2, 3}};
    tiled.tile_shape = {{1, 8, 8, 20}};
    tiled.channels = simak::Channels::Compact;
    const std::array<simak::TensorSpec, 1> specs_in{
        simak::TensorSpec{{1, 24, 24, 20}, simak::DType::Float32}};
    const std::array<simak::TensorSpec, 1> specs_out{
        simak::TensorSpec{{1, 24, 24, 20}, simak::DType::BFloat16, tiled}};
    auto single = simak::a65::casttess::check_inference({specs_in, specs_out, {}});
    if (auto *p = std::get_if<simak::a65::casttess::Prepared>(&single)) {
        std::vector<std::uint8_t> want(p->plan().output_capacity() + 16);
        auto *aligned = want.data() + (16 - reinterpret_cast<std::uintptr_t>(want.data()) % 16) % 16;
        const std::size_t cap = static_cast<std::size_t>(p->plan().output_capacity());
        check(cap == 23040, "CastTess capacity " + std::to_string(cap));
        simak::Status s = simak::a65::casttess::execute(*p, {frame}, {simak::HostBuffer{aligned, cap}});
        check(s.ok(), "CastTess: " + s.error().message());
        const auto *got = std::get_if<std::vector<std::uint8_t>>(&ifm);
        check(got && got->size() == cap && std::memcmp(got->data(), aligned, cap) == 0,
              "preprocess equals CastTess");
    } else {
        check(false, "CastTess: " + std::get<simak::Error>(single).message());
    }

    // postprocess: the oracle's PadTo16 BF16 head, each value widened exactly.
    oracle_mla m{1, 12, 12, 40, 4, 12, 40, ORACLE_PAD16, 16, 2};
    std::size_t len = 0;
    oracle_mla_fill(&m, 0, 0, nullptr, &len);
    check(len == 13824, "oracle OFM " + std::to_string(len));
    std::vector<std::uint8_t> ofm_store(len + 17);
    auto *ofm = ofm_store.data() + (16 - reinterpret_cast<std::uintptr_t>(ofm_store.data()) % 16) % 16;
    oracle_mla_fill(&m, 5, 0x3c, ofm, &len);
    // One byte off: the tensor-returning call copies it aligned.
    std::memmove(ofm + 1, ofm, len);
    auto tensors = model.postprocess(simak::ConstHostBuffer{ofm + 1, len}, 2);
    const auto *ts = std::get_if<std::vector<simak::ModelTensor>>(&tensors);
    check(ts && ts->size() == 1, "postprocess");
    if (ts && ts->size() == 1) {
        const simak::ModelTensor &t = (*ts)[0];
        check(t.name == "logits" && t.dtype == simak::DType::Float32 && t.bytes.size() == 23040 &&
                  t.shape == std::vector<std::uint64_t>{1, 12, 12, 40},
              "tensor name, dtype, shape");
        std::size_t bad = 0, i = 0;
        for (std::size_t h = 0; h < 12; ++h)
            for (std::size_t w = 0; w < 12; ++w)
                for (std::size_t c = 0; c < 40; ++c, ++i) {
                    unsigned char v[2];
                    oracle_value_bytes(5, 0, h, w, c, 2, v);
                    const std::uint32_t want = static_cast<std::uint32_t>(v[0] | v[1] << 8) << 16;
                    std::uint32_t got = 0;
                    std::memcpy(&got, t.bytes.data() + 4 * i, 4);
                    bad += got != want;
                }
        check(bad == 0, std::to_string(bad) + " values differ from the oracle");
    }

    // The buffer form: the aligned OFM, a misaligned one refused (0x403), wrong sizes (0x70d)
    // and counts (0x710);
    // nothing written on a refusal.
    std::vector<std::uint8_t> dense(23040, 0x5a);
    simak::Status refused = model.postprocess_into(simak::ConstHostBuffer{ofm + 1, len},
                                                   {simak::HostBuffer{dense.data(), dense.size()}});
    check(refused.code() == 0x403, "misaligned OFM: code " + std::to_string(refused.code()));
    refused = model.postprocess_into(simak::ConstHostBuffer{ofm + 1, len - 1},
                                     {simak::HostBuffer{dense.data(), dense.size()}});
    check(refused.code() == 0x70d, "short OFM: code " + std::to_string(refused.code()));
    refused = model.postprocess_into(simak::ConstHostBuffer{ofm + 1, len}, {});
    check(refused.code() == 0x710, "no output buffers: code " + std::to_string(refused.code()));
    bool untouched = true;
    for (std::uint8_t b : dense) untouched = untouched && b == 0x5a;
    check(untouched, "a refused postprocess wrote");
    std::memmove(ofm, ofm + 1, len);
    simak::Status ok = model.postprocess_into(simak::ConstHostBuffer{ofm, len},
                                              {simak::HostBuffer{dense.data(), dense.size()}});
    check(ok.ok() && ts && std::memcmp(dense.data(), (*ts)[0].bytes.data(), dense.size()) == 0,
          "the buffer form equals the tensor form");

    auto bad_index = model.preprocess(1, frame);
    const auto *be = std::get_if<simak::Error>(&bad_index);
    check(be && be->code() == 0x70e, "input index 1 refused (0x70e)");

    // A moved-from Model answers with empty results and 0x603, never a throw.
    simak::Model copy = model;
    simak::Model moved = std::move(copy);
    check(copy.get() == nullptr && copy.name().empty() && copy.inputs().empty() &&
              copy.ofm_size() == 0 && moved.name() == "bf16-model",
          "a moved-from Model");
    const auto refused_call = copy.postprocess({ofm, len});
    const auto *me = std::get_if<simak::Error>(&refused_call);
    check(me && me->code() == SIMAK_ERROR_NULL_ARGUMENT, "a moved-from Model's call: 0x603");
}

void refusals(const std::string &dir) {
    auto missing = simak::Model::from_mpk(dir + "/mpk/no-such-file.mpk.json");
    const auto *e = std::get_if<simak::Error>(&missing);
    check(e && e->code() == 0x700, "a missing file: 0x700");
    auto repeated = simak::Model::from_mpk(dir + "/mpk/errors/repeated_key.mpk.json");
    e = std::get_if<simak::Error>(&repeated);
    check(e && e->code() == 0x70f && e->message().find("dequant_0") != std::string::npos &&
              e->message().find("dq_scale") != std::string::npos,
          "a repeated key: 0x70f naming the plugin and the key");
    auto not_json = simak::Model::from_mpk_json("{\"plugins\": [");
    e = std::get_if<simak::Error>(&not_json);
    check(e && e->code() == 0x701, "not JSON: 0x701");
}

}  // namespace

void model_tests(const std::string &dir, int &passed, int &failed) {
    passed_ = &passed;
    failed_ = &failed;
    bf16_model(dir);
    refusals(dir);
}
