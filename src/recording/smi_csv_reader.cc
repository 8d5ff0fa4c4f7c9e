// nvidia-smi --query-gpu=... --format=csv -l N logs: one row per GPU per interval, a header naming the
// columns with their units ("memory.used [MiB]"), values with units ("1234 MiB") or "[N/A]".
#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "model/field_catalog.h"
#include "recording/recording.h"

namespace gpuscope::recording {
namespace {

using model::FieldCatalog;
using model::FieldDef;

// The identity columns that become dcgm-exporter's labels on every series of the row's GPU.
enum class Identity { kNone, kTimestamp, kIndex, kUuid, kName, kPciBusId, kMinorNumber };

struct Column {
  std::string name;  // as the header spells it, unit removed
  std::string unit;  // from "[unit]", empty when none (or with nounits)
  Identity identity = Identity::kNone;
  const FieldDef* field = nullptr;  // a catalog field with a DCGM name
};

Identity identity_of(std::string_view name) {
  if (name == "timestamp") return Identity::kTimestamp;
  if (name == "index") return Identity::kIndex;
  if (name == "uuid") return Identity::kUuid;
  if (name == "name") return Identity::kName;
  if (name == "pci.bus_id") return Identity::kPciBusId;
  if (name == "minor_number") return Identity::kMinorNumber;
  return Identity::kNone;
}

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// nvidia-smi separates with ", "; no value it prints (names included) holds a comma.
std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

struct Header {
  std::vector<Column> columns;
  std::size_t timestamp = 0;
  std::vector<std::string> ignored;
};

// A header names a timestamp column and at least one field with a DCGM name; nullopt otherwise, with
// `why` saying what is missing.
std::optional<Header> parse_header(std::string_view line, std::string& why) {
  Header h;
  bool has_timestamp = false, has_field = false;
  for (const auto cell : split(line)) {
    Column c;
    std::string_view name = cell;
    if (const auto open = cell.rfind(" ["); open != std::string_view::npos && cell.ends_with(']')) {
      name = trim(cell.substr(0, open));
      c.unit = std::string(cell.substr(open + 2, cell.size() - open - 3));
    }
    c.name = std::string(model::FieldCatalog::canonical_smi_name(name));
    c.identity = identity_of(c.name);
    if (c.identity == Identity::kTimestamp) {
      has_timestamp = true;
      h.timestamp = h.columns.size();
    } else if (c.identity == Identity::kNone) {
      if (auto id = FieldCatalog::by_smi_name(c.name); id && !FieldCatalog::get(*id).dcgm_name.empty()) {
        c.field = &FieldCatalog::get(*id);
        has_field = true;
      } else {
        h.ignored.emplace_back(name);  // as the file spells it
      }
    }
    h.columns.push_back(std::move(c));
  }
  if (!has_timestamp) {
    why = "no header with a timestamp column (log with --query-gpu=timestamp,index,... --format=csv, not noheader)";
    return std::nullopt;
  }
  if (!has_field) {
    why = "no column with a DCGM name (utilization.gpu, memory.used, power.draw, ...)";
    return std::nullopt;
  }
  return h;
}

// "2026/11/25 14:06:37.123" (the fraction optional) to Unix milliseconds, read at `utc_offset_s`.
std::optional<std::int64_t> parse_timestamp(std::string_view text, std::int64_t utc_offset_s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, ms = 0;
  const auto number = [&](std::size_t pos, std::size_t len, int& out) {
    if (pos + len > text.size()) return false;
    auto [p, ec] = std::from_chars(text.data() + pos, text.data() + pos + len, out);
    return ec == std::errc{} && p == text.data() + pos + len;
  };
  if (text.size() < 19 || text[4] != '/' || text[7] != '/' || text[10] != ' ' || text[13] != ':' || text[16] != ':') {
    return std::nullopt;
  }
  if (!number(0, 4, y) || !number(5, 2, mo) || !number(8, 2, d) || !number(11, 2, h) || !number(14, 2, mi) ||
      !number(17, 2, s)) {
    return std::nullopt;
  }
  if (text.size() > 19) {
    if (text[19] != '.' || text.size() != 23 || !number(20, 3, ms)) return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(y), std::chrono::month(static_cast<unsigned>(mo)),
                                         std::chrono::day(static_cast<unsigned>(d))};
  if (!date.ok() || h > 23 || mi > 59 || s > 60) return std::nullopt;
  const std::int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return ((days * 24 + h) * 60 + mi) * 60000LL + s * 1000LL + ms - utc_offset_s * 1000;
}

// One value in the field's nvidia-smi unit (the unit removed; P-states and hex masks as numbers), or
// nullopt for "no value" ([N/A], [Not Supported], ...); an error for anything else.
std::expected<std::optional<double>, std::string> parse_cell(std::string_view cell, const Column& c) {
  if (cell.empty() || cell.front() == '[' || cell == "N/A") return std::optional<double>{};
  for (const std::string_view unit : {std::string_view(c.unit), c.field->smi_unit}) {
    if (!unit.empty() && cell.size() > unit.size() && cell.ends_with(unit)) {
      cell = trim(cell.substr(0, cell.size() - unit.size()));
      break;
    }
  }
  const auto* end = cell.data() + cell.size();
  if (c.field->smi_format == model::SmiFormat::kPstateName && cell.starts_with("P")) {
    int p = 0;
    auto [ptr, ec] = std::from_chars(cell.data() + 1, end, p);
    if (ec == std::errc{} && ptr == end) return std::optional<double>(p);
  } else if (c.field->smi_format == model::SmiFormat::kYesNo && (cell == "Yes" || cell == "No")) {
    return std::optional<double>(cell == "Yes" ? 1.0 : 0.0);
  } else if (c.field->smi_format == model::SmiFormat::kHex64 && cell.starts_with("0x")) {
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(cell.data() + 2, end, v, 16);
    if (ec == std::errc{} && ptr == end && cell.size() > 2) return std::optional<double>(static_cast<double>(v));
  } else {
    double v = 0;
    auto [ptr, ec] = std::from_chars(cell.data(), end, v);
    if (!cell.empty() && ec == std::errc{} && ptr == end) return std::optional<double>(v);
  }
  return std::unexpected(fmt::format("{}: '{}' is not a value", c.name, cell));
}

}  // namespace

std::expected<Recording, std::string> parse_smi_csv(std::string_view text, const ReadOptions& options) {
  Recording rec;
  rec.format = "nvidia-smi CSV";
  std::optional<Header> header;
  std::map<store::Labels, std::size_t> series_index;  // labels -> position in rec.series
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(start, end - start));
    start = end + 1;
    ++line_no;
    if (line.empty()) continue;
    if (!header) {
      std::string why;
      header = parse_header(line, why);
      if (!header) {
        return std::unexpected(fmt::format("not a Prometheus query_range answer (JSON) nor an nvidia-smi CSV log: "
                                           "line {}: {}",
                                           line_no, why));
      }
      for (const auto& name : header->ignored) rec.ignored_columns.push_back(name);
      continue;
    }
    // Logs appended to across restarts of nvidia-smi repeat the header; a new one may name other columns.
    if (line.starts_with("timestamp")) {
      std::string why;
      if (auto again = parse_header(line, why)) {
        for (const auto& name : again->ignored) {
          if (std::find(rec.ignored_columns.begin(), rec.ignored_columns.end(), name) == rec.ignored_columns.end()) {
            rec.ignored_columns.push_back(name);
          }
        }
        header = std::move(again);
        continue;
      }
    }
    const auto cells = split(line);
    const auto skip = [&](std::string what) { rec.skipped.push_back({fmt::format("line {}", line_no), std::move(what)}); };
    if (cells.size() != header->columns.size()) {
      skip(fmt::format("{} values for {} columns", cells.size(), header->columns.size()));
      continue;
    }
    const auto t = parse_timestamp(cells[header->timestamp], options.utc_offset_s);
    if (!t) {
      skip(fmt::format("timestamp '{}' is not YYYY/MM/DD HH:MM:SS.mmm", cells[header->timestamp]));
      continue;
    }
    std::vector<store::Label> identity;
    if (!options.hostname.empty()) identity.push_back({"Hostname", options.hostname});
    std::vector<std::pair<const FieldDef*, double>> values;
    std::string error;
    for (std::size_t i = 0; i < cells.size() && error.empty(); ++i) {
      const Column& c = header->columns[i];
      const std::string value(cells[i]);
      switch (c.identity) {
        case Identity::kIndex: identity.push_back({"gpu", value}); break;
        case Identity::kUuid: identity.push_back({"UUID", value}); break;
        case Identity::kName: identity.push_back({"modelName", value}); break;
        case Identity::kPciBusId: identity.push_back({"pci_bus_id", value}); break;
        case Identity::kMinorNumber: identity.push_back({"device", "nvidia" + value}); break;
        case Identity::kTimestamp: break;
        case Identity::kNone:
          if (c.field != nullptr) {
            auto v = parse_cell(cells[i], c);
            if (!v) {
              error = v.error();
            } else if (*v) {
              // The catalog's value is in nvidia-smi's unit; /metrics divides by dcgm_divisor into DCGM's.
              values.emplace_back(c.field, **v / c.field->dcgm_divisor);
            }
          }
          break;
      }
    }
    if (!error.empty()) {
      skip(error);
      continue;
    }
    for (const auto& [field, value] : values) {
      auto labels = identity;
      labels.push_back({std::string(store::kMetricNameLabel), std::string(field->dcgm_name)});
      store::Labels key(std::move(labels));
      auto [it, added] = series_index.try_emplace(key, rec.series.size());
      if (added) rec.series.push_back({std::move(key), {}});
      rec.series[it->second].samples.push_back({*t, value});
    }
  }
  if (!header) return std::unexpected("empty: neither a Prometheus query_range answer nor an nvidia-smi CSV log");
  return rec;
}

}  // namespace gpuscope::recording
