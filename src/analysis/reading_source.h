// Where the diagnosis reads recorded readings: the agent's own store (or a data directory opened
// read-only), or any Prometheus-compatible query API (cli/ provides that one over HTTP). Both answer
// the same question, the raw samples of the series the diagnosis reads over a span of time, so a fleet's
// Prometheus scraping dcgm-exporter is diagnosed like a gpuscope agent.
#pragma once

#include <cstdint>
#include <expected>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/gpu_signals.h"
#include "store/queryable.h"

namespace gpuscope::analysis {

class ReadingSource {
 public:
  virtual ~ReadingSource() = default;
  // Every series whose name `name_regex` matches (an RE2 alternation), with its samples from_ms < t <= to_ms.
  virtual std::expected<std::vector<store::SeriesSamples>, std::string> select(const std::string& name_regex,
                                                                              std::int64_t from_ms,
                                                                              std::int64_t to_ms) const = 0;
};

class StoreSource : public ReadingSource {
 public:
  explicit StoreSource(const store::Queryable& data) : data_(data) {}
  std::expected<std::vector<store::SeriesSamples>, std::string> select(const std::string& name_regex,
                                                                      std::int64_t from_ms,
                                                                      std::int64_t to_ms) const override;

 private:
  const store::Queryable& data_;
  // The last regex's compiled matcher: the agent asks with the same one every evaluation, and compiling
  // it each time cost more than the rest of the select on small stores.
  mutable std::mutex mu_;
  mutable std::string cached_regex_;
  mutable std::optional<store::LabelMatcher> cached_matcher_;
};

// Which GPUs to diagnose: index labels or UUIDs (-i 0,2 / -i GPU-...); empty: all.
struct GpuFilter {
  std::vector<std::string> ids;
  bool matches(const GpuIdentity& id) const;
};

// The histories of every GPU with readings in (from_ms, to_ms]. (No filter here: diagnose_from and
// timeline filter after the diagnosis, so peers still count.)
std::expected<std::vector<GpuHistory>, std::string> read_histories(const ReadingSource& source, std::int64_t from_ms,
                                                                   std::int64_t to_ms);

// The node's fabric ports with samples in (from_ms, to_ms] (fabric_ports.h); none when nothing records them.
std::expected<std::vector<PortHistory>, std::string> read_port_histories(const ReadingSource& source,
                                                                         std::int64_t from_ms, std::int64_t to_ms);

// How far back "idle since" looks, an hour at a time, before it says "at least".
inline constexpr std::int64_t kIdleLookbackMs = 24LL * 3600 * 1000;

// Diagnoses the window ending at `at_ms` from `source` (with its fabric ports over kFabricLookbackMs, for
// the network verdict); for GPUs idle through the whole window, looks
// back (up to `lookback_ms`) for their last activity.
std::expected<Diagnosis, std::string> diagnose_from(const ReadingSource& source, std::int64_t at_ms,
                                                    std::int64_t window_ms, const Thresholds& thresholds,
                                                    const GpuFilter& filter, std::int64_t lookback_ms = kIdleLookbackMs);

// Fills since_ms of idle GPUs whose window saw no activity, reading back from the window's start.
std::expected<void, std::string> find_last_activity(const ReadingSource& source, Diagnosis& diagnosis,
                                                    const Thresholds& thresholds, std::int64_t lookback_ms);

}  // namespace gpuscope::analysis
