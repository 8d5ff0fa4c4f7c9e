#include "export/gpu_query_json.h"

#include "export/machine_value.h"
#include "export/nvml_error_text.h"
#include "export/timestamp_text.h"

namespace gpuscope::exporter {
namespace {


nlohmann::ordered_json identity_json(IdentityColumn column, const QueryContext& context, const GpuView& gpu) {
  switch (column) {
    case IdentityColumn::kIndex: return gpu.info.index;
    case IdentityColumn::kCount: return context.gpu_count;
    default: break;
  }
  // Versions and names stay strings: "9.0" is an identifier, not a quantity.
  if (auto text = identity_text(column, context, gpu)) return *text;
  return nullptr;
}

void detail_json(DetailColumn column, const std::string& name, const DetailCell& cell, nlohmann::ordered_json& row,
                 nlohmann::ordered_json& errors) {
  if (cell.error == 3 || cell.error == 13) return;  // unsupported: absent, like the catalog's columns
  if (cell.error != 0) {
    const std::string text = detail_error_text(cell.error);
    errors[name] = text.substr(1, text.size() - 2);  // without nvidia-smi's brackets
    return;
  }
  if (cell.number) {
    if (auto number = json_number(*cell.number); !number.is_null()) row[json_key(name, detail_column_json_unit(column))] = std::move(number);
    return;
  }
  row[name] = cell.text;
}

}  // namespace

nlohmann::ordered_json gpu_query_json(std::span<const GpuColumn> columns, const QueryContext& context,
                              std::span<const GpuView> gpus, std::span<const model::GpuDetails> details) {
  static const model::GpuDetails kUnread;
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["timestamp"] = iso_timestamp(context.time);
  doc["timestamp_unix_seconds"] = unix_seconds(context.time);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    const auto& gpu = gpus[g];
    nlohmann::ordered_json row = nlohmann::ordered_json::object();
    nlohmann::ordered_json errors = nlohmann::ordered_json::object();
    for (const auto& column : columns) {
      if (const auto* identity = std::get_if<IdentityColumn>(&column.source)) {
        if (*identity == IdentityColumn::kTimestamp) continue;
        if (auto value = identity_json(*identity, context, gpu); !value.is_null()) {
          row[column.name] = std::move(value);
        } else if (const int why = identity_error(*identity, gpu); why != 0) {
          errors[column.name] = nvml_error_text(why);
        }
        continue;
      }
      if (!gpu.sample.up && !std::holds_alternative<model::FieldId>(column.source)) {
        errors[column.name] =
            nvml_error_text(gpu.sample.down_error_code != 0 ? gpu.sample.down_error_code : kGpuIsLost);
        continue;
      }
      if (const auto* detail = std::get_if<DetailColumn>(&column.source)) {
        detail_json(*detail, column.name, detail_cell(*detail, g < details.size() ? details[g] : kUnread), row, errors);
        continue;
      }
      const auto field = std::get<model::FieldId>(column.source);
      if (!gpu.sample.up) {
        errors[column.name] =
            nvml_error_text(gpu.sample.down_error_code != 0 ? gpu.sample.down_error_code : kGpuIsLost);
        continue;
      }
      const auto& value = gpu.sample[field];
      if (value.status == model::ValueStatus::kError) {
        errors[column.name] = nvml_error_text(value.error_code);
        continue;
      }
      if (!value.valid()) continue;
      if (auto number = json_number(value.value); !number.is_null()) {
        row[json_key(column.name, model::FieldCatalog::get(field).unit)] = std::move(number);
      }
    }
    if (!errors.empty()) row["errors"] = std::move(errors);
    list.push_back(std::move(row));
  }
  doc["gpus"] = std::move(list);
  return doc;
}

}  // namespace gpuscope::exporter
