/*
 * simak.hpp: a header-only C++17 wrapper over the C ABI of simak (simak.h), shaped after the
 * C++ API that simak re-creates, so that code written for it compiles once its namespace
 * alias names `simak`:
 *
 *     simak::ops::{quant, casttess, quanttess}   Request, Params, Plan, check_inference
 *     simak::a65::{quant, casttess, quanttess}   Params, prepare, execute, check_inference
 *     simak::ev74::{quant, casttess}             encode_relocatable, bind, validate
 *
 * and the output side (SPEC §12: reading the MLA's outputs back), in the same shape:
 *
 *     simak::ops::{detess, detesscast, detessdequant, dequant}   Request, Params, Plan,
 *                                                                check_inference
 *     simak::a65::{detess, detesscast, detessdequant, dequant}   prepare, execute,
 *                                                                check_inference
 *     simak::ops::detess::place_heads, simak::channels_from_flags
 *     simak::ev74::{detess, detesscast, detessdequant}   encode_relocatable, bind,
 *                                                        validate, decode
 *
 * and camera input (SPEC §13: 8-bit frames, normalized, as FP32, INT8 or tiled):
 *
 *     simak::ops::preproc   Format, To, Plane, Frame, Border, Request, Plan, check_inference
 *     simak::a65::preproc   prepare, execute, check_inference
 *     simak::ev74::preproc  encode_relocatable, bind, validate, decode
 *
 * and a model's whole boundary from its manifest (SPEC §14: frames in, named tensors out):
 *
 *     simak::Model          from_mpk, from_mpk_json, inputs, outputs, preprocess(_into),
 *                           postprocess(_into)
 *
 * RAII over the C handles, no exceptions: fallible calls return std::variant<T, Error> or
 * Status. A Plan shares its handle (a reference-counted clone in the C ABI), so a Prepared
 * may outlive the variant it came from; plans are immutable and may be used from several
 * threads at once. Each rule is the Rust library's: the codes are those of docs/errors.md.
 * MIT OR Apache-2.0.
 */
#ifndef SIMAK_HPP
#define SIMAK_HPP

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "simak.h"

