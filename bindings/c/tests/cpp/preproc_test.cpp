// Preproc through the C++17 wrapper (simak.hpp, SPEC §13), run by wrapper_test's main: the
// NV12 and I420 frames of tests/data/yuv against the RGB bytes OpenCV's cv2.cvtColor gave
// (committed), INT8 with a border and per-channel mean/std against the §13 formula written
// here and oracle_quant (../c/oracle.h), and the wrapper's errors (codes of docs/errors.md;
// nothing written).
#include <simak/simak.hpp>

#include <cstdio>
#include <cstdlib>
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
        std::printf("FAILED: preproc: %s\n", what.c_str());
    }
}

std::vector<unsigned char> read_data(const std::string &dir, const std::string &name) {
    std::size_t len = 0;
    unsigned char *bytes = oracle_read_file((dir + "/" + name).c_str(), &len);
    if (!bytes) {
        std::printf("cannot read %s\n", name.c_str());
        std::exit(2);
    }
    std::vector<unsigned char> out(bytes, bytes + len);
    std::free(bytes);
    return out;
}

float norm(unsigned char p, float divisor, float mean, float stdev) {
    float a = static_cast<float>(p) / divisor;
    float b = a - mean;
    return b / stdev;
}

namespace ops = simak::ops::preproc;
namespace a65 = simak::a65::preproc;

void yuv(const std::string &dir) {
    const char *names[2] = {"nv12", "i420"};
    const ops::Format formats[2] = {ops::Format::NV12, ops::Format::I420};
    for (int k = 0; k < 2; ++k) {
        std::vector<unsigned char> frame = read_data(dir, std::string("yuv/") + names[k] + ".yuv");
        std::vector<unsigned char> rgb = read_data(dir, std::string("yuv/") + names[k] + ".rgb");
        ops::Request r;
        r.frame = ops::Frame::packed(formats[k], 10, 16);
        r.divisor = 1.0f;
        auto prepared = a65::check_inference(r);
        if (auto *e = std::get_if<simak::Error>(&prepared)) {
            check(false, std::string(names[k]) + ": " + e->message());
            continue;
        }
        const a65::Prepared &p = std::get<a65::Prepared>(prepared);
        check(p.plan().output_shape() == std::vector<std::uint64_t>{10, 16, 3}, "output shape");
        std::vector<float> out(480);
        simak::Status s = a65::execute(p, {simak::ConstHostBuffer{frame.data(), frame.size()}},
                                       {simak::HostBuffer{out.data(), out.size() * 4}});
        check(s.ok(), std::string(names[k]) + " execute: " + s.error().message());
        bool same = true;
        for (std::size_t i = 0; i < 480; ++i) same &= out[i] == static_cast<float>(rgb[i]);
        check(same, std::string(names[k]) + " equals OpenCV");
    }
}

void gray_i8_border(void) {
    const std::uint64_t H = 3, W = 5;
    std::vector<unsigned char> frame(H * W);
    for (std::size_t i = 0; i < frame.size(); ++i) frame[i] = static_cast<unsigned char>(i * 41 + 3);
    ops::Request r;
    r.frame = ops::Frame::packed(ops::Format::GRAY8, H, W);
    r.frame.batch = 1;
    r.mean = {100.0f / 255.0f};
    r.std = {0.5f};
    r.border = ops::Border{2, 0, 1, 1};
    r.pad_value = {200};
    r.to = ops::To::I8;
    r.params = simak::ops::quant::Params{25.0f, 3, simak::Rounding::TowardNegative};
    auto checked = ops::check_inference(r);
    if (auto *e = std::get_if<simak::Error>(&checked)) {
        check(false, "gray i8: " + e->message());
        return;
    }
    a65::Prepared p = a65::prepare(std::get<ops::Plan>(checked));
    const std::uint64_t OH = 5, OW = 7;
    check(p.plan().output_shape() == std::vector<std::uint64_t>{1, OH, OW, 1}, "batch shape");
    std::vector<std::int8_t> out(OH * OW);
    simak::Status s = a65::execute(p, {simak::ConstHostBuffer{frame.data(), frame.size()}},
                                   {simak::HostBuffer{out.data(), out.size()}});
    check(s.ok(), "gray i8 execute");
    bool same = true;
    for (std::uint64_t y = 0; y < OH; ++y) {
        for (std::uint64_t x = 0; x < OW; ++x) {
            bool inside = y >= 2 && x >= 1 && x < 1 + W;
            unsigned char v = inside ? frame[(y - 2) * W + (x - 1)] : 200;
            float n = norm(v, 255.0f, 100.0f / 255.0f, 0.5f);
            same &= out[y * OW + x] == oracle_quant(static_cast<double>(n), 25.0f, 3, 3);
        }
    }
    check(same, "gray i8 with border equals the formula");
}

