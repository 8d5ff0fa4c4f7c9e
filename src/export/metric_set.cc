#include "export/metric_set.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <vector>
#include <string>

#include <fmt/format.h>

#include "model/file_text.h"
#include "model/printable_text.h"

namespace gpuscope::exporter {
namespace {

// DCGM fields that appear in dcgm-exporter's shipped collector files but that gpuscope does not read
// (or reads under another name). A file naming them is valid; the line is skipped with a warning.
constexpr std::array<std::string_view, 23> kKnownUncollected{
    "DCGM_FI_DEV_COUNT",
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
    "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION_COUNT",
    "DCGM_FI_DEV_FB_USED_PERCENT",
    "DCGM_FI_DEV_GPU_UTIL_SAMPLES",
    "DCGM_FI_DEV_MEM_COPY_UTIL_SAMPLES",
    "DCGM_FI_DEV_POWER_USAGE_INSTANT",
    "DCGM_FI_PROF_NVOFA0_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE_SAMPLES",
    "DCGM_FI_PROF_C2C_TX_ALL_BYTES",
    "DCGM_FI_PROF_C2C_RX_ALL_BYTES",
    "DCGM_FI_PROF_PIPE_INT_ACTIVE",
    "DCGM_EXP_XID_ERRORS_COUNT",
    "DCGM_EXP_CLOCK_EVENTS_COUNT",
    "DCGM_EXP_GPU_HEALTH_STATUS",
    "DCGM_EXP_P2P_STATUS",
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// What to say after "unknown field 'X'": the DCGM name meant by a typo, an nvidia-smi name or a
// gpuscope key, or nothing.
std::string unknown_field_hint(std::string_view name) {
  std::optional<model::FieldId> meant = model::FieldCatalog::by_smi_name(name);
  if (!meant) meant = model::FieldCatalog::by_key(name);
  if (meant && !model::FieldCatalog::get(*meant).dcgm_name.empty()) {
    return fmt::format(" (the DCGM field is {})", model::FieldCatalog::get(*meant).dcgm_name);
  }
  std::string_view best;
  std::size_t best_distance = 4;  // a few typed characters off, not another field
  for (const auto& f : model::FieldCatalog::all()) {
    if (f.dcgm_name.empty()) continue;
    const std::size_t d = edit_distance(name, f.dcgm_name);
    if (d < best_distance) {
      best_distance = d;
      best = f.dcgm_name;
    }
  }
  return best.empty() ? std::string() : fmt::format(" (did you mean {}?)", best);
}

// DCGM names that DCGM has renamed, and the catalog row they read.
std::optional<model::FieldId> renamed_field(std::string_view name) {
  if (name == "DCGM_FI_DEV_CLOCKS_EVENT_REASONS") return model::FieldId::kClocksEventReasons;
  return std::nullopt;
}

}  // namespace

MetricSet default_metric_set() {
  MetricSet set;
  for (const auto& f : model::FieldCatalog::all()) {
    if (!f.dcgm_default || f.dcgm_name.empty()) continue;
    std::string help(f.help);
    // The catalog's help is unit-free where gpuscope stores another unit than DCGM's.
    if (f.dcgm_divisor == 1000) help = fmt::format("{} (in us).", help.substr(0, help.size() - 1));
    set.fields.push_back({f.id, f.type, std::move(help), std::string(f.dcgm_name)});
  }
  return set;
}

std::expected<LoadedMetricSet, std::string> parse_metric_set(std::string_view text, std::string_view source) {
  LoadedMetricSet out;
  out.set.source = std::string(source);
  out.set.driver_version_label = false;
  std::map<model::FieldId, int> seen;  // field → line
  int line_no = 0;
  for (std::size_t pos = 0; pos <= text.size();) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    // The line is echoed in messages: a binary file's bytes are escaped, not sent to the terminal raw.
    auto where = [&](std::string_view what) {
      return fmt::format("{}:{}: {}", source, line_no, model::printable_text(what));
    };

    const auto c1 = line.find(',');
    const auto c2 = c1 == std::string_view::npos ? c1 : line.find(',', c1 + 1);
    if (c2 == std::string_view::npos) {
      return std::unexpected(where(fmt::format("expected 'FIELD, type, help', got '{}'", line)));
    }
    const std::string_view name = trim(line.substr(0, c1));
    const std::string_view type = trim(line.substr(c1 + 1, c2 - c1 - 1));
    const std::string_view help = trim(line.substr(c2 + 1));
    if (name.empty()) return std::unexpected(where("empty field name"));

    if (type == "label") {
      if (name == "DCGM_FI_DRIVER_VERSION") {
        out.set.driver_version_label = true;
      } else {
        out.warnings.push_back(where(fmt::format("label field '{}' is not added by gpuscope; skipped", name)));
      }
      continue;
    }
    model::MetricType metric_type;
    if (type == "gauge") {
      metric_type = model::MetricType::kGauge;
    } else if (type == "counter") {
      metric_type = model::MetricType::kCounter;
    } else {
      return std::unexpected(where(fmt::format("unknown metric type '{}' for {} (gauge, counter or label)", type, name)));
    }
    auto id = model::FieldCatalog::by_dcgm_name(name);
    if (!id) id = renamed_field(name);
    if (!id) {
      if (std::ranges::find(kKnownUncollected, name) != kKnownUncollected.end()) {
        out.warnings.push_back(where(fmt::format("{} is not collected by gpuscope; skipped", name)));
        continue;
      }
      return std::unexpected(where(fmt::format("unknown field '{}'{}", name, unknown_field_hint(name))));
    }
    if (auto [it, inserted] = seen.emplace(*id, line_no); !inserted) {
      return std::unexpected(where(fmt::format("{} is already listed on line {}", name, it->second)));
    }
    out.set.fields.push_back({*id, metric_type, std::string(help), std::string(name)});
  }
  // An agent that exports no GPU field at all is a mistake (an empty or truncated file), not a choice.
  if (out.set.fields.empty()) {
    return std::unexpected(fmt::format("{}: no fields to export (the file has no 'FIELD, type, help' line{})", source,
                                       out.warnings.empty() ? "" : " that gpuscope collects"));
  }
  return out;
}

std::expected<LoadedMetricSet, std::string> load_metric_set(const std::string& path) {
  // Read whole and checked: a directory or an unreadable file must fail, never load as an empty set.
  auto text = model::read_file_text(path);
  if (!text) return std::unexpected(fmt::format("{}: cannot read the collectors file: {}", path, text.error()));
  return parse_metric_set(*text, path);
}

}  // namespace gpuscope::exporter
