#include "export/mig_query.h"

#include <array>
#include <optional>

#include <fmt/format.h>

#include "export/machine_value.h"
#include "export/smi_value_text.h"
#include "export/timestamp_text.h"

namespace gpuscope::exporter {

// Where a column's value comes from (outside the anonymous namespace: MigColumn is declared in the
// header, and a unity build would otherwise see a named type with a member of an internal one).
enum class MigSource : std::uint8_t {
  kTimestamp,
  kGpuIndex,
  kGpuUuid,
  kGpuName,
  kIndex,
  kGpuInstanceId,
  kComputeInstanceId,
  kProfile,
  kUuid,
  kSmCount,
  kSlices,
  kPod,
  kNamespace,
  kContainer,
  kField,
};

struct MigColumn {
  std::string_view name;
  MigSource source;
  model::FieldId field = model::FieldId::kFbUsed;  // for kField
  std::string_view help;
};

namespace {

constexpr std::array<MigColumn, 26> kMigColumns{{
    {"timestamp", MigSource::kTimestamp, {}, "the reading's time, as --query-gpu's timestamp"},
    {"gpu_index", MigSource::kGpuIndex, {}, "index of the GPU the MIG device belongs to"},
    {"gpu_uuid", MigSource::kGpuUuid, {}, "UUID of that GPU (GPU-...)"},
    {"gpu_name", MigSource::kGpuName, {}, "product name of that GPU"},
    {"mig.index", MigSource::kIndex, {}, "the MIG device's index on its GPU (nvidia-smi -L's Device N)"},
    {"gpu_instance_id", MigSource::kGpuInstanceId, {}, "GPU instance id (nvidia-smi's GI ID)"},
    {"compute_instance_id", MigSource::kComputeInstanceId, {}, "compute instance id (nvidia-smi's CI ID)"},
    {"profile", MigSource::kProfile, {}, "GPU instance profile, e.g. 3g.40gb"},
    {"uuid", MigSource::kUuid, {}, "the MIG device's UUID (MIG-...), what CUDA_VISIBLE_DEVICES takes"},
    {"sm_count", MigSource::kSmCount, {}, "streaming multiprocessors of the MIG device"},
    {"slices", MigSource::kSlices, {}, "compute slices of the GPU instance (of 7 on H100/A100)"},
    {"memory.total", MigSource::kField, model::FieldId::kFbTotal, "memory of the GPU instance"},
    {"memory.used", MigSource::kField, model::FieldId::kFbUsed, "memory in use"},
    {"memory.free", MigSource::kField, model::FieldId::kFbFree, "memory free"},
    {"memory.reserved", MigSource::kField, model::FieldId::kFbReserved, "memory the driver reserves"},
    {"sm_active", MigSource::kField, model::FieldId::kSmActive, "share of time the instance's SMs had work (0-1)"},
    {"sm_occupancy", MigSource::kField, model::FieldId::kSmOccupancy, "warps resident per SM, of the maximum (0-1)"},
    {"tensor_active", MigSource::kField, model::FieldId::kPipeTensorActive, "tensor pipe activity (0-1)"},
    {"dram_active", MigSource::kField, model::FieldId::kDramActive, "memory bandwidth in use, of the peak (0-1)"},
    {"graphics_active", MigSource::kField, model::FieldId::kGrEngineActive, "graphics engine activity (0-1)"},
    {"fp64_active", MigSource::kField, model::FieldId::kPipeFp64Active, "FP64 pipe activity (0-1)"},
    {"fp32_active", MigSource::kField, model::FieldId::kPipeFp32Active, "FP32 pipe activity (0-1)"},
    {"fp16_active", MigSource::kField, model::FieldId::kPipeFp16Active, "FP16 pipe activity (0-1)"},
    {"pod", MigSource::kPod, {}, "serve --kubernetes: the pod the kubelet gave the MIG device to"},
    {"namespace", MigSource::kNamespace, {}, "that pod's namespace"},
    {"container", MigSource::kContainer, {}, "that pod's container"},
}};

struct MigQueryRow {
  const GpuView& gpu;
  const model::MigInstanceSample& device;
};

// Identity values as text; nullopt when not known.
std::optional<std::string> mig_identity_text(MigSource source, const QueryContext& context, const MigQueryRow& r) {
  const auto non_empty = [](const std::string& s) { return s.empty() ? std::nullopt : std::optional<std::string>(s); };
  const auto& pod = r.device.kubernetes_pod;
  switch (source) {
    case MigSource::kTimestamp: return smi_timestamp(context.time);
    case MigSource::kGpuIndex: return fmt::format("{}", r.gpu.info.index);
    case MigSource::kGpuUuid: return non_empty(r.gpu.info.uuid);
    case MigSource::kGpuName: return non_empty(r.gpu.info.name);
    case MigSource::kIndex: return fmt::format("{}", r.device.device_index);
    case MigSource::kGpuInstanceId: return fmt::format("{}", r.device.gpu_instance_id);
    case MigSource::kComputeInstanceId: return fmt::format("{}", r.device.compute_instance_id);
    case MigSource::kProfile: return non_empty(r.device.profile);
    case MigSource::kUuid: return non_empty(r.device.uuid);
    case MigSource::kSmCount:
      return r.device.sm_count ? std::optional<std::string>(fmt::format("{}", *r.device.sm_count)) : std::nullopt;
    case MigSource::kSlices:
      return r.device.gpu_instance_slices ? std::optional<std::string>(fmt::format("{}", *r.device.gpu_instance_slices))
                                          : std::nullopt;
    case MigSource::kPod: return pod ? non_empty(pod->pod) : std::nullopt;
    case MigSource::kNamespace: return pod ? non_empty(pod->namespace_name) : std::nullopt;
    case MigSource::kContainer: return pod ? non_empty(pod->container) : std::nullopt;
    case MigSource::kField: break;
  }
  return std::nullopt;
}

bool mig_identity_is_number(MigSource source) {
  switch (source) {
    case MigSource::kGpuIndex:
    case MigSource::kIndex:
    case MigSource::kGpuInstanceId:
    case MigSource::kComputeInstanceId:
    case MigSource::kSmCount:
    case MigSource::kSlices: return true;
    default: return false;
  }
}

template <class Emit>
void for_each_mig_device(std::span<const GpuView> gpus, Emit emit) {
  for (const auto& gpu : gpus) {
    // A GPU that is down or left MIG mode has no MIG devices to show.
    if (!gpu.sample.up || !gpu.sample.mig_enabled) continue;
    for (const auto& device : gpu.sample.mig_instances) emit(MigQueryRow{gpu, device});
  }
}

}  // namespace

std::expected<std::vector<const MigColumn*>, UnknownQueryName> parse_mig_query(std::string_view names) {
  std::vector<const MigColumn*> columns;
  for (std::string_view asked : split_name_list(names)) {
    if (asked.empty()) return std::unexpected(UnknownQueryName{});
    const MigColumn* found = nullptr;
    for (const auto& c : kMigColumns) {
      if (c.name == asked) found = &c;
    }
    if (found == nullptr) return std::unexpected(UnknownQueryName{std::string(asked)});
    columns.push_back(found);
  }
  return columns;
}

std::string mig_query_help() {
  std::string out;
  for (const auto& c : kMigColumns) {
    std::string unit;
    if (c.source == MigSource::kField) {
      const auto& def = model::FieldCatalog::get(c.field);
      unit = def.smi_unit.empty() ? "" : fmt::format(" [{}]", def.smi_unit);
    }
    out += fmt::format("  {:<22}{}\n", fmt::format("{}{}", c.name, unit), c.help);
  }
  return out;
}

std::string mig_query_csv_header(std::span<const MigColumn* const> columns) {
  std::string line;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (i > 0) line += ", ";
    line += columns[i]->name;
    if (columns[i]->source == MigSource::kField) {
      const auto& def = model::FieldCatalog::get(columns[i]->field);
      if (!def.smi_unit.empty()) line += fmt::format(" [{}]", def.smi_unit);
    }
  }
  line += '\n';
  return line;
}

