#include "export/dmon_table.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "export/machine_value.h"

namespace gpuscope::exporter {

using model::FieldId;
using model::GpuSample;

struct DmonColumn {
  char group;
  std::string_view name;        // header line 1
  std::string_view unit_label;  // header line 2, as nvidia-smi prints it
  std::string_view json_unit;   // unit of the value, for the JSON key
  std::optional<double> (*read)(const GpuSample& now, const GpuSample* previous, std::chrono::nanoseconds interval);
};

namespace {

// nvidia-smi 580's layout: the index in 5 columns, then each value right-aligned in 6 after a space, and
// a space at the end of every line (../shared/reference/real-h100/nvidia-smi/dmon_all.txt).
constexpr int kIndexWidth = 5;
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
std::optional<double> plain(const GpuSample& now, const GpuSample*, std::chrono::nanoseconds) {
  return field(now, kId);
}

template <FieldId kId>
std::optional<double> kb_to_mb(const GpuSample& now, const GpuSample*, std::chrono::nanoseconds) {
  auto v = field(now, kId);
  if (!v) return std::nullopt;
  return *v / 1000.0;
}

std::optional<double> processor_clock(const GpuSample& now, const GpuSample*, std::chrono::nanoseconds) {
  // nvidia-smi's pclk is the graphics clock; GPUs that report only the SM clock still get a value.
  if (auto gr = field(now, FieldId::kGraphicsClock)) return gr;
  return field(now, FieldId::kSmClock);
}

std::optional<double> power_violation(const GpuSample& now, const GpuSample* previous, std::chrono::nanoseconds interval) {
  auto d = delta(now, previous, FieldId::kPowerViolation);
  if (!d || interval.count() <= 0) return std::nullopt;
  return std::clamp(*d * 100.0 / static_cast<double>(interval.count()), 0.0, 100.0);
}

std::optional<double> thermal_violation(const GpuSample& now, const GpuSample* previous, std::chrono::nanoseconds) {
  auto d = delta(now, previous, FieldId::kThermalViolation);
  if (!d) return std::nullopt;
  return *d > 0 ? 1.0 : 0.0;
}

// nvidia-smi's order; -s only picks groups.
constexpr std::array<DmonColumn, 18> kColumns{{
    {'p', "pwr", "W", "W", plain<FieldId::kPowerUsage>},
    {'p', "gtemp", "C", "C", plain<FieldId::kGpuTemp>},
    {'p', "mtemp", "C", "C", plain<FieldId::kMemoryTemp>},
    // dmon's sm and mem are NVML's utilization rates, not SM activity.
    {'u', "sm", "%", "%", plain<FieldId::kGpuUtil>},
    {'u', "mem", "%", "%", plain<FieldId::kMemCopyUtil>},
    {'u', "enc", "%", "%", plain<FieldId::kEncUtil>},
    {'u', "dec", "%", "%", plain<FieldId::kDecUtil>},
    {'c', "mclk", "MHz", "MHz", plain<FieldId::kMemClock>},
    {'c', "pclk", "MHz", "MHz", processor_clock},
    {'v', "pviol", "%", "%", power_violation},
    {'v', "tviol", "bool", "bool", thermal_violation},
    {'m', "fb", "MB", "MiB", plain<FieldId::kFbUsed>},
    {'m', "bar1", "MB", "MiB", plain<FieldId::kBar1Used>},
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
  std::vector<const DmonColumn*> columns;
  for (const auto& column : kColumns) {
    if (letters.find(column.group) != std::string_view::npos) columns.push_back(&column);
  }
  return DmonTable(std::move(columns));
}

std::string DmonTable::header() const {
  std::string names = "# gpu";
  std::string units = "# Idx";
  for (const auto* c : columns_) {
    names += fmt::format(" {:>{}}", c->name, kWidth);
    units += fmt::format(" {:>{}}", c->unit_label, kWidth);
  }
  return names + " \n" + units + " \n";
}

std::string DmonTable::row(const GpuView& now, const model::GpuSample* previous, std::chrono::nanoseconds interval) const {
  std::string line = fmt::format("{:>{}}", now.info.index, kIndexWidth);
  for (const auto* c : columns_) {
    auto v = c->read(now.sample, previous, interval);
    // The violation columns need two readings; on the first row nvidia-smi prints 0 for them, not "-"
    // (the JSON row leaves them out: nothing was measured yet).
    if (!v && previous == nullptr && c->group == 'v' && now.sample.up) v = 0.0;
    // Wider numbers (an H200's 143771 MiB) push the row right rather than lose digits, as nvidia-smi does.
    line += v ? fmt::format(" {:>{}}", std::llround(*v), kWidth) : fmt::format(" {:>{}}", "-", kWidth);
  }
  line += " \n";
  return line;
}

nlohmann::ordered_json DmonTable::row_json(const GpuView& now, const model::GpuSample* previous,
                                           std::chrono::nanoseconds interval) const {
  nlohmann::ordered_json row = {{"index", now.info.index}};
  for (const auto* c : columns_) {
    auto v = c->read(now.sample, previous, interval);
    if (!v) continue;
    if (auto number = json_number(*v); !number.is_null()) row[json_key(c->name, c->json_unit)] = std::move(number);
  }
  return row;
}

}  // namespace gpuscope::exporter
