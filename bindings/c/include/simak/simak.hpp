/*
 * simak.hpp: a header-only C++17 wrapper over the C ABI of simak (simak.h), shaped after the
 * C++ API that simak re-creates, so that code written for it compiles once its namespace
 * alias names `simak`:
 *
 *     simak::ops::{quant, casttess, quanttess}   Request, Params, Plan, check_inference
 *     simak::a65::{quant, casttess, quanttess}   Params, prepare, execute, check_inference
 *     simak::ev74::{quant, casttess}             encode_relocatable, bind, validate
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
#include <string>
#include <utility>
#include <variant>

#include "simak.h"

namespace simak {

/* Element types; the values are the C ABI's codes. */
enum class DType : std::uint32_t {
    BFloat16 = SIMAK_DTYPE_BF16,
    Float32 = SIMAK_DTYPE_F32,
    Float16 = SIMAK_DTYPE_F16,
    Int8 = SIMAK_DTYPE_I8,
};

/* Integer rounding of the binary32 product (SPEC §3). */
enum class Rounding : std::uint32_t {
    TowardZero = SIMAK_ROUNDING_TOWARD_ZERO,
    NearestEven = SIMAK_ROUNDING_NEAREST_EVEN,
    TowardPositive = SIMAK_ROUNDING_TOWARD_POSITIVE,
    TowardNegative = SIMAK_ROUNDING_TOWARD_NEGATIVE,
};

/* Stored channels of an MlaTiled tile: exactly, or padded with zeros to a multiple of 16. */
enum class Channels : std::uint32_t { Compact = 0, PadTo16 = 1 };

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

/* The MlaTiled layout (SPEC §5): the logical axis of each role D, H, W, C (-1 absent), the
 * tile extents and the channel mode. */
struct MlaTiled {
    std::array<int, 4> axes{{-1, -1, -1, -1}};
    std::array<std::uint32_t, 4> tile_shape{{1, 1, 1, 1}};
    Channels channels = Channels::Compact;
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
    for (std::size_t k = 0; k < 4; ++k) {
        layout.axes[k] = t.axes[k];
        layout.tile[k] = t.tile_shape[k];
    }
    layout.pad_to_16 = static_cast<std::uint32_t>(t.channels);
    return spec.raw();
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

}  // namespace ops

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

}  // namespace a65

namespace ev74 {

/* A descriptor's bytes (224 for Quant v1, 216 for CastTess v1). */
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

}  // namespace ev74

/* The library version, e.g. "0.1.0". */
inline const char *version() noexcept { return simak_version(); }

}  // namespace simak

#endif /* SIMAK_HPP */
