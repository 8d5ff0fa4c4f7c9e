// `gpuscope dmon`: nvidia-smi dmon's scrolling table (two '#' header lines, one right-aligned row per GPU
// per interval, '-' where a value is missing) and the same rows as NDJSON objects.
#pragma once

#include <chrono>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/gpu_view.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

struct DmonColumn;  // one column's name, unit and how its value is read (dmon_table.cc)

// The letter -s could not use (one character, or "" for an empty list).
struct UnknownDmonGroup {
  std::string letter;
};

class DmonTable {
 public:
  // Metric groups, nvidia-smi's letters: p power/temperature (pwr gtemp mtemp), u utilization (sm mem
  // enc dec), c clocks (mclk pclk), v violations (pviol tviol), m memory (fb bar1), e ECC and PCIe replays
  // (sbecc dbecc pci), t PCIe throughput (rxpci txpci). Columns come in that order whatever the letters'.
  static std::expected<DmonTable, UnknownDmonGroup> from_groups(std::string_view letters);
  static constexpr std::string_view kAllGroups = "pucvmet";

  // "# gpu   pwr gtemp ...\n# Idx     W     C ...\n"
  std::string header() const;

  // One row. `previous` is the same GPU's sample one interval earlier (nullptr on the first row) and
  // `interval` the time between the two readings: pviol is the share of that interval the power limit
  // held the clocks down (from the violation counter's delta), tviol whether the thermal limit did (0/1);
  // both are '-' without a previous sample. Unsupported, failed and down fields print '-'.
  std::string row(const GpuView& now, const model::GpuSample* previous, std::chrono::nanoseconds interval) const;

  // The same row as {"index":0,"pwr_watts":250.12,"gtemp_celsius":45,...}: keys are the column name plus
  // the unit suffix of machine_value.h; a '-' value is absent.
  nlohmann::ordered_json row_json(const GpuView& now, const model::GpuSample* previous,
                                  std::chrono::nanoseconds interval) const;

  std::size_t column_count() const { return columns_.size(); }

 private:
  explicit DmonTable(std::vector<const DmonColumn*> columns) : columns_(std::move(columns)) {}
  std::vector<const DmonColumn*> columns_;
};

}  // namespace gpuscope::exporter
