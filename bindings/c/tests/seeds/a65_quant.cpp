// The seeds' A65 Quant example (see README.md): unchanged but for the include line and the
// namespace alias, wrapped in a function returning Status whose parameters are the
// caller's `input_views` and `output_views`.
#include <array>
#include <simak/simak.hpp>

namespace k = simak;
namespace quant = k::a65::quant;

k::Status seed_a65_quant(const std::array<k::ConstHostBuffer, 1> &input_views,
                         const std::array<k::HostBuffer, 1> &output_views) {
const std::array inputs{
    k::TensorSpec{k::Shape{2, 3}, k::DType::BFloat16, k::Strided{{8, 2}}}};
const std::array outputs{
    k::TensorSpec{k::Shape{2, 3}, k::DType::Int8, k::Strided{{1, 2}}}};
// Shared admission is backend-neutral; A65 preparation selects computation.
auto checked = k::ops::quant::check_inference(
    {inputs, outputs, quant::Params{2.0f}});
if (auto *error = std::get_if<k::Error>(&checked)) return *error;
const auto plan = quant::prepare(std::get<k::ops::quant::Plan>(checked));

return quant::execute(plan, input_views, output_views);
}