namespace simak {

/* Element types; the values are the C ABI's codes. */
enum class DType : std::uint32_t {
    BFloat16 = SIMAK_DTYPE_BF16,
    Float32 = SIMAK_DTYPE_F32,
    Float16 = SIMAK_DTYPE_F16,
    Int8 = SIMAK_DTYPE_I8,
    /* The output side only (Detess, DetessDequant and Dequant inputs, SPEC §12). */
    Int16 = SIMAK_DTYPE_I16,
    Int32 = SIMAK_DTYPE_I32,
    /* Camera frames, as a Model's input stages report them; not a tensor port's dtype. */
    UInt8 = SIMAK_DTYPE_U8,
};

/* Integer rounding of the binary32 product (SPEC §3). */
enum class Rounding : std::uint32_t {
    TowardZero = SIMAK_ROUNDING_TOWARD_ZERO,
    NearestEven = SIMAK_ROUNDING_NEAREST_EVEN,
    TowardPositive = SIMAK_ROUNDING_TOWARD_POSITIVE,
    TowardNegative = SIMAK_ROUNDING_TOWARD_NEGATIVE,
};

/* Stored channels of an MlaTiled tile: exactly, padded to a multiple of 16, or as 16-channel
 * blocks (CBlock16: the MLA's outputs only, SPEC §12.1). */
enum class Channels : std::uint32_t {
    Compact = SIMAK_CHANNELS_COMPACT,
    PadTo16 = SIMAK_CHANNELS_PAD_TO_16,
    CBlock16 = SIMAK_CHANNELS_CBLOCK16,
};

/* What each tile's size is rounded up to: 16 bytes (SPEC §5; the only value the input-side
 * ops accept) or 1 (no per-tile padding: the MLA's outputs in Compact encoding). */
enum class TileAlign : std::uint32_t { Bytes16 = 16, Bytes1 = 1 };

/* A failure: the stable code of docs/errors.md and a message. */
class Error {
public:
    Error(std::uint32_t code, std::string message) : code_(code), message_(std::move(message)) {}
    std::uint32_t code() const noexcept { return code_; }
    const std::string &message() const noexcept { return message_; }

private:
    std::uint32_t code_;
    std::string message_;
};

/* Success, or an Error. Default-constructed: success. */
class Status {
public:
    Status() = default;
    Status(Error error) : ok_(false), error_(std::move(error)) {}
    bool ok() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    /* The error; code 0 and an empty message on success. */
    const Error &error() const noexcept { return error_; }
    std::uint32_t code() const noexcept { return error_.code(); }

private:
    bool ok_ = true;
    Error error_{0, std::string()};
};

namespace detail {

/* Up to six 64-bit values from an initializer list; more are counted so that admission
 * reports the rank (code 6). */
class Dims {
public:
    Dims() = default;
    Dims(std::initializer_list<std::uint64_t> values) : count_(values.size()) {
        std::size_t k = 0;
        for (std::uint64_t v : values) {
            if (k < values_.size()) values_[k] = v;
            ++k;
        }
    }
    std::size_t size() const noexcept { return count_; }
    const std::uint64_t *data() const noexcept { return values_.data(); }
    std::uint64_t operator[](std::size_t k) const noexcept { return k < 6 ? values_[k] : 0; }

private:
    std::array<std::uint64_t, 6> values_{};
    std::size_t count_ = 0;
};

inline Error error_of(const simak_error &e) { return Error(e.code, std::string(e.message)); }

/* A shared C handle: copies take another reference (`Clone`), destruction releases one. */
template <class H, H *(*Clone)(const H *), void (*Free)(H *)>
class Handle {
public:
    Handle() = default;
    explicit Handle(H *h) noexcept : h_(h) {}
    Handle(const Handle &o) noexcept : h_(Clone(o.h_)) {}
    Handle(Handle &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Handle &operator=(const Handle &o) noexcept {
        if (this != &o) {
            Free(h_);
            h_ = Clone(o.h_);
        }
        return *this;
    }
    Handle &operator=(Handle &&o) noexcept {
        if (this != &o) {
            Free(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~Handle() { Free(h_); }
    H *get() const noexcept { return h_; }

private:
    H *h_ = nullptr;
};

}  // namespace detail

/* Logical extents in elements: Shape{2, 3} has rank 2, Shape{} is a scalar. */
class Shape : public detail::Dims {
public:
    using detail::Dims::Dims;
    std::size_t rank() const noexcept { return size(); }
};

/* Byte strides, one per axis. */
class Strides : public detail::Dims {
public:
    using detail::Dims::Dims;
};

/* A strided layout: Strided{{8, 2}}. */
struct Strided {
    Strides bytes;
};

/* The MlaTiled layout (SPEC §5, §12.1): the logical axis of each role D, H, W, C (-1
 * absent), the tile extents, the channel encoding and the tile alignment. CastTess and
 * QuantTess write Compact or PadTo16 with alignment 16; the Detess ops read all three
 * encodings and both alignments. */
struct MlaTiled {
    std::array<int, 4> axes{{-1, -1, -1, -1}};
    std::array<std::uint32_t, 4> tile_shape{{1, 1, 1, 1}};
    Channels channels = Channels::Compact;
    TileAlign tile_align = TileAlign::Bytes16;
};

/* A tensor port: shape, dtype, and a contiguous, strided or MlaTiled layout. */
class TensorSpec {
public:
    enum class Kind { Contiguous, Strided, Tiled };

    TensorSpec() = default;
    TensorSpec(Shape shape, DType dtype) : shape_(shape), dtype_(dtype) {}
    TensorSpec(Shape shape, DType dtype, Strided strided)
        : shape_(shape), dtype_(dtype), kind_(Kind::Strided), strides_(strided.bytes) {}
    TensorSpec(Shape shape, DType dtype, MlaTiled tiled)
        : shape_(shape), dtype_(dtype), kind_(Kind::Tiled), tiled_(tiled) {}

    const Shape &shape() const noexcept { return shape_; }
    DType dtype() const noexcept { return dtype_; }
    Kind kind() const noexcept { return kind_; }
    const Strides &strides() const noexcept { return strides_; }
    const MlaTiled &tiled() const noexcept { return tiled_; }

    /* The C view; it points into this spec, which must outlive its use. */
    simak_tensor raw() const noexcept {
        simak_tensor t{};
        t.rank = static_cast<std::uint32_t>(shape_.rank());
        for (std::size_t k = 0; k < 6; ++k) t.extents[k] = shape_[k];
        t.strides = kind_ == Kind::Strided ? strides_.data() : nullptr;
        t.dtype = static_cast<std::uint32_t>(dtype_);
        return t;
    }

private:
    Shape shape_{};
    DType dtype_ = DType::Float32;
    Kind kind_ = Kind::Contiguous;
    Strides strides_{};
    MlaTiled tiled_{};
};

/* A caller's host buffer for an input port, in bytes. */
struct ConstHostBuffer {
    const void *data;
    std::size_t bytes;
};

/* A caller's host buffer for an output port, in bytes. */
struct HostBuffer {
    void *data;
    std::size_t bytes;
};

/* An EV74-visible region: a 32-bit bus address and a capacity in bytes. */
struct DeviceRegion {
    std::uint32_t address;
    std::uint64_t bytes;
};

namespace detail {

/* The C view of a port that the operation places by strides (Quant, tiled inputs). */
inline std::variant<simak_tensor, Error> strided_port(const TensorSpec &spec, bool input) {
    if (spec.kind() == TensorSpec::Kind::Tiled) {
        return Error(SIMAK_ERROR_INVALID_ENUM,
                     std::string(input ? "the input" : "the output") +
                         " is MlaTiled, but this port is contiguous or strided");
    }
    if (spec.kind() == TensorSpec::Kind::Strided && spec.strides().size() != spec.shape().rank()) {
        return Error(input ? 0x205 : 0x206,
                     std::string(input ? "input" : "output") + " spec has " +
                         std::to_string(spec.shape().rank()) + " extents but " +
                         std::to_string(spec.strides().size()) + " strides");
    }
    return spec.raw();
}

/* The C view of an MlaTiled output port. A contiguous output spec (no layout) is refused
 * here with the C ABI's code for the missing layout (0x603) and a message naming the real
 * problem: the tiled ops write only MlaTiled outputs. */
inline std::variant<simak_tensor, Error> tiled_port(const TensorSpec &spec, simak_mla_tiled &layout,
                                                    bool &has_layout) {
    has_layout = spec.kind() == TensorSpec::Kind::Tiled;
    if (spec.kind() == TensorSpec::Kind::Strided) {
        return Error(0x206, "a tiled output takes no strides: give it an MlaTiled layout");
    }
    if (spec.kind() == TensorSpec::Kind::Contiguous) {
        return Error(0x603,
                     "the output spec is contiguous, but CastTess and QuantTess write only MlaTiled "
                     "outputs: give the output spec an MlaTiled layout, "
                     "TensorSpec(shape, dtype, MlaTiled{...}) (SPEC §5)");
    }
    const MlaTiled &t = spec.tiled();
    if (t.channels == Channels::CBlock16) {
        return Error(0x220,
                     "CastTess and QuantTess write Compact or PadTo16 tiles; CBlock16 is the "
                     "MLA's output encoding only (SPEC §12.1)");
    }
    if (t.tile_align != TileAlign::Bytes16) {
        return Error(0x221,
                     "CastTess and QuantTess write tiles aligned to 16 bytes; tile alignment 1 "
                     "is the MLA's outputs' only (SPEC §12.1)");
    }
    for (std::size_t k = 0; k < 4; ++k) {
        layout.axes[k] = t.axes[k];
        layout.tile[k] = t.tile_shape[k];
    }
    layout.pad_to_16 = static_cast<std::uint32_t>(t.channels);
    return spec.raw();
}

/* The C views of a request with an MlaTiled input (the Detess ops): the tiled input, its
 * layout, the strided output. */
struct UntiledPorts {
    simak_tensor input;
    simak_tensor output;
    simak_mla_tiled_v2 layout;
};

/* The C views of an MlaTiled input port and a strided output port. A contiguous or strided
 * input spec is refused with the C ABI's codes (0x603 the missing layout, 0x205 strides)
 * and a message naming the real problem. */
inline std::variant<UntiledPorts, Error> untiled_ports(const TensorSpec &input,
                                                       const TensorSpec &output) {
    if (input.kind() == TensorSpec::Kind::Strided) {
        return Error(0x205, "a tiled input takes no strides: give it an MlaTiled layout");
    }
    if (input.kind() == TensorSpec::Kind::Contiguous) {
        return Error(0x603,
                     "the input spec is contiguous, but Detess, DetessCast and DetessDequant read "
                     "only MlaTiled inputs: give the input spec an MlaTiled layout, "
                     "TensorSpec(shape, dtype, MlaTiled{...}) (SPEC §12.1)");
    }
    auto out = strided_port(output, false);
    if (auto *e = std::get_if<Error>(&out)) return *e;
    UntiledPorts ports{input.raw(), std::get<simak_tensor>(out), simak_mla_tiled_v2_default()};
    const MlaTiled &t = input.tiled();
    for (std::size_t k = 0; k < 4; ++k) {
        ports.layout.axes[k] = t.axes[k];
        ports.layout.tile[k] = t.tile_shape[k];
    }
    ports.layout.channels = static_cast<std::uint32_t>(t.channels);
    ports.layout.tile_align = static_cast<std::uint32_t>(t.tile_align);
    return ports;
}

inline simak_dequant_params dequant_params_of(float multiplier, std::int32_t zero_point) {
    simak_dequant_params p = simak_dequant_params_default(multiplier);
    p.zero_point = zero_point;
    return p;
}

inline simak_quant_params params_of(float multiplier, std::int32_t zero_point, Rounding rounding) {
    simak_quant_params p = simak_quant_params_default(multiplier);
    p.zero_point = zero_point;
    p.rounding = static_cast<std::uint32_t>(rounding);
    return p;
}

}  // namespace detail

namespace ops {

namespace quant {

/* Quant parameters: the input is multiplied by `multiplier` (SPEC §3). */
struct Params {
    float multiplier;
    std::int32_t zero_point = 0;
    Rounding rounding = Rounding::NearestEven;
};

/* A Quant request: one input (F32, BF16, F16), one output (I8), the parameters. */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked Quant plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_quant_plan *handle) noexcept : handle_(handle) {}
    const simak_quant_plan *get() const noexcept { return handle_.get(); }
    /* Bytes of input and output storage the call accesses. */
    std::uint64_t input_span() const noexcept { return simak_quant_plan_input_span(get()); }
    std::uint64_t output_span() const noexcept { return simak_quant_plan_output_span(get()); }

private:
    simak::detail::Handle<simak_quant_plan, simak_quant_plan_clone, simak_quant_plan_free> handle_;
};

namespace detail {
inline std::variant<Plan, Error> check(const Request &request, std::uint32_t flags) {
    auto in = simak::detail::strided_port(request.inputs[0], true);
    if (auto *e = std::get_if<Error>(&in)) return *e;
    auto out = simak::detail::strided_port(request.outputs[0], false);
    if (auto *e = std::get_if<Error>(&out)) return *e;
    simak_quant_params p = simak::detail::params_of(request.params.multiplier,
                                                    request.params.zero_point,
                                                    request.params.rounding);
    p.flags = flags;
    simak_quant_plan *plan = nullptr;
    simak_error error;
    if (simak_quant_plan_new(&std::get<simak_tensor>(in), &std::get<simak_tensor>(out), &p, &plan,
                             &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}
}  // namespace detail

/* Admits a Quant request (SPEC §2, §3): shapes, dtypes, layouts, parameters. */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    return detail::check(request, 0);
}

}  // namespace quant

namespace casttess {

/* CastTess has no parameters. */
struct Params {};

/* A CastTess request: one input (F32, F16, BF16), one BF16 MlaTiled output. */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked CastTess plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_casttess_plan *handle) noexcept : handle_(handle) {}
    const simak_casttess_plan *get() const noexcept { return handle_.get(); }
    std::uint64_t input_span() const noexcept { return simak_casttess_plan_input_span(get()); }
    /* Bytes of the tiled output, padding included (in general not elements x 2). */
    std::uint64_t output_capacity() const noexcept {
        return simak_casttess_plan_output_capacity(get());
    }

private:
    simak::detail::Handle<simak_casttess_plan, simak_casttess_plan_clone, simak_casttess_plan_free>
        handle_;
};

/* Admits a CastTess request (SPEC §4, §5). */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    auto in = simak::detail::strided_port(request.inputs[0], true);
    if (auto *e = std::get_if<Error>(&in)) return *e;
    simak_mla_tiled layout = simak_mla_tiled_default();
    bool has_layout = false;
    auto out = simak::detail::tiled_port(request.outputs[0], layout, has_layout);
    if (auto *e = std::get_if<Error>(&out)) return *e;
    simak_casttess_plan *plan = nullptr;
    simak_error error;
    if (simak_casttess_plan_new(&std::get<simak_tensor>(in), &std::get<simak_tensor>(out),
                                has_layout ? &layout : nullptr, &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}

}  // namespace casttess

namespace quanttess {

/* QuantTess takes the Quant parameters. */
using Params = quant::Params;

/* A QuantTess request: one input (F32, BF16, F16), one I8 MlaTiled output, parameters. */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked QuantTess plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_quanttess_plan *handle) noexcept : handle_(handle) {}
    const simak_quanttess_plan *get() const noexcept { return handle_.get(); }
    std::uint64_t input_span() const noexcept { return simak_quanttess_plan_input_span(get()); }
    std::uint64_t output_capacity() const noexcept {
        return simak_quanttess_plan_output_capacity(get());
    }

private:
    simak::detail::Handle<simak_quanttess_plan, simak_quanttess_plan_clone, simak_quanttess_plan_free>
        handle_;
};

namespace detail {
inline std::variant<Plan, Error> check(const Request &request, std::uint32_t flags) {
    auto in = simak::detail::strided_port(request.inputs[0], true);
    if (auto *e = std::get_if<Error>(&in)) return *e;
    simak_mla_tiled layout = simak_mla_tiled_default();
    bool has_layout = false;
    auto out = simak::detail::tiled_port(request.outputs[0], layout, has_layout);
    if (auto *e = std::get_if<Error>(&out)) return *e;
    simak_quant_params p = simak::detail::params_of(request.params.multiplier,
                                                    request.params.zero_point,
                                                    request.params.rounding);
    p.flags = flags;
    simak_quanttess_plan *plan = nullptr;
    simak_error error;
    if (simak_quanttess_plan_new(&std::get<simak_tensor>(in), &std::get<simak_tensor>(out),
                                 has_layout ? &layout : nullptr, &p, &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}
}  // namespace detail

/* Admits a QuantTess request (SPEC §3, §5). */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    return detail::check(request, 0);
}

}  // namespace quanttess

namespace detess {

/* Detess has no parameters. */
struct Params {};

/* A Detess request: one MlaTiled input (I8, I16, I32 or BF16; the layout with its
 * encoding and tile alignment), one output of the same dtype, contiguous or strided. */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked Detess plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_detess_plan *handle) noexcept : handle_(handle) {}
    const simak_detess_plan *get() const noexcept { return handle_.get(); }
    /* Bytes of the tiled input: the head's span in the OFM, padding included. */
    std::uint64_t input_capacity() const noexcept { return simak_detess_plan_input_capacity(get()); }
    std::uint64_t output_span() const noexcept { return simak_detess_plan_output_span(get()); }

private:
    simak::detail::Handle<simak_detess_plan, simak_detess_plan_clone, simak_detess_plan_free>
        handle_;
};

/* Admits a Detess request (SPEC §12, §12.1). */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    auto ports = simak::detail::untiled_ports(request.inputs[0], request.outputs[0]);
    if (auto *e = std::get_if<Error>(&ports)) return *e;
    auto &p = std::get<simak::detail::UntiledPorts>(ports);
    simak_detess_plan *plan = nullptr;
    simak_error error;
    if (simak_detess_plan_new(&p.input, &p.output, &p.layout, &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}

/* One head of a multi-head OFM: its span (its plan's input_capacity) and an optional
 * explicit byte offset (by default the sum of the spans of the heads before it). */
struct Head {
    std::uint64_t span;
    std::optional<std::uint64_t> offset;
};

/* Places 1 to 32 heads in an OFM of `buffer_bytes` bytes (SPEC §12.1): each head's byte
 * offset, every head checked against the buffer and the others (codes 0x225 to 0x228). */
inline std::variant<std::vector<std::uint64_t>, Error> place_heads(
    std::uint64_t buffer_bytes, const std::vector<Head> &heads) {
    std::vector<simak_ofm_head> raw(heads.size());
    for (std::size_t k = 0; k < heads.size(); ++k) {
        raw[k].span = heads[k].span;
        raw[k].offset = heads[k].offset.value_or(0);
        raw[k].has_offset = heads[k].offset.has_value() ? 1u : 0u;
    }
    std::vector<std::uint64_t> offsets(heads.size() == 0 ? 1 : heads.size());
    simak_error error;
    if (simak_place_heads(buffer_bytes, raw.data(), raw.size(), offsets.data(), offsets.size(),
                          &error) != 0) {
        return simak::detail::error_of(error);
    }
    return offsets;
}

}  // namespace detess

namespace detesscast {

/* DetessCast has no parameters. */
struct Params {};

/* A DetessCast request: one BF16 MlaTiled input, one F32 output (contiguous or strided). */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked DetessCast plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_detesscast_plan *handle) noexcept : handle_(handle) {}
    const simak_detesscast_plan *get() const noexcept { return handle_.get(); }
    std::uint64_t input_capacity() const noexcept {
        return simak_detesscast_plan_input_capacity(get());
    }
    std::uint64_t output_span() const noexcept { return simak_detesscast_plan_output_span(get()); }

private:
    simak::detail::Handle<simak_detesscast_plan, simak_detesscast_plan_clone,
                          simak_detesscast_plan_free>
        handle_;
};

/* Admits a DetessCast request (SPEC §12). */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    auto ports = simak::detail::untiled_ports(request.inputs[0], request.outputs[0]);
    if (auto *e = std::get_if<Error>(&ports)) return *e;
    auto &p = std::get<simak::detail::UntiledPorts>(ports);
    simak_detesscast_plan *plan = nullptr;
    simak_error error;
    if (simak_detesscast_plan_new(&p.input, &p.output, &p.layout, &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}

}  // namespace detesscast

namespace dequant {

/* Dequantization parameters of one head (SPEC §12.2): y = (q - zero_point) / multiplier,
 * each step rounded once to binary32; `multiplier` is the number Quant multiplies by. */
struct Params {
    float multiplier;
    std::int32_t zero_point = 0;
};

/* A Dequant request: one input (I8, I16, I32), one output (F32, F16, BF16), both
 * contiguous or strided, the parameters. */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked Dequant plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_dequant_plan *handle) noexcept : handle_(handle) {}
    const simak_dequant_plan *get() const noexcept { return handle_.get(); }
    std::uint64_t input_span() const noexcept { return simak_dequant_plan_input_span(get()); }
    std::uint64_t output_span() const noexcept { return simak_dequant_plan_output_span(get()); }

private:
    simak::detail::Handle<simak_dequant_plan, simak_dequant_plan_clone, simak_dequant_plan_free>
        handle_;
};