std::string mig_query_csv_rows(std::span<const MigColumn* const> columns, const QueryContext& context,
                               std::span<const GpuView> gpus, CsvStyle style) {
  std::string out;
  for_each_mig_device(gpus, [&](const MigQueryRow& r) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (i > 0) out += ", ";
      const auto& c = *columns[i];
      if (c.source == MigSource::kField) {
        out += smi_value_text(model::FieldCatalog::get(c.field), r.device[c.field], style.units);
      } else {
        out += mig_identity_text(c.source, context, r).value_or(kNotAvailable);
      }
    }
    out += '\n';
  });
  return out;
}

nlohmann::ordered_json mig_query_json(std::span<const MigColumn* const> columns, const QueryContext& context,
                                      std::span<const GpuView> gpus) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["timestamp"] = iso_timestamp(context.time);
  doc["timestamp_unix_seconds"] = unix_seconds(context.time);
  auto list = nlohmann::ordered_json::array();
  for_each_mig_device(gpus, [&](const MigQueryRow& r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::object();
    for (const auto* c : columns) {
      if (c->source == MigSource::kTimestamp) continue;  // the document's
      if (c->source == MigSource::kField) {
        const auto& value = r.device[c->field];
        if (!value.valid()) continue;
        if (auto number = json_number(value.value); !number.is_null()) {
          row[json_key(c->name, model::FieldCatalog::get(c->field).unit)] = std::move(number);
        }
        continue;
      }
      auto text = mig_identity_text(c->source, context, r);
      if (!text) continue;
      if (mig_identity_is_number(c->source)) {
        row[std::string(c->name)] = std::stoull(*text);
      } else {
        row[std::string(c->name)] = *text;
      }
    }
    list.push_back(std::move(row));
  });
  doc["mig_devices"] = std::move(list);
  return doc;
}

}  // namespace gpuscope::exporter
