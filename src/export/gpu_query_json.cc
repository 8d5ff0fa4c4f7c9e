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

}  // namespace

nlohmann::ordered_json gpu_query_json(std::span<const GpuColumn> columns, const QueryContext& context,
                              std::span<const GpuView> gpus) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["timestamp"] = iso_timestamp(context.time);
  doc["timestamp_unix_seconds"] = unix_seconds(context.time);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& gpu : gpus) {
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