/* Admits a Dequant request (SPEC §2, §12.2). */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    auto in = simak::detail::strided_port(request.inputs[0], true);
    if (auto *e = std::get_if<Error>(&in)) return *e;
    auto out = simak::detail::strided_port(request.outputs[0], false);
    if (auto *e = std::get_if<Error>(&out)) return *e;
    simak_dequant_params p =
        simak::detail::dequant_params_of(request.params.multiplier, request.params.zero_point);
    simak_dequant_plan *plan = nullptr;
    simak_error error;
    if (simak_dequant_plan_new(&std::get<simak_tensor>(in), &std::get<simak_tensor>(out), &p,
                               &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}

}  // namespace dequant

namespace detessdequant {

/* DetessDequant takes the Dequant parameters. */
using Params = dequant::Params;

/* A DetessDequant request: one MlaTiled input (I8, I16, I32), one output (F32, F16, BF16;
 * contiguous or strided), the parameters. Exactly Dequant of Detess. */
struct Request {
    std::array<TensorSpec, 1> inputs;
    std::array<TensorSpec, 1> outputs;
    Params params;
};

/* A checked DetessDequant plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_detessdequant_plan *handle) noexcept : handle_(handle) {}
    const simak_detessdequant_plan *get() const noexcept { return handle_.get(); }
    std::uint64_t input_capacity() const noexcept {
        return simak_detessdequant_plan_input_capacity(get());
    }
    std::uint64_t output_span() const noexcept {
        return simak_detessdequant_plan_output_span(get());
    }

private:
    simak::detail::Handle<simak_detessdequant_plan, simak_detessdequant_plan_clone,
                          simak_detessdequant_plan_free>
        handle_;
};

/* Admits a DetessDequant request (SPEC §12, §12.1, §12.2). */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    auto ports = simak::detail::untiled_ports(request.inputs[0], request.outputs[0]);
    if (auto *e = std::get_if<Error>(&ports)) return *e;
    auto &u = std::get<simak::detail::UntiledPorts>(ports);
    simak_dequant_params p =
        simak::detail::dequant_params_of(request.params.multiplier, request.params.zero_point);
    simak_detessdequant_plan *plan = nullptr;
    simak_error error;
    if (simak_detessdequant_plan_new(&u.input, &u.output, &u.layout, &p, &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}

}  // namespace detessdequant

namespace preproc {

/* A frame's pixel format (SPEC §13); the values are the C ABI's codes. */
enum class Format : std::uint32_t {
    RGB8 = SIMAK_PREPROC_RGB8,
    BGR8 = SIMAK_PREPROC_BGR8,
    RGBX8 = SIMAK_PREPROC_RGBX8,
    BGRX8 = SIMAK_PREPROC_BGRX8,
    GRAY8 = SIMAK_PREPROC_GRAY8,
    NV12 = SIMAK_PREPROC_NV12,
    I420 = SIMAK_PREPROC_I420,
};

/* What the op writes over [H', W', C] (or [N, H', W', C]): FP32 or INT8 (Quant), strided;
 * INT8 (QuantTess) or BF16 (CastTess), MlaTiled. */
enum class To : std::uint32_t {
    F32 = SIMAK_PREPROC_TO_F32,
    I8 = SIMAK_PREPROC_TO_I8,
    QuantTess = SIMAK_PREPROC_TO_QUANTTESS,
    CastTess = SIMAK_PREPROC_TO_CASTTESS,
};

/* One plane: byte offset from the frame's start and row stride in bytes. */
struct Plane {
    std::uint64_t offset = 0;
    std::uint64_t row_stride = 0;
};

/* A frame (or batch) in one input buffer: planes Y (or the interleaved plane), then UV
 * (NV12) or U, V (I420). Frame::packed gives OpenCV's single-array layout. */
struct Frame {
    Format format = Format::RGB8;
    std::uint64_t height = 0;
    std::uint64_t width = 0;
    std::array<Plane, 3> planes{};
    /* A batch of N frames: output [N, H', W', C]. */
    std::optional<std::uint64_t> batch;
    std::uint64_t frame_stride = 0;

