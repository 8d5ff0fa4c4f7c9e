// Helpers shared by the files that build `query -q`'s tree (smi_q_board.cc, smi_q_sections.cc): one
// line's node from an NVML answer or a catalog field, with nvidia-smi's N/A and error wording.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "export/machine_value.h"
#include "export/nvml_error_text.h"
#include "export/smi_q_tree.h"

namespace gpuscope::exporter::smi_q {

using model::Answer;
using model::FieldId;
using Json = nlohmann::ordered_json;

// What a leaf shows: the text after " : " and the JSON value (null: absent from the JSON).
struct SqValue {
  std::string text;
  Json json;
};

// NOT_SUPPORTED, and FUNCTION_NOT_FOUND (the library lacks the call, or it was not asked): nvidia-smi
// prints N/A. Every other code is a failed read and prints NVML's own words.
inline bool sq_unsupported(int code) { return code == 3 || code == 13; }

inline SmiQNode sq_leaf(std::string label, std::string key, SqValue value) {
  SmiQNode n;
  n.label = std::move(label);
  n.json_name = std::move(key);
  n.text = std::move(value.text);
  n.json = std::move(value.json);
  return n;
}

inline SmiQNode sq_na(std::string label, std::string key) {
  return sq_leaf(std::move(label), std::move(key), {"N/A", nullptr});
}

inline SmiQNode sq_failed(std::string label, std::string key, int code) {
  if (sq_unsupported(code)) return sq_na(std::move(label), std::move(key));
  SmiQNode n = sq_leaf(std::move(label), std::move(key), {nvml_error_text(code), nullptr});
  n.error = *n.text;
  return n;
}

inline SmiQNode sq_section(std::string label, std::string key, std::vector<SmiQNode> children) {
  SmiQNode n;
  n.label = std::move(label);
  n.json_name = std::move(key);
  n.children = std::move(children);
  return n;
}

template <class T, class F>
inline SmiQNode sq_answer(std::string label, std::string key, const Answer<T>& answer, F&& format) {
  if (answer.ok()) return sq_leaf(std::move(label), std::move(key), format(*answer.value));
  return sq_failed(std::move(label), std::move(key), answer.error);
}

// A catalog field of the reading; a GPU that is down says why on every line.
template <class F>
inline SmiQNode sq_field(const model::GpuSample& sample, FieldId id, std::string label, std::string key, F&& format) {
  if (!sample.up) {
    return sq_failed(std::move(label), std::move(key),
                     sample.down_error_code != 0 ? sample.down_error_code : kGpuIsLost);
  }
  const auto& v = sample[id];
  if (v.valid()) return sq_leaf(std::move(label), std::move(key), format(v.value));
  if (v.status == model::ValueStatus::kError) return sq_failed(std::move(label), std::move(key), v.error_code);
  return sq_na(std::move(label), std::move(key));
}

// "81559 MiB"; `unit` empty: the bare number.
inline SqValue sq_int(double v, std::string_view unit = "") {
  const long long whole = std::llround(v);
  return {unit.empty() ? fmt::format("{}", whole) : fmt::format("{} {}", whole, unit), Json(whole)};
}

inline SqValue sq_watts(double w) { return {fmt::format("{:.2f} W", w), json_number(std::round(w * 100) / 100)}; }
inline SqValue sq_milliwatts(std::uint32_t mw) { return sq_watts(mw / 1000.0); }

inline SqValue sq_enabled(bool on) { return {on ? "Enabled" : "Disabled", Json(on)}; }
inline SqValue sq_yes(bool yes) { return {yes ? "Yes" : "No", Json(yes)}; }
inline SqValue sq_text(std::string s) { return {s, Json(s)}; }

inline std::string sq_enum(int v, std::initializer_list<std::string_view> names) {
  return v >= 0 && v < static_cast<int>(names.size()) ? std::string(names.begin()[v]) : "Unknown";
}

inline SqValue sq_driver_model(int v) { return sq_text(sq_enum(v, {"WDDM", "TCC", "MCDM"})); }
inline SqValue sq_gom(int v) { return sq_text(sq_enum(v, {"All On", "Compute", "Low Double Precision"})); }

inline std::vector<SmiQNode> sq_pair(const Answer<model::ModePair>& a, std::string current_key, std::string pending_key,
                                     SqValue (*format)(int)) {
  return {sq_answer("Current", std::move(current_key), a, [&](const model::ModePair& m) { return format(m.current); }),
          sq_answer("Pending", std::move(pending_key), a, [&](const model::ModePair& m) { return format(m.other); })};
}

// A mode that discovery already read into GpuInfo stands in when details() never asked NVML (error 13).
template <class T>
inline Answer<T> sq_or(const Answer<T>& a, std::optional<T> fallback) {
  if (a.ok() || a.error != 13 || !fallback) return a;
  return Answer<T>{fallback, 0};
}

inline SmiQNode sq_identity(std::string label, std::string key, const std::optional<std::string>& value) {
  return value && !value->empty() ? sq_leaf(std::move(label), std::move(key), sq_text(*value))
                                  : sq_na(std::move(label), std::move(key));
}

// The identity lines down to IBMNPU, and the PCI section (smi_q_board.cc).
std::vector<SmiQNode> board_nodes(const SmiQGpu& g);
SmiQNode pci_node(const SmiQGpu& g);
// "MIG Devices", one block per MIG device, for a GPU in MIG mode; nullopt otherwise (smi_q_mig.cc).
std::optional<SmiQNode> mig_devices_node(const SmiQGpu& g);

}  // namespace gpuscope::exporter::smi_q