void errors(void) {
    ops::Request r;
    r.frame = ops::Frame::packed(ops::Format::NV12, 4, 3);
    auto odd = ops::check_inference(r);
    check(std::holds_alternative<simak::Error>(odd) && std::get<simak::Error>(odd).code() == 0x240,
          "odd NV12 width: 0x240");
    r.frame = ops::Frame::packed(ops::Format::RGB8, 2, 2);
    r.std = {1.0f, 0.0f, 1.0f};
    auto zero = ops::check_inference(r);
    check(std::holds_alternative<simak::Error>(zero) && std::get<simak::Error>(zero).code() == 0x246,
          "zero std: 0x246");
    r.std = {1.0f};
    r.to = ops::To::QuantTess;
    r.layout.axes = {{-1, 0, 1, 2}};
    r.layout.tile_shape = {{1, 2, 2, 3}};
    auto no_multiplier = ops::check_inference(r);
    check(std::holds_alternative<simak::Error>(no_multiplier) &&
              std::get<simak::Error>(no_multiplier).code() == 14,
          "QuantTess without a multiplier: 14");
    r.params.multiplier = 10.0f;
    auto ok = a65::check_inference(r);
    if (auto *e = std::get_if<simak::Error>(&ok)) {
        check(false, "quanttess: " + e->message());
        return;
    }
    const a65::Prepared &p = std::get<a65::Prepared>(ok);
    std::vector<unsigned char> frame(12, 9);
    alignas(16) unsigned char out[32];
    std::memset(out, 0x77, sizeof out);
    simak::Status null_in =
        a65::execute(p, {simak::ConstHostBuffer{nullptr, 12}}, {simak::HostBuffer{out, 16}});
    check(!null_in.ok() && null_in.code() == 0x409, "NULL frame: 0x409");
    simak::Status short_in =
        a65::execute(p, {simak::ConstHostBuffer{frame.data(), 11}}, {simak::HostBuffer{out, 16}});
    check(!short_in.ok() && short_in.code() == 0x401, "short frame: 0x401");
    simak::Status short_out =
        a65::execute(p, {simak::ConstHostBuffer{frame.data(), 12}}, {simak::HostBuffer{out, 15}});
    check(!short_out.ok() && short_out.code() == 0x402, "short output: 0x402");
    bool untouched = true;
    for (unsigned char b : out) untouched &= b == 0x77;
    check(untouched, "refused calls write nothing");
    simak::Status fine =
        a65::execute(p, {simak::ConstHostBuffer{frame.data(), 12}}, {simak::HostBuffer{out, 16}});
    check(fine.ok(), "quanttess execute");
    // 2 x 2 pixels x 3 channels = 12 bytes, padded to 16: q(9 / 255 * 10) = 0.
    bool bytes = true;
    for (int i = 0; i < 16; ++i) {
        bytes &= out[i] == static_cast<unsigned char>(
                               i < 12 ? oracle_quant(static_cast<double>(norm(9, 255.0f, 0.0f, 1.0f)),
                                                     10.0f, 0, 1)
                                      : 0);
    }
    check(bytes, "quanttess bytes and padding");
    check(out[16] == 0x77, "nothing past the capacity");
}