    static Frame packed(Format format, std::uint64_t height, std::uint64_t width) {
        simak_preproc_frame f =
            simak_preproc_frame_packed(static_cast<std::uint32_t>(format), height, width);
        Frame out;
        out.format = format;
        out.height = height;
        out.width = width;
        for (std::size_t k = 0; k < 3; ++k) {
            out.planes[k].offset = f.planes[k].offset;
            out.planes[k].row_stride = f.planes[k].row_stride;
        }
        out.frame_stride = f.frame_stride;
        return out;
    }
};

/* Letterbox margins in output pixels. */
struct Border {
    std::uint64_t top = 0, bottom = 0, left = 0, right = 0;
};

/* A Preproc request (SPEC §13): n = ((p / divisor) - mean_c) / std_c in binary32 per output
 * channel; mean, std and pad_value hold one value or one per output channel (3, or 1 for
 * GRAY8). `params` applies to I8 and QuantTess, `layout` to the tiled outputs (taken as
 * given: SPEC §13's default roles {-1, 0, 1, 2}, or {-1, 1, 2, 3} for a batch, come from
 * default_layout below; a default-constructed MlaTiled has every role absent), `strides`
 * to the strided outputs (empty: contiguous). */
struct Request {
    Frame frame;
    float divisor = 255.0f;
    std::vector<float> mean{0.0f};
    std::vector<float> std{1.0f};
    bool bgr = false;
    Border border;
    std::vector<std::uint8_t> pad_value{0};
    To to = To::F32;
    std::optional<Strides> strides;
    quant::Params params{0.0f};
    MlaTiled layout;
};

/* The tiled layout with SPEC §13's default roles: axes {-1, 0, 1, 2} for [H', W', C], or
 * {-1, 1, 2, 3} for a batch [N, H', W', C]; the given tile and channel encoding. */
inline MlaTiled default_layout(bool batch, std::array<std::uint32_t, 4> tile,
                               Channels channels = Channels::Compact) {
    MlaTiled layout;
    layout.axes = batch ? std::array<int, 4>{{-1, 1, 2, 3}} : std::array<int, 4>{{-1, 0, 1, 2}};
    layout.tile_shape = tile;
    layout.channels = channels;
    return layout;
}

/* A checked Preproc plan (shared, immutable). */
class Plan {
public:
    explicit Plan(simak_preproc_plan *handle) noexcept : handle_(handle) {}
    const simak_preproc_plan *get() const noexcept { return handle_.get(); }
    /* Bytes of the frame buffer the call reads, and of output storage it writes. */
    std::uint64_t input_span() const noexcept { return simak_preproc_plan_input_span(get()); }
    std::uint64_t output_span() const noexcept { return simak_preproc_plan_output_span(get()); }
    /* The logical output extents [H', W', C] or [N, H', W', C]. */
    std::vector<std::uint64_t> output_shape() const {
        std::array<std::uint64_t, 4> e{};
        std::uint32_t rank = 0;
        if (simak_preproc_plan_output_extents(get(), e.data(), e.size(), &rank, nullptr) != 0) {
            return {};
        }
        return std::vector<std::uint64_t>(e.begin(), e.begin() + rank);
    }

private:
    simak::detail::Handle<simak_preproc_plan, simak_preproc_plan_clone, simak_preproc_plan_free>
        handle_;
};

/* Admits a Preproc request (SPEC §13): frame geometry, parameters, output. */
inline std::variant<Plan, Error> check_inference(const Request &request) {
    const Request &r = request;
    simak_preproc_frame f =
        simak_preproc_frame_packed(static_cast<std::uint32_t>(r.frame.format), 0, 0);
    f.format = static_cast<std::uint32_t>(r.frame.format);
    f.height = r.frame.height;
    f.width = r.frame.width;
    for (std::size_t k = 0; k < 3; ++k) {
        f.planes[k].offset = r.frame.planes[k].offset;
        f.planes[k].row_stride = r.frame.planes[k].row_stride;
    }
    f.has_batch = r.frame.batch.has_value() ? 1u : 0u;
    f.batch = r.frame.batch.value_or(0);
    f.frame_stride = r.frame.frame_stride;
    simak_preproc_params p = simak_preproc_params_default();
    p.divisor = r.divisor;
    p.mean_count = static_cast<std::uint32_t>(r.mean.size());
    p.std_count = static_cast<std::uint32_t>(r.std.size());
    p.pad_count = static_cast<std::uint32_t>(r.pad_value.size());
    for (std::size_t k = 0; k < 3; ++k) {
        p.mean[k] = k < r.mean.size() ? r.mean[k] : 0.0f;
        p.std[k] = k < r.std.size() ? r.std[k] : 0.0f;
        p.pad_value[k] = k < r.pad_value.size() ? r.pad_value[k] : 0;
    }
    p.bgr = r.bgr ? 1u : 0u;
    p.border_top = r.border.top;
    p.border_bottom = r.border.bottom;
    p.border_left = r.border.left;
    p.border_right = r.border.right;
    simak_preproc_output o{};
    o.kind = static_cast<std::uint32_t>(r.to);
    if (r.strides) {
        o.strides = r.strides->data();
        o.strides_count = static_cast<std::uint32_t>(r.strides->size());
    }
    o.params = simak::detail::params_of(r.params.multiplier, r.params.zero_point,
                                        r.params.rounding);
    o.layout = simak_mla_tiled_default();
    if (r.to == To::QuantTess || r.to == To::CastTess) {
        if (r.layout.channels == Channels::CBlock16) {
            return Error(0x220,
                         "Preproc writes Compact or PadTo16 tiles; CBlock16 is the MLA's output "
                         "encoding only (SPEC §12.1)");
        }
        if (r.layout.tile_align != TileAlign::Bytes16) {
            return Error(0x221,
                         "Preproc writes tiles aligned to 16 bytes; tile alignment 1 is the "
                         "MLA's outputs' only (SPEC §12.1)");
        }
        for (std::size_t k = 0; k < 4; ++k) {
            o.layout.axes[k] = r.layout.axes[k];
            o.layout.tile[k] = r.layout.tile_shape[k];
        }
        o.layout.pad_to_16 = static_cast<std::uint32_t>(r.layout.channels);
    }
    simak_preproc_plan *plan = nullptr;
    simak_error error;
    if (simak_preproc_plan_new(&f, &p, &o, &plan, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Plan(plan);
}

}  // namespace preproc

}  // namespace ops

/* The channel encoding a model archive names with its flags (align_c16, cblock) (SPEC
 * §12.1): (false, true) names none (0x222). */
inline std::variant<Channels, Error> channels_from_flags(bool align_c16, bool cblock) {
    std::uint32_t code = 0;
    simak_error error;
    if (simak_channels_from_flags(align_c16 ? 1u : 0u, cblock ? 1u : 0u, &code, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return static_cast<Channels>(code);
}

namespace a65 {

namespace detail {
template <class Fn, class Plan>
Status run(Fn fn, const Plan &plan, const std::array<ConstHostBuffer, 1> &inputs,
           const std::array<HostBuffer, 1> &outputs) {
    simak_error error;
    if (fn(plan.get(), inputs[0].data, inputs[0].bytes, outputs[0].data, outputs[0].bytes,
           &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}
}  // namespace detail

/* Each op: prepare(plan) gives a Prepared that shares the plan (the C plan is prepared for
 * the A65 when it is checked); execute checks the buffers (null, capacity, alignment,
 * address overflow, overlap, then the FP environment for SIMD routes) before any write. */
namespace quant {

using Params = ops::quant::Params;

class Prepared {
public:
    explicit Prepared(ops::quant::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::quant::Plan &plan() const noexcept { return plan_; }
    const simak_quant_plan *get() const noexcept { return plan_.get(); }
    /* The selected route, e.g. "x86_64-avx512" (diagnostic, not an API contract). */
    const char *implementation() const noexcept { return simak_quant_plan_implementation(get()); }

private:
    ops::quant::Plan plan_;
};

inline Prepared prepare(const ops::quant::Plan &plan) { return Prepared(plan); }

/* The exact integer path for every element (same bytes, FP-environment independent): for
 * programs that run with flush-to-zero (-ffast-math). */
inline std::variant<Prepared, Error> check_inference_exact(const ops::quant::Request &request) {
    auto checked = ops::quant::detail::check(request, SIMAK_PLAN_EXACT);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::quant::Plan>(std::move(checked)));
}

/* Admission and preparation in one call. */
inline std::variant<Prepared, Error> check_inference(const ops::quant::Request &request) {
    auto checked = ops::quant::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::quant::Plan>(std::move(checked)));
}

inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_quant_execute, prepared, inputs, outputs);
}

}  // namespace quant

namespace casttess {

using Params = ops::casttess::Params;

class Prepared {
public:
    explicit Prepared(ops::casttess::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::casttess::Plan &plan() const noexcept { return plan_; }
    const simak_casttess_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_casttess_plan_implementation(get());
    }

private:
    ops::casttess::Plan plan_;
};

inline Prepared prepare(const ops::casttess::Plan &plan) { return Prepared(plan); }

inline std::variant<Prepared, Error> check_inference(const ops::casttess::Request &request) {
    auto checked = ops::casttess::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::casttess::Plan>(std::move(checked)));
}

inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_casttess_execute, prepared, inputs, outputs);
}

}  // namespace casttess

namespace quanttess {

using Params = ops::quanttess::Params;

class Prepared {
public:
    explicit Prepared(ops::quanttess::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::quanttess::Plan &plan() const noexcept { return plan_; }
    const simak_quanttess_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_quanttess_plan_implementation(get());
    }

private:
    ops::quanttess::Plan plan_;
};

inline Prepared prepare(const ops::quanttess::Plan &plan) { return Prepared(plan); }

/* The exact integer path for every element (FP-environment independent). */
inline std::variant<Prepared, Error> check_inference_exact(
    const ops::quanttess::Request &request) {
    auto checked = ops::quanttess::detail::check(request, SIMAK_PLAN_EXACT);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::quanttess::Plan>(std::move(checked)));
}

inline std::variant<Prepared, Error> check_inference(const ops::quanttess::Request &request) {
    auto checked = ops::quanttess::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::quanttess::Plan>(std::move(checked)));
}

inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_quanttess_execute, prepared, inputs, outputs);
}

}  // namespace quanttess

/* The output side (SPEC §12). execute checks the buffers (null, capacity, alignment,
 * address overflow, overlap) before anything is read or written, and never fails because
 * of the FP environment. A head of a multi-head OFM is given as its own bytes:
 * ConstHostBuffer{ofm + offset, ofm_bytes - offset}. */
namespace detess {

using Params = ops::detess::Params;

class Prepared {
public:
    explicit Prepared(ops::detess::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::detess::Plan &plan() const noexcept { return plan_; }
    const simak_detess_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_detess_plan_implementation(get());
    }

private:
    ops::detess::Plan plan_;
};

inline Prepared prepare(const ops::detess::Plan &plan) { return Prepared(plan); }

inline std::variant<Prepared, Error> check_inference(const ops::detess::Request &request) {
    auto checked = ops::detess::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::detess::Plan>(std::move(checked)));
}

/* The tiled head (at least input_capacity() bytes, 16-byte aligned for tile
 * alignment 16) into the output (at least output_span() bytes). */
inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_detess_execute, prepared, inputs, outputs);
}

}  // namespace detess

namespace detesscast {

using Params = ops::detesscast::Params;

class Prepared {
public:
    explicit Prepared(ops::detesscast::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::detesscast::Plan &plan() const noexcept { return plan_; }
    const simak_detesscast_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_detesscast_plan_implementation(get());
    }

private:
    ops::detesscast::Plan plan_;
};

inline Prepared prepare(const ops::detesscast::Plan &plan) { return Prepared(plan); }

inline std::variant<Prepared, Error> check_inference(const ops::detesscast::Request &request) {
    auto checked = ops::detesscast::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::detesscast::Plan>(std::move(checked)));
}

