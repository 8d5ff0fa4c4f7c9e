// Small shapes shared by the exports added for nvidia-smi's wider view (board_exports.cc,
// mode_exports.cc, ecc_exports.cc, sample_exports.cc, field_exports.cc): one value out, a fixed
// answer, and the driver-profile gate for functions newer than driver 535.
#pragma once

#include <string_view>

#include "nvml/nvml_abi.h"
#include "sim/board_facts.h"
#include "sim/library_state.h"

namespace gpuscope::sim {

// Driver 535 predates these functions: its library answers NVML_ERROR_FUNCTION_NOT_FOUND for them
// (as a binding that resolves them lazily sees).
inline bool predates(const Simulator& sim) { return sim.scenario().node.driver_profile == DriverProfile::kR535; }

// NVLink as this GPU has it: the model's links unless the scenario cut them (`nvlink: false`, an SXM
// board passed through to a VM alone).
inline unsigned nvlink_links(const SimDevice& d) { return d.spec.nvlink ? d.model.nvlink_links : 0; }

// One value out: value(Simulator&, SimDevice&, double t) -> T, or a return code when the board does not
// answer (std::expected-like via a pair is overkill here: `supported` says whether it does).
template <class T, class Value>
nvmlReturn_t out_value(std::string_view function, nvmlDevice_t device, T* out, Value&& value, bool newer = false) {
  return device_call(function, device, [&](Simulator& sim, SimDevice& d, double t) -> nvmlReturn_t {
    if (newer && predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = static_cast<T>(value(sim, d, t));
    return NVML_SUCCESS;
  });
}

// A query the board does not support: NOT_SUPPORTED once the arguments are valid.
inline nvmlReturn_t not_supported(std::string_view function, nvmlDevice_t device, bool args_ok, bool newer = false) {
  return device_call(function, device, [&](Simulator& sim, SimDevice&, double) -> nvmlReturn_t {
    if (newer && predates(sim)) return NVML_ERROR_FUNCTION_NOT_FOUND;
    return args_ok ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT;
  });
}

}  // namespace gpuscope::sim