// The EV74 Preproc v1 descriptor through simak::ev74::preproc: encode, decode, bind and
// validate; the values are the contract's table (docs/contract.md §7), written out here.
void ev74_descriptor(void) {
    ops::Request r;
    r.frame = ops::Frame::packed(ops::Format::I420, 4, 6);
    r.border = ops::Border{0, 2, 0, 0};
    r.to = ops::To::CastTess;
    r.layout = ops::default_layout(false, {{1, 3, 6, 3}});
    check(r.layout.axes == std::array<int, 4>{{-1, 0, 1, 2}} &&
              ops::default_layout(true, {{1, 1, 1, 1}}).axes == std::array<int, 4>{{-1, 1, 2, 3}},
          "default roles");
    auto checked = ops::check_inference(r);
    if (auto *e = std::get_if<simak::Error>(&checked)) {
        check(false, "i420 casttess: " + e->message());
        return;
    }
    const ops::Plan &plan = std::get<ops::Plan>(checked);
    auto encoded = simak::ev74::preproc::encode_relocatable(plan);
    if (auto *e = std::get_if<simak::Error>(&encoded)) {
        check(false, "encode: " + e->message());
        return;
    }
    const auto &packet = std::get<simak::ev74::preproc::Packet>(encoded);
    check(packet.bytes.size() == 368 && packet.bytes[0] == 'S' && packet.bytes[3] == 'P',
          "368 bytes, SKPP");
    auto fields = simak::ev74::preproc::decode(packet);
    if (auto *e = std::get_if<simak::Error>(&fields)) {
        check(false, "decode: " + e->message());
        return;
    }
    const simak_ev74_preproc_fields &f = std::get<simak_ev74_preproc_fields>(fields);
    // I420 4x6: Y 24 bytes, U and V 2 rows of 3 bytes each at 24 and 30: 36 bytes.
    check(f.format == SIMAK_PREPROC_I420 && f.to == SIMAK_PREPROC_TO_CASTTESS, "format, kind");
    check(f.plane_offsets[1] == 24 && f.plane_offsets[2] == 30 && f.row_strides[2] == 3,
          "I420 planes");
    check(f.input_span == 36 && f.extents[0] == 6 && f.extents[1] == 6 && f.extents[2] == 3,
          "spans and extents");
    // BF16 [6, 6, 3] in tiles of 3 rows: two tiles of 3*6*3*2 = 108 -> 112 bytes.
    check(f.output_span == 224 && f.tile_counts[1] == 2 && f.axes[0] == -1, "tiles");
    check(f.divisor_bits == 0x437f0000u && f.std_bits[0] == 0x3f800000u, "defaults");
    auto bound = simak::ev74::preproc::bind(plan, packet, simak::DeviceRegion{0x1001, 36},
                                            simak::DeviceRegion{0x2000, 224});
    check(std::holds_alternative<simak::ev74::preproc::Packet>(bound), "bind at any frame byte");
    if (auto *b = std::get_if<simak::ev74::preproc::Packet>(&bound)) {
        check(simak::ev74::preproc::validate(*b).ok(), "the bound packet validates");
    }
    auto misaligned = simak::ev74::preproc::bind(plan, packet, simak::DeviceRegion{0x1000, 36},
                                                 simak::DeviceRegion{0x2004, 224});
    check(std::holds_alternative<simak::Error>(misaligned) &&
              std::get<simak::Error>(misaligned).code() == 50,
          "a tiled output binds at 16 bytes: 50");
    simak::Status unbound = simak::ev74::preproc::validate(packet);
    check(!unbound.ok() && unbound.code() == 38, "a relocatable packet is unbound: 38");
}

}  // namespace

void preproc_tests(const std::string &dir, int &passed, int &failed) {
    passed_ = &passed;
    failed_ = &failed;
    yuv(dir);
    gray_i8_border();
    errors();
    ev74_descriptor();
}
