// The seeds' EV74 CastTess example (see README.md): unchanged but for the include lines and
// the namespace alias, wrapped in a function returning Status.
#include <array>
#include <simak/simak.hpp>

namespace k = simak;
namespace op = k::ops::casttess;
namespace ev = k::ev74::casttess;

k::Status seed_ev74_casttess() {
k::MlaTiled tiled;
tiled.axes = {-1, -1, 0, 1}; // Shape [W,C], with an explicit channel axis.
tiled.tile_shape = {1, 1, 2, 3};
const std::array inputs{k::TensorSpec{{2, 3}, k::DType::Float32}};
const std::array outputs{k::TensorSpec{{2, 3}, k::DType::BFloat16, tiled}};
const op::Request request{inputs, outputs, op::Params{}};
auto checked = op::check_inference(request);
if (const auto *error = std::get_if<k::Error>(&checked)) return *error;
const auto &plan = std::get<op::Plan>(checked);
auto encoded = ev::encode_relocatable(plan);
if (const auto *error = std::get_if<k::Error>(&encoded)) return *error;
// Encoding leaves device addresses unbound; no device work has run.
return {};
}
