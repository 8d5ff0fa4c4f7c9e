#include "export/smi_value_text.h"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "export/nvml_error_text.h"

namespace gpuscope::exporter {
namespace {


}  // namespace

std::string smi_value_text(const model::FieldDef& def, const model::FieldValue& value, bool with_unit) {
  using model::SmiFormat;
  using model::ValueStatus;
  if (value.status == ValueStatus::kUnsupported) return kNotAvailable;
  if (value.status == ValueStatus::kError) return fmt::format("[{}]", nvml_error_text(value.error_code));
  const double v = value.value;
  if (!std::isfinite(v)) return kNotAvailable;

  std::string text;
  switch (def.smi_format) {
    case SmiFormat::kInteger: text = fmt::format("{}", std::llround(v)); break;
    case SmiFormat::kFixed2: text = fmt::format("{:.2f}", v); break;
    case SmiFormat::kPstateName: text = fmt::format("P{}", std::llround(v)); break;
    case SmiFormat::kHex64:
      // Upper-case digits, as nvidia-smi prints them (0x00000000000001FF). Clamped: casting a double
      // beyond uint64's range is undefined behaviour.
      text = fmt::format("0x{:016X}", v <= 0 ? std::uint64_t{0}
                                             : v >= 1.8e19 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(v));
      break;
    case SmiFormat::kYesNo: text = v != 0 ? "Yes" : "No"; break;
  }
  if (with_unit && !def.smi_unit.empty()) text.append(" ").append(def.smi_unit);
  return text;
}

std::string down_text(const model::GpuSample& sample) {
  return fmt::format("[{}]", nvml_error_text(sample.down_error_code != 0 ? sample.down_error_code : kGpuIsLost));
}

}  // namespace gpuscope::exporter
