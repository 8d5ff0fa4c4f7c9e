// HistoryFixture: a long stretch (a day and more) of synthetic but realistic DCGM readings of one GPU
// node, written twice with the very same samples: into a gpuscope data dir and into an OpenMetrics file
// that `promtool tsdb create-blocks-from openmetrics` backfills, so both engines query the same data.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <vector>

#include "store/labels.h"
#include "store/tsdb.h"

namespace gpuscope::bench {

struct HistoryFixtureOptions {
  std::int64_t first_ms = 0;          // the first reading's timestamp
  std::int64_t interval_ms = 15'000;  // between readings (the agent's --interval)
  std::size_t readings = 0;           // per series
  unsigned gpus = 8;
  std::uint64_t seed = 1;
  std::string hostname = "dgx-h100-bench-01";
};

// One series: its /metrics labels and a value at each reading (first_ms + i * interval_ms).
struct FixtureSeries {
  store::Labels labels;
  std::vector<double> values;
};

class HistoryFixture {
 public:
  // Each GPU runs a seeded sequence of jobs (idle gaps, training, memory-bound phases, bursty
  // inference, some with a slow device-memory leak); the gauges follow the job, temperature lags
  // power, and the energy counter integrates power. Deterministic for given options.
  static HistoryFixture generate(const HistoryFixtureOptions& options);

  const HistoryFixtureOptions& options() const { return options_; }
  const std::vector<FixtureSeries>& series() const { return series_; }
  std::int64_t last_ms() const;
  std::size_t samples() const { return series_.size() * options_.readings; }

  // Appends every reading as the agent's sampler does (one append_reading per timestamp, flushing
  // about hourly), then flushes. `data_dir` must not hold a store yet. Returns the store's stats after
  // the final flush (disk bytes included).
  std::expected<store::TsdbStats, std::string> write_tsdb(const std::filesystem::path& data_dir) const;

  // OpenMetrics text with explicit timestamps (seconds), families not interleaved, each series'
  // samples in time order, ending with "# EOF". Values in shortest round-trip form, so Prometheus
  // parses exactly the doubles the store holds. Returns the bytes written.
  std::expected<std::uint64_t, std::string> write_openmetrics(const std::filesystem::path& file) const;

 private:
  HistoryFixtureOptions options_;
  std::vector<FixtureSeries> series_;  // by metric name, then GPU
};

}  // namespace gpuscope::bench