/* As detess::execute; FP32 output, `bits << 16`. */
inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_detesscast_execute, prepared, inputs, outputs);
}

}  // namespace detesscast

namespace detessdequant {

using Params = ops::detessdequant::Params;

class Prepared {
public:
    explicit Prepared(ops::detessdequant::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::detessdequant::Plan &plan() const noexcept { return plan_; }
    const simak_detessdequant_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_detessdequant_plan_implementation(get());
    }

private:
    ops::detessdequant::Plan plan_;
};

inline Prepared prepare(const ops::detessdequant::Plan &plan) { return Prepared(plan); }

inline std::variant<Prepared, Error> check_inference(const ops::detessdequant::Request &request) {
    auto checked = ops::detessdequant::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::detessdequant::Plan>(std::move(checked)));
}

/* As detess::execute; dequantized per SPEC §12.2. */
inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_detessdequant_execute, prepared, inputs, outputs);
}

}  // namespace detessdequant

namespace dequant {

using Params = ops::dequant::Params;

class Prepared {
public:
    explicit Prepared(ops::dequant::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::dequant::Plan &plan() const noexcept { return plan_; }
    const simak_dequant_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_dequant_plan_implementation(get());
    }

private:
    ops::dequant::Plan plan_;
};

inline Prepared prepare(const ops::dequant::Plan &plan) { return Prepared(plan); }

inline std::variant<Prepared, Error> check_inference(const ops::dequant::Request &request) {
    auto checked = ops::dequant::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::dequant::Plan>(std::move(checked)));
}

/* Codes (input_span() bytes, aligned to their size) into the output. */
inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_dequant_execute, prepared, inputs, outputs);
}

}  // namespace dequant

namespace preproc {

class Prepared {
public:
    explicit Prepared(ops::preproc::Plan plan) noexcept : plan_(std::move(plan)) {}
    const ops::preproc::Plan &plan() const noexcept { return plan_; }
    const simak_preproc_plan *get() const noexcept { return plan_.get(); }
    const char *implementation() const noexcept {
        return simak_preproc_plan_implementation(get());
    }

private:
    ops::preproc::Plan plan_;
};

inline Prepared prepare(const ops::preproc::Plan &plan) { return Prepared(plan); }

/* Admission and preparation in one call. */
inline std::variant<Prepared, Error> check_inference(const ops::preproc::Request &request) {
    auto checked = ops::preproc::check_inference(request);
    if (auto *e = std::get_if<Error>(&checked)) return *e;
    return Prepared(std::get<ops::preproc::Plan>(std::move(checked)));
}

/* inputs[0]: the one buffer holding every plane of the frame(s) (any alignment);
 * outputs[0]: the output storage (4-byte aligned for F32, 16 for the tiled outputs). NULL
 * and short buffers are refused before any write. */
inline Status execute(const Prepared &prepared, const std::array<ConstHostBuffer, 1> &inputs,
                      const std::array<HostBuffer, 1> &outputs) {
    return detail::run(simak_preproc_execute, prepared, inputs, outputs);
}

}  // namespace preproc

}  // namespace a65

