#include "export/gpu_query_csv.h"

#include <fmt/format.h>

#include "export/nvml_error_text.h"
#include "export/smi_value_text.h"

namespace gpuscope::exporter {

std::string gpu_query_csv_header(std::span<const GpuColumn> columns) {
  std::string line;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) line += ", ";
    line += columns[i].name;
    if (const auto* field = std::get_if<model::FieldId>(&columns[i].source)) {
      const auto& def = model::FieldCatalog::get(*field);
      if (!def.smi_unit.empty()) line += fmt::format(" [{}]", def.smi_unit);
    } else if (const auto* detail = std::get_if<DetailColumn>(&columns[i].source)) {
      const std::string_view unit = detail_column_unit(*detail);
      if (!unit.empty()) line += fmt::format(" [{}]", unit);
    }
  }
  line += '\n';
  return line;
}

std::string gpu_query_csv_rows(std::span<const GpuColumn> columns, const QueryContext& context,
                               std::span<const GpuView> gpus, CsvStyle style,
                               std::span<const model::GpuDetails> details) {
  static const model::GpuDetails kUnread;
  std::string out;
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const auto& gpu = gpus[g];
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (i > 0) out += ", ";
      if (const auto* identity = std::get_if<IdentityColumn>(&columns[i].source)) {
        if (auto text = identity_text(*identity, context, gpu)) {
          out += *text;
        } else if (const int why = identity_error(*identity, gpu); why != 0) {
          out += fmt::format("[{}]", nvml_error_text(why));
        } else {
          out += kNotAvailable;
        }
        continue;
      }
      if (const auto* detail = std::get_if<DetailColumn>(&columns[i].source)) {
        out += gpu.sample.up ? detail_csv_text(*detail, detail_cell(*detail, g < details.size() ? details[g] : kUnread),
                                               style.units)
                             : down_text(gpu.sample);
        continue;
      }
      const auto field = std::get<model::FieldId>(columns[i].source);
      out += gpu.sample.up ? smi_value_text(model::FieldCatalog::get(field), gpu.sample[field], style.units)
                           : down_text(gpu.sample);
    }
    out += '\n';
  }
  return out;
}

}  // namespace gpuscope::exporter
