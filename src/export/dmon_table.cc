#include "export/dmon_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "export/machine_value.h"
#include "export/mig_instance_rows.h"

namespace gpuscope::exporter {

using model::FieldId;
using model::GpuSample;

struct DmonColumn {
  char group;
  std::string_view name;        // header line 1
  std::string_view unit_label;  // header line 2, as nvidia-smi prints it
  std::string_view json_unit;   // unit of the value, for the JSON key
  std::optional<double> (*read)(const DmonReading& r);
  bool from_details = false;    // read from NvmlBackend::details, not from the sample
};

namespace {

// nvidia-smi 580's layout: the index in 5 columns (time_columns.h), then each value right-aligned in 6
// after a space, and a space at the end of every line (../shared/reference/real-h100/nvidia-smi/dmon_all.txt).
constexpr int kWidth = 6;

std::optional<double> field(const GpuSample& s, FieldId id) {
  if (!s.up) return std::nullopt;
  const auto& v = s[id];
  if (!v.valid() || !std::isfinite(v.value)) return std::nullopt;
  return v.value;
}

// Counter growth over the interval; nullopt on the first row or when the counter went backwards (driver
// reload), since a negative violation time means nothing.
std::optional<double> delta(const GpuSample& now, const GpuSample* previous, FieldId id) {
  if (previous == nullptr) return std::nullopt;
  auto a = field(*previous, id);
  auto b = field(now, id);
  if (!a || !b || *b < *a) return std::nullopt;
  return *b - *a;
}

template <FieldId kId>
std::optional<double> plain(const DmonReading& r) {
  return field(r.now.sample, kId);
}

template <FieldId kId>
std::optional<double> kb_to_mb(const DmonReading& r) {
  auto v = field(r.now.sample, kId);
  if (!v) return std::nullopt;
  return *v / 1000.0;
}

std::optional<double> processor_clock(const DmonReading& r) {
  // nvidia-smi's pclk is the graphics clock; GPUs that report only the SM clock still get a value.
  if (auto gr = field(r.now.sample, FieldId::kGraphicsClock)) return gr;
  return field(r.now.sample, FieldId::kSmClock);
}

std::optional<double> power_violation(const DmonReading& r) {
  auto d = delta(r.now.sample, r.previous, FieldId::kPowerViolation);
  if (!d || r.interval.count() <= 0) return std::nullopt;
  return std::clamp(*d * 100.0 / static_cast<double>(r.interval.count()), 0.0, 100.0);
}

std::optional<double> thermal_violation(const DmonReading& r) {
  auto d = delta(r.now.sample, r.previous, FieldId::kThermalViolation);
  if (!d) return std::nullopt;
  return *d > 0 ? 1.0 : 0.0;
}

// The details columns: '-' while the GPU is down, whatever an earlier details read said.
template <model::Answer<std::uint32_t> model::GpuDetails::*kMember>
std::optional<double> detail_percent(const DmonReading& r) {
  if (r.details == nullptr || !r.now.sample.up) return std::nullopt;
  const auto& answer = r.details->*kMember;
  if (!answer.ok()) return std::nullopt;
  return static_cast<double>(*answer.value);
}

// Confidential-compute protected memory in use, in MiB like fb and bar1 (nvidia-smi labels them all MB).
std::optional<double> protected_memory_used(const DmonReading& r) {
  if (r.details == nullptr || !r.now.sample.up || !r.details->protected_memory.ok()) return std::nullopt;
  return static_cast<double>(r.details->protected_memory.value->used) / (1024.0 * 1024.0);
}

// nvidia-smi 580's columns (dmon_all.txt), by group in the order of `-s pucvmet`.
constexpr std::array<DmonColumn, 21> kColumns{{
    {'p', "pwr", "W", "W", plain<FieldId::kPowerUsage>},
    {'p', "gtemp", "C", "C", plain<FieldId::kGpuTemp>},
    {'p', "mtemp", "C", "C", plain<FieldId::kMemoryTemp>},
    // dmon's sm and mem are NVML's utilization rates, not SM activity.
    {'u', "sm", "%", "%", plain<FieldId::kGpuUtil>},
    {'u', "mem", "%", "%", plain<FieldId::kMemCopyUtil>},
    {'u', "enc", "%", "%", plain<FieldId::kEncUtil>},
    {'u', "dec", "%", "%", plain<FieldId::kDecUtil>},
    {'u', "jpg", "%", "%", detail_percent<&model::GpuDetails::jpg_util>, true},
    {'u', "ofa", "%", "%", detail_percent<&model::GpuDetails::ofa_util>, true},
    {'c', "mclk", "MHz", "MHz", plain<FieldId::kMemClock>},
    {'c', "pclk", "MHz", "MHz", processor_clock},
    {'v', "pviol", "%", "%", power_violation},
    {'v', "tviol", "bool", "bool", thermal_violation},
    {'m', "fb", "MB", "MiB", plain<FieldId::kFbUsed>},
    {'m', "bar1", "MB", "MiB", plain<FieldId::kBar1Used>},
    {'m', "ccpm", "MB", "MiB", protected_memory_used, true},
    {'e', "sbecc", "errs", "count", plain<FieldId::kEccSbeVolTotal>},
    {'e', "dbecc", "errs", "count", plain<FieldId::kEccDbeVolTotal>},
    {'e', "pci", "errs", "count", plain<FieldId::kPcieReplay>},
    {'t', "rxpci", "MB/s", "MB/s", kb_to_mb<FieldId::kPcieRxThroughput>},
    {'t', "txpci", "MB/s", "MB/s", kb_to_mb<FieldId::kPcieTxThroughput>},
}};

}  // namespace

std::expected<DmonTable, UnknownDmonGroup> DmonTable::from_groups(std::string_view letters) {
  if (letters.empty()) return std::unexpected(UnknownDmonGroup{});
  for (char c : letters) {
    if (kAllGroups.find(c) == std::string_view::npos) return std::unexpected(UnknownDmonGroup{std::string(1, c)});
  }
  // Groups in the order of the letters, as nvidia-smi prints them (`dmon -s mu`: fb bar1 ccpm sm mem ...);
  // a letter given twice counts once.
  std::vector<const DmonColumn*> columns;
  for (std::size_t i = 0; i < letters.size(); ++i) {
    if (letters.find(letters[i]) != i) continue;
    for (const auto& column : kColumns) {
      if (column.group == letters[i]) columns.push_back(&column);
    }
  }
  return DmonTable(std::move(columns));
}

bool DmonTable::needs_details() const {
  return std::any_of(columns_.begin(), columns_.end(), [](const DmonColumn* c) { return c->from_details; });
}

std::string DmonTable::header(const DmonLayout& layout) const {
  std::string out;
  if (layout.csv) {
    auto names = time_cells_names(layout.time);
    auto units = time_cells_units(layout.time);
    for (const auto* c : columns_) {
      names.emplace_back(c->name);
      units.emplace_back(c->unit_label);
    }
    if (layout.names) out += csv_line('#', names);
    if (layout.units) out += csv_line('#', units);
    return out;
  }
  std::string names = time_lead_names(layout.time);
  std::string units = time_lead_units(layout.time);
  for (const auto* c : columns_) {
    names += fmt::format(" {:>{}}", c->name, kWidth);
    units += fmt::format(" {:>{}}", c->unit_label, kWidth);
  }
  if (layout.names) out += names + " \n";
  if (layout.units) out += units + " \n";
  return out;
}

std::vector<std::string> DmonTable::cells(const DmonReading& r, bool first_row_violations_zero) const {
  std::vector<std::string> cells;
  cells.reserve(columns_.size());
  for (const auto* c : columns_) {
    auto v = c->read(r);
    // The violation columns need two readings; on the first row nvidia-smi prints 0 for them, not "-"
    // (the JSON row leaves them out: nothing was measured yet).
    if (!v && first_row_violations_zero && r.previous == nullptr && c->group == 'v' && r.now.sample.up) v = 0.0;
    cells.push_back(v ? fmt::format("{}", std::llround(*v)) : std::string("-"));
  }
  return cells;
}

std::string DmonTable::line(const DmonLayout& layout, std::chrono::system_clock::time_point when, std::string_view id,
                            const std::vector<std::string>& cells) const {
  if (layout.csv) {
    auto all = time_cells_row(layout.time, when, id);
    all.insert(all.end(), cells.begin(), cells.end());
    return csv_line(' ', all);
  }
  std::string line = time_lead_row(layout.time, when, id);
  // Wider numbers (an H200's 143771 MiB) push the row right rather than lose digits, as nvidia-smi does.
  for (const auto& cell : cells) line += fmt::format(" {:>{}}", cell, kWidth);
  line += " \n";
  return line;
}

std::string DmonTable::row(const DmonLayout& layout, std::chrono::system_clock::time_point when,
                           const DmonReading& r) const {
  return line(layout, when, fmt::format("{}", r.now.info.index), cells(r, true));
}

std::string DmonTable::instance_row(const DmonLayout& layout, std::chrono::system_clock::time_point when,
                                    const GpuView& gpu, const model::MigInstanceSample& instance) const {
  const auto own = mig_instance_as_sample(gpu.sample, instance);
  // No previous reading and no details: an instance has no violation counters, jpg, ofa or ccpm.
  const DmonReading r{GpuView{gpu.info, own}, nullptr, std::chrono::nanoseconds{0}, nullptr};
  return line(layout, when, mig_instance_id(gpu.info.index, instance.gpu_instance_id), cells(r, false));
}

void DmonTable::add_values(nlohmann::ordered_json& row, const DmonReading& r) const {
  for (const auto* c : columns_) {
    auto v = c->read(r);
    if (!v) continue;
    if (auto number = json_number(*v); !number.is_null()) row[json_key(c->name, c->json_unit)] = std::move(number);
  }
}

nlohmann::ordered_json DmonTable::row_json(const DmonReading& r) const {
  nlohmann::ordered_json row = {{"index", r.now.info.index}};
  add_values(row, r);
  const auto instances = gpu_instances_of(r.now.sample);
  if (instances.empty()) return row;
  auto list = nlohmann::ordered_json::array();
  for (const auto* m : instances) {
    nlohmann::ordered_json object = {{"id", mig_instance_id(r.now.info.index, m->gpu_instance_id)},
                                     {"gpu_instance_id", m->gpu_instance_id}};
    if (!m->profile.empty()) object["profile"] = m->profile;
    const auto own = mig_instance_as_sample(r.now.sample, *m);
    add_values(object, DmonReading{GpuView{r.now.info, own}, nullptr, std::chrono::nanoseconds{0}, nullptr});
    list.push_back(std::move(object));
  }
  row["mig_instances"] = std::move(list);
  return row;
}

}  // namespace gpuscope::exporter
