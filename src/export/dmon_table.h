// `gpuscope dmon`: nvidia-smi dmon's scrolling table (two '#' header lines, one right-aligned row per GPU
// per interval, '-' where a value is missing), its CSV form and the same rows as NDJSON objects.
#pragma once

#include <chrono>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/gpu_view.h"
#include "export/time_columns.h"
#include "model/gpu_details.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

struct DmonColumn;  // one column's name, unit and how its value is read (dmon_table.cc)

// The letter -s could not use (one character, or "" for an empty list).
struct UnknownDmonGroup {
  std::string letter;
};

// How the lines are laid out: nvidia-smi's --format csv, nounit, noheader and -o D/T.
struct DmonLayout {
  bool csv = false;
  bool names = true;  // header line 1; noheader drops it
  bool units = true;  // header line 2; nounit drops it
  TimeColumns time;
};

// What one row is read from. `previous` is the same GPU's sample one interval earlier (nullptr on the
// first row) and `interval` the time between the two readings. `details` holds the jpg, ofa and ccpm
// columns' answers (NvmlBackend::details(i, kDmon)); nullptr prints them as '-'.
struct DmonReading {
  GpuView now;  // references, cheap to copy
  const model::GpuSample* previous = nullptr;
  std::chrono::nanoseconds interval{0};
  const model::GpuDetails* details = nullptr;
};

class DmonTable {
 public:
  // Metric groups, nvidia-smi's letters: p power/temperature (pwr gtemp mtemp), u utilization (sm mem
  // enc dec jpg ofa), c clocks (mclk pclk), v violations (pviol tviol), m memory (fb bar1 ccpm), e ECC
  // and PCIe replays (sbecc dbecc pci), t PCIe throughput (rxpci txpci). Groups come in the order of the
  // letters, as nvidia-smi's do (`-s mu`: fb bar1 ccpm sm mem enc dec jpg ofa); a repeated letter once.
  static std::expected<DmonTable, UnknownDmonGroup> from_groups(std::string_view letters);
  static constexpr std::string_view kAllGroups = "pucvmet";

  // "# gpu   pwr gtemp ...\n# Idx     W     C ...\n" (the lines `layout` keeps, in its form).
  std::string header(const DmonLayout& layout = {}) const;

  // One row: pviol is the share of the interval the power limit held the clocks down (from the
  // violation counter's delta), tviol whether the thermal limit did (0/1); both are '-' without a
  // previous sample. Unsupported, failed and down fields print '-'. `when` fills the Date/Time columns.
  std::string row(const DmonLayout& layout, std::chrono::system_clock::time_point when, const DmonReading& r) const;
  std::string row(const GpuView& now, const model::GpuSample* previous, std::chrono::nanoseconds interval) const {
    return row({}, {}, DmonReading{now, previous, interval});
  }

  // A MIG GPU instance's row, printed after its GPU's row: the index column holds "0/1" (GPU 0, GPU
  // instance 1; mig_instance_rows.h) and only what an instance has of its own gets a value (fb, its
  // memory used); every other column is '-', the violation columns too.
  std::string instance_row(const DmonLayout& layout, std::chrono::system_clock::time_point when, const GpuView& gpu,
                           const model::MigInstanceSample& instance) const;

  // The same row as {"index":0,"pwr_watts":250.12,"gtemp_celsius":45,...}: keys are the column name plus
  // the unit suffix of machine_value.h; a '-' value is absent. A GPU in MIG mode also gets
  // "mig_instances":[{"id":"0/1","gpu_instance_id":1,"profile":"3g.40gb","fb_mib":10240}, ...], one per
  // GPU instance, with the columns an instance has.
  nlohmann::ordered_json row_json(const DmonReading& r) const;
  nlohmann::ordered_json row_json(const GpuView& now, const model::GpuSample* previous,
                                  std::chrono::nanoseconds interval) const {
    return row_json(DmonReading{now, previous, interval});
  }

  std::size_t column_count() const { return columns_.size(); }
  // Whether a column is read from NvmlBackend::details (jpg, ofa, ccpm): only then is it worth asking.
  bool needs_details() const;

 private:
  explicit DmonTable(std::vector<const DmonColumn*> columns) : columns_(std::move(columns)) {}
  std::vector<std::string> cells(const DmonReading& r, bool first_row_violations_zero) const;
  std::string line(const DmonLayout& layout, std::chrono::system_clock::time_point when, std::string_view id,
                   const std::vector<std::string>& cells) const;
  void add_values(nlohmann::ordered_json& row, const DmonReading& r) const;
  std::vector<const DmonColumn*> columns_;
};

}  // namespace gpuscope::exporter