namespace ev74 {

/* A descriptor's bytes (224 for Quant v1 and the Detess-family entries, 216 for
 * CastTess v1, 368 for Preproc v1). */
template <std::size_t N>
struct Packet {
    std::array<std::uint8_t, N> bytes{};
};

namespace quant {

using Packet = ev74::Packet<SIMAK_EV74_QUANT_DESCRIPTOR_SIZE>;

/* The EV74 representability check, then the relocatable descriptor (addresses 0). No
 * device work runs. */
inline std::variant<Packet, Error> encode_relocatable(const ops::quant::Plan &plan) {
    Packet packet;
    simak_error error;
    if (simak_ev74_quant_encode_relocatable_into(plan.get(), packet.bytes.data(),
                                                   packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return packet;
}

/* Binds a relocatable packet of `plan` to resolved EV-visible regions (SPEC §6). */
inline std::variant<Packet, Error> bind(const ops::quant::Plan &plan, const Packet &encoded,
                                        DeviceRegion input, DeviceRegion output) {
    Packet bound;
    simak_error error;
    if (simak_ev74_quant_bind(plan.get(), encoded.bytes.data(), input.address, input.bytes,
                              output.address, output.bytes, bound.bytes.data(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return bound;
}

/* The device decoder's checks on a packet (SPEC §7). */
inline Status validate(const Packet &packet) {
    simak_error error;
    if (simak_ev74_quant_validate(packet.bytes.data(), packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}

}  // namespace quant

namespace casttess {

using Packet = ev74::Packet<SIMAK_EV74_CASTTESS_DESCRIPTOR_SIZE>;

inline std::variant<Packet, Error> encode_relocatable(const ops::casttess::Plan &plan) {
    Packet packet;
    simak_error error;
    if (simak_ev74_casttess_encode_relocatable_into(plan.get(), packet.bytes.data(),
                                                   packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return packet;
}

inline std::variant<Packet, Error> bind(const ops::casttess::Plan &plan, const Packet &encoded,
                                        DeviceRegion input, DeviceRegion output) {
    Packet bound;
    simak_error error;
    if (simak_ev74_casttess_bind(plan.get(), encoded.bytes.data(), input.address, input.bytes,
                                 output.address, output.bytes, bound.bytes.data(),
                                 &error) != 0) {
        return simak::detail::error_of(error);
    }
    return bound;
}

inline Status validate(const Packet &packet) {
    simak_error error;
    if (simak_ev74_casttess_validate(packet.bytes.data(), packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}

}  // namespace casttess

/* Detess v1 (224 bytes, one descriptor per head). Every write takes its buffer's length. */
namespace detess {

using Packet = ev74::Packet<SIMAK_EV74_DETESS_DESCRIPTOR_SIZE>;

inline std::variant<Packet, Error> encode_relocatable(const ops::detess::Plan &plan) {
    Packet packet;
    simak_error error;
    if (simak_ev74_detess_encode_relocatable(plan.get(), packet.bytes.data(), packet.bytes.size(),
                                          &error) != 0) {
        return simak::detail::error_of(error);
    }
    return packet;
}

/* The tiled input (the head) is aligned to 16 bytes at tile alignment 16, else to its
 * element size; the output to its element size. */
inline std::variant<Packet, Error> bind(const ops::detess::Plan &plan, const Packet &encoded,
                                        DeviceRegion input, DeviceRegion output) {
    Packet bound;
    simak_error error;
    if (simak_ev74_detess_bind(plan.get(), encoded.bytes.data(), input.address, input.bytes,
                            output.address, output.bytes, bound.bytes.data(), bound.bytes.size(),
                            &error) != 0) {
        return simak::detail::error_of(error);
    }
    return bound;
}

inline Status validate(const Packet &packet) {
    simak_error error;
    if (simak_ev74_detess_validate(packet.bytes.data(), packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}

/* The descriptor's fields after the decoder's rules (all but the bound-address one). */
inline std::variant<simak_ev74_detess_fields, Error> decode(const Packet &packet) {
    simak_ev74_detess_fields fields;
    simak_error error;
    if (simak_ev74_detess_decode(packet.bytes.data(), packet.bytes.size(), &fields, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return fields;
}

}  // namespace detess

/* DetessCast v1 (224 bytes, one descriptor per head). Every write takes its buffer's length. */
namespace detesscast {

using Packet = ev74::Packet<SIMAK_EV74_DETESS_DESCRIPTOR_SIZE>;

inline std::variant<Packet, Error> encode_relocatable(const ops::detesscast::Plan &plan) {
    Packet packet;
    simak_error error;
    if (simak_ev74_detesscast_encode_relocatable(plan.get(), packet.bytes.data(), packet.bytes.size(),
                                          &error) != 0) {
        return simak::detail::error_of(error);
    }
    return packet;
}

/* The tiled input (the head) is aligned to 16 bytes at tile alignment 16, else to its
 * element size; the output to its element size. */
inline std::variant<Packet, Error> bind(const ops::detesscast::Plan &plan, const Packet &encoded,
                                        DeviceRegion input, DeviceRegion output) {
    Packet bound;
    simak_error error;
    if (simak_ev74_detesscast_bind(plan.get(), encoded.bytes.data(), input.address, input.bytes,
                            output.address, output.bytes, bound.bytes.data(), bound.bytes.size(),
                            &error) != 0) {
        return simak::detail::error_of(error);
    }
    return bound;
}

inline Status validate(const Packet &packet) {
    simak_error error;
    if (simak_ev74_detesscast_validate(packet.bytes.data(), packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}

/* The descriptor's fields after the decoder's rules (all but the bound-address one). */
inline std::variant<simak_ev74_detess_fields, Error> decode(const Packet &packet) {
    simak_ev74_detess_fields fields;
    simak_error error;
    if (simak_ev74_detesscast_decode(packet.bytes.data(), packet.bytes.size(), &fields, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return fields;
}

}  // namespace detesscast

/* DetessDequant v1 (224 bytes, one descriptor per head). Every write takes its buffer's length. */
namespace detessdequant {

using Packet = ev74::Packet<SIMAK_EV74_DETESS_DESCRIPTOR_SIZE>;

inline std::variant<Packet, Error> encode_relocatable(const ops::detessdequant::Plan &plan) {
    Packet packet;
    simak_error error;
    if (simak_ev74_detessdequant_encode_relocatable(plan.get(), packet.bytes.data(), packet.bytes.size(),
                                          &error) != 0) {
        return simak::detail::error_of(error);
    }
    return packet;
}

/* The tiled input (the head) is aligned to 16 bytes at tile alignment 16, else to its
 * element size; the output to its element size. */
inline std::variant<Packet, Error> bind(const ops::detessdequant::Plan &plan, const Packet &encoded,
                                        DeviceRegion input, DeviceRegion output) {
    Packet bound;
    simak_error error;
    if (simak_ev74_detessdequant_bind(plan.get(), encoded.bytes.data(), input.address, input.bytes,
                            output.address, output.bytes, bound.bytes.data(), bound.bytes.size(),
                            &error) != 0) {
        return simak::detail::error_of(error);
    }
    return bound;
}

inline Status validate(const Packet &packet) {
    simak_error error;
    if (simak_ev74_detessdequant_validate(packet.bytes.data(), packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}

/* The descriptor's fields after the decoder's rules (all but the bound-address one). */
inline std::variant<simak_ev74_detess_fields, Error> decode(const Packet &packet) {
    simak_ev74_detess_fields fields;
    simak_error error;
    if (simak_ev74_detessdequant_decode(packet.bytes.data(), packet.bytes.size(), &fields, &error) != 0) {
        return simak::detail::error_of(error);
    }
    return fields;
}

}  // namespace detessdequant

/* Preproc v1 (368 bytes, one descriptor per call: a frame or a batch). Every write takes
 * its buffer's length. */
namespace preproc {

using Packet = ev74::Packet<SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE>;

inline std::variant<Packet, Error> encode_relocatable(const ops::preproc::Plan &plan) {
    Packet packet;
    simak_error error;
    if (simak_ev74_preproc_encode_relocatable(plan.get(), packet.bytes.data(),
                                              packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return packet;
}

/* The frame binds at any byte; the output at its element size, or 16 bytes when tiled. */
inline std::variant<Packet, Error> bind(const ops::preproc::Plan &plan, const Packet &encoded,
                                        DeviceRegion input, DeviceRegion output) {
    Packet bound;
    simak_error error;
    if (simak_ev74_preproc_bind(plan.get(), encoded.bytes.data(), input.address, input.bytes,
                                output.address, output.bytes, bound.bytes.data(),
                                bound.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return bound;
}

inline Status validate(const Packet &packet) {
    simak_error error;
    if (simak_ev74_preproc_validate(packet.bytes.data(), packet.bytes.size(), &error) != 0) {
        return simak::detail::error_of(error);
    }
    return Status();
}

/* The descriptor's fields after the decoder's rules (all but the bound-address one). */
inline std::variant<simak_ev74_preproc_fields, Error> decode(const Packet &packet) {
    simak_ev74_preproc_fields fields;
    simak_error error;
    if (simak_ev74_preproc_decode(packet.bytes.data(), packet.bytes.size(), &fields, &error) !=
        0) {
        return simak::detail::error_of(error);
    }
    return fields;
}

}  // namespace preproc

}  // namespace ev74

/* One stage of a Model (SPEC §14): an input stage turns a frame or float tensor into IFM
 * bytes, an output stage one head of the OFM into a dense tensor. */
struct ModelStage {
    /* The model input's or output's node name. */
    std::string name;
    /* "preproc", "quant", "quanttess", "casttess", "detess", "detesscast", "detessdequant"
     * or "dequant". */
    std::string op;
    /* Input stage: what the caller gives (a frame [N, H, W, C], or [N, H*3/2, W] for NV12
     * and I420; or the float tensor's shape); output stage: the dense tensor's shape. */
    std::vector<std::uint64_t> shape;
    DType dtype = DType::Float32;
    /* Input stage: the IFM's bytes and offset among the MLA's inputs; output stage: the
     * head's bytes and offset in the OFM. */
    std::uint64_t size = 0;
    std::uint64_t offset = 0;
    /* Bytes of the caller's input (frame or tensor; the OFM head) and bytes written (the
     * IFM; the dense tensor). */
    std::uint64_t input_bytes = 0;
    std::uint64_t output_bytes = 0;
    /* Whether the stage's op has an EV74 entry (the A65 runs every stage). */
    bool ev74 = false;
    /* The plugins the stage fuses, in chain order. */
    std::vector<std::string> plugins;
    /* The op's parameters as (name, value) text, in a fixed order. */
    std::vector<std::pair<std::string, std::string>> params;
    /* The SPEC §14 rules and defaults the stage used, in words. */
    std::vector<std::string> rules;
};

/* One output of Model::postprocess: the output's name, shape, dtype and row-major bytes. */
struct ModelTensor {
    std::string name;
    std::vector<std::uint64_t> shape;
    DType dtype = DType::Float32;
    std::vector<std::uint8_t> bytes;
};

/* A model read from its manifest (`*_mpk.json`, SPEC §14): ordered input stages (frame or
 * float tensor -> the IFM bytes the MLA reads) and output stages (the OFM buffer -> one dense
 * tensor per head), each a prepared op, run on the A65. Shares its handle like a Plan
 * (immutable; usable from several threads at once). Errors name the plugin and the key;
 * codes 0x700-0x710 of docs/errors.md, or an op's own. */
class Model {
public:
    /* `flags`: 0, or SIMAK_PLAN_EXACT for the Quant and QuantTess input stages on the exact
     * integer path (the same bytes in any FP environment: a program built with -ffast-math,
     * whose calls the SIMD routes refuse with 0x408). */
    static std::variant<Model, Error> from_mpk(const std::string &path, std::uint32_t flags = 0) {
        simak_model *model = nullptr;
        simak_error error;
        if (simak_model_from_mpk(path.c_str(), flags, &model, &error) != 0) {
            return detail::error_of(error);
        }
        return Model(model);
    }

    static std::variant<Model, Error> from_mpk_json(std::string_view text,
                                                    std::uint32_t flags = 0) {
        simak_model *model = nullptr;
        simak_error error;
        if (simak_model_from_mpk_json(text.data(), text.size(), flags, &model, &error) != 0) {
            return detail::error_of(error);
        }
        return Model(model);
    }

    /* The C handle; null after the Model was moved from (every call then fails with 0x603
     * or gives an empty result). */
    const simak_model *get() const noexcept { return handle_.get(); }
    /* The manifest's name (empty when it has none). */
    std::string name() const {
        const char *n = simak_model_name(get());
        return n ? std::string(n) : std::string();
    }
    /* Frames per call. */
    std::uint64_t batch() const noexcept { return simak_model_batch(get()); }
    /* Bytes of all IFMs, back to back in the MLA's input order. */
    std::uint64_t ifm_size() const noexcept { return simak_model_ifm_size(get()); }
    /* Bytes of the OFM buffer (every head). */
    std::uint64_t ofm_size() const noexcept { return simak_model_ofm_size(get()); }
    std::vector<ModelStage> inputs() const {
        return stages(simak_model_input_count(get()), simak_model_input);
    }
    std::vector<ModelStage> outputs() const {
        return stages(simak_model_output_count(get()), simak_model_output);
    }

    /* Input stage `input`: `frame` (exactly the stage's input_bytes, row-major) -> `ifm`
     * (exactly its size, aligned to 16 for a tiled IFM). Nothing is written on failure. */
    Status preprocess_into(std::size_t input, ConstHostBuffer frame, HostBuffer ifm,
                           unsigned threads = 1) const {
        simak_error error;
        if (simak_model_preprocess(get(), input, frame.data, frame.bytes, ifm.data, ifm.bytes,
                                   threads, &error) != 0) {
            return detail::error_of(error);
        }
        return Status();
    }

    /* The IFM bytes of input stage `input` in a new buffer (operator new's alignment, 16). */
    std::variant<std::vector<std::uint8_t>, Error> preprocess(std::size_t input,
                                                              ConstHostBuffer frame,
                                                              unsigned threads = 1) const {
        simak_model_stage stage;
        simak_error error;
        if (simak_model_input(get(), input, &stage, &error) != 0) {
            return detail::error_of(error);
        }
        std::vector<std::uint8_t> ifm(static_cast<std::size_t>(stage.size));
        Status s = preprocess_into(input, frame, HostBuffer{ifm.data(), ifm.size()}, threads);
        if (!s) return s.error();
        return ifm;
    }

    /* Every output stage: `ofm` (exactly ofm_size() bytes, aligned to 16 when a head has
     * tile alignment 16) -> `outputs[i]` (exactly output i's output_bytes, at any address).
     * Every buffer is checked before anything is written. */
    Status postprocess_into(ConstHostBuffer ofm, const std::vector<HostBuffer> &outputs,
                            unsigned threads = 1) const {
        std::vector<void *> data;
        std::vector<std::size_t> bytes;
        for (const HostBuffer &b : outputs) {
            data.push_back(b.data);
            bytes.push_back(b.bytes);
        }
        simak_error error;
        if (simak_model_postprocess(get(), ofm.data, ofm.bytes, data.data(), bytes.data(),
                                    outputs.size(), threads, &error) != 0) {
            return detail::error_of(error);
        }
        return Status();
    }

    /* Every output as a new tensor, in the model's output order. A misaligned `ofm` is
     * copied once into an aligned buffer. */
    std::variant<std::vector<ModelTensor>, Error> postprocess(ConstHostBuffer ofm,
                                                              unsigned threads = 1) const {
        std::vector<std::uint8_t> copy;
        if (ofm.data != nullptr && reinterpret_cast<std::uintptr_t>(ofm.data) % 16 != 0) {
            const auto *p = static_cast<const std::uint8_t *>(ofm.data);
            copy.assign(p, p + ofm.bytes);
            ofm.data = copy.data();
        }
        std::vector<ModelTensor> tensors;
        std::vector<HostBuffer> buffers;
        for (ModelStage &s : outputs()) {
            ModelTensor t;
            t.name = std::move(s.name);
            t.shape = std::move(s.shape);
            t.dtype = s.dtype;
            t.bytes.resize(static_cast<std::size_t>(s.output_bytes));
            tensors.push_back(std::move(t));
        }
        for (ModelTensor &t : tensors) buffers.push_back(HostBuffer{t.bytes.data(), t.bytes.size()});
        Status s = postprocess_into(ofm, buffers, threads);
        if (!s) return s.error();
        return tensors;
    }

private:
    static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 16,
                  "Model::preprocess returns tiled IFMs in std::vector storage");

    explicit Model(simak_model *handle) noexcept : handle_(handle) {}

    using Query = std::uint32_t (*)(const simak_model *, std::size_t, simak_model_stage *,
                                    simak_error *);

    std::vector<ModelStage> stages(std::size_t count, Query query) const {
        std::vector<ModelStage> out;
        for (std::size_t i = 0; i < count; ++i) {
            simak_model_stage s;
            simak_error error;
            if (query(get(), i, &s, &error) != 0) break;
            ModelStage m;
            m.name = s.name;
            m.op = s.op;
            m.shape.assign(s.shape, s.shape + s.rank);
            m.dtype = static_cast<DType>(s.dtype);
            m.size = s.size;
            m.offset = s.offset;
            m.input_bytes = s.input_bytes;
            m.output_bytes = s.output_bytes;
            m.ev74 = s.ev74 != 0;
            m.plugins.assign(s.plugins, s.plugins + s.plugin_count);
            for (std::size_t k = 0; k < s.param_count; ++k) {
                m.params.emplace_back(s.param_names[k], s.param_values[k]);
            }
            m.rules.assign(s.rules, s.rules + s.rule_count);
            out.push_back(std::move(m));
        }
        return out;
    }

    detail::Handle<simak_model, simak_model_clone, simak_model_free> handle_;
};

/* The library version, e.g. "0.1.0". */
inline const char *version() noexcept { return simak_version(); }

}  // namespace simak

#endif /* SIMAK_HPP */
