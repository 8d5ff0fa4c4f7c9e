// MetricSet: which DCGM-named fields /metrics exports, with their Prometheus type and help text: the
// built-in default, or a file in dcgm-exporter's collectors CSV format (`FIELD, type, help`) so an
// existing dcgm-exporter configuration works unchanged.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "model/field_catalog.h"

namespace gpuscope::exporter {

struct ExportedField {
  model::FieldId id;
  model::MetricType type;
  std::string help;
  // The series name: the catalog's DCGM name, or the name the file used where DCGM renamed a field
  // (DCGM_FI_DEV_CLOCKS_EVENT_REASONS, formerly DCGM_FI_DEV_CLOCK_THROTTLE_REASONS). Empty: the catalog's.
  std::string name{};
};

struct MetricSet {
  std::vector<ExportedField> fields;  // in file order
  bool driver_version_label = true;   // `DCGM_FI_DRIVER_VERSION, label, …`
  std::string source = "built-in";    // the file it came from
};

struct LoadedMetricSet {
  MetricSet set;
  // Lines that name a DCGM field gpuscope does not collect (or a label it does not add): skipped, not
  // fatal, since they are valid in a dcgm-exporter file. "FILE:LINE: …", ready to log.
  std::vector<std::string> warnings;
};

// dcgm-exporter's default counters plus SM active, SM occupancy, the violation counters and ECC totals
// (the catalog's dcgm_default rows).
MetricSet default_metric_set();

// Parses a collectors CSV. Errors are one line naming `source`, the line number and what is wrong
// (an unknown field name, an unknown type, a missing column, a field listed twice).
std::expected<LoadedMetricSet, std::string> parse_metric_set(std::string_view text, std::string_view source);
std::expected<LoadedMetricSet, std::string> load_metric_set(const std::string& path);

}  // namespace gpuscope::exporter
