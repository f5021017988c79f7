// quantize INPUT.safetensors TENSOR OUTPUT: the F32 tensor TENSOR of INPUT quantized to INT8
// with multiplier 64 (zero point 0, nearest-even) on the A65, written to OUTPUT as raw
// bytes. Written against the seeds' C++ API shape: only the include line and the namespace
// alias name simak. `cargo xtask capi` builds it with CMake against target/dist and checks
// that its bytes equal `simak quant --multiplier 64`'s.
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <simak/simak.hpp>

namespace k = simak;
namespace quant = k::a65::quant;

namespace {

// The data of tensor `name` of a safetensors file (8-byte header length, JSON, data), its
// shape and dtype: enough of the format for this example.
struct Tensor {
    std::vector<std::uint64_t> shape;
    std::string dtype;
    const unsigned char *data = nullptr;
    std::size_t bytes = 0;
};

bool find(const std::vector<unsigned char> &file, const std::string &name, Tensor &t) {
    if (file.size() < 8) return false;
    std::uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= std::uint64_t{file[i]} << (8 * i);
    if (n > file.size() - 8) return false;
    const std::string header(file.begin() + 8, file.begin() + 8 + static_cast<long>(n));
    const std::size_t at = header.find("\"" + name + "\":{");
    if (at == std::string::npos) return false;
    const std::string entry = header.substr(at, header.find('}', at) - at);
    const std::size_t d = entry.find("\"dtype\":\"");
    const std::size_t s = entry.find("\"shape\":[");
    const std::size_t o = entry.find("\"data_offsets\":[");
    if (d == std::string::npos || s == std::string::npos || o == std::string::npos) return false;
    t.dtype = entry.substr(d + 9, entry.find('"', d + 9) - (d + 9));
    const char *p = entry.c_str() + s + 9;
    while (*p && *p != ']') {
        char *end = nullptr;
        t.shape.push_back(std::strtoull(p, &end, 10));
        p = *end == ',' ? end + 1 : end;
    }
    char *end = nullptr;
    const std::uint64_t a = std::strtoull(entry.c_str() + o + 16, &end, 10);
    const std::uint64_t b = std::strtoull(end + 1, nullptr, 10);
    if (b < a || 8 + n + b > file.size()) return false;
    t.data = file.data() + 8 + n + a;
    t.bytes = static_cast<std::size_t>(b - a);
    return true;
}

k::Status run(const Tensor &t, std::vector<unsigned char> &out) {
    k::Shape shape;
    switch (t.shape.size()) {
    case 1: shape = k::Shape{t.shape[0]}; break;
    case 2: shape = k::Shape{t.shape[0], t.shape[1]}; break;
    default: return k::Error(6, "this example takes tensors of rank 1 or 2");
    }
    const std::array inputs{k::TensorSpec{shape, k::DType::Float32}};
    const std::array outputs{k::TensorSpec{shape, k::DType::Int8}};
    auto checked = k::ops::quant::check_inference({inputs, outputs, quant::Params{64.0f}});
    if (auto *error = std::get_if<k::Error>(&checked)) return *error;
    const auto plan = quant::prepare(std::get<k::ops::quant::Plan>(checked));
    out.assign(static_cast<std::size_t>(plan.plan().output_span()), 0);
    const std::array<k::ConstHostBuffer, 1> input_views{{{t.data, t.bytes}}};
    const std::array<k::HostBuffer, 1> output_views{{{out.data(), out.size()}}};
    return quant::execute(plan, input_views, output_views);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s INPUT.safetensors TENSOR OUTPUT\n", argv[0]);
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    const std::vector<unsigned char> file((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    Tensor t;
    if (!find(file, argv[2], t) || t.dtype != "F32") {
        std::fprintf(stderr, "%s: no F32 tensor %s\n", argv[1], argv[2]);
        return 2;
    }
    std::vector<unsigned char> out;
    const k::Status status = run(t, out);
    if (!status.ok()) {
        std::fprintf(stderr, "simak error 0x%x: %s\n", status.code(),
                     status.error().message().c_str());
        return 1;
    }
    std::ofstream(argv[3], std::ios::binary)
        .write(reinterpret_cast<const char *>(out.data()), static_cast<std::streamsize>(out.size()));
    std::printf("%s: %zu elements quantized with simak %s\n", argv[2], out.size(), k::version());
    return 0;
}
