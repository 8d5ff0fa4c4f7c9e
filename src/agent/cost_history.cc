#include "agent/cost_history.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "export/cost_metrics.h"
#include "model/field_catalog.h"

namespace gpuscope::agent {
namespace {

using analysis::CostReading;
using analysis::CostSeed;

// Written for every GPU found at start at every reading, up or down: the GPU's readings.
constexpr std::string_view kGpuUp = "gpuscope_gpu_up";
constexpr std::string_view kHourlyPrice = "gpuscope_gpu_hourly_price_dollars";

// One series' last sample that is not a staleness marker.
struct LastSample {
  store::Labels labels;
  std::int64_t t_ms = 0;
  double value = 0;
};

std::string name_regex(std::initializer_list<std::string_view> names) {
  std::string out;
  for (const auto name : names) {
    if (!out.empty()) out += '|';
    out += name;  // metric names hold no regex metacharacters
  }
  return out;
}

// The last sample of each series named by `names` in [from_ms, to_ms], one series decoded at a time (a
// look back over the whole retention keeps one series' samples in memory, not all of them).
std::expected<std::vector<LastSample>, std::string> last_samples(const store::Queryable& history,
                                                                 const std::string& names, std::int64_t from_ms,
                                                                 std::int64_t to_ms) {
  auto matcher = store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, std::string(store::kMetricNameLabel), names);
  if (!matcher) return std::unexpected(matcher.error());
  const store::LabelMatcher matchers[] = {*matcher};
  std::vector<LastSample> out;
  store::Queryable::SeriesVisitor visitor;
  visitor.each = [&](store::SeriesSamples&& s) {
    const auto last = std::ranges::find_if(s.samples.rbegin(), s.samples.rend(),
                                           [](const store::Sample& x) { return !store::is_stale_marker(x.value); });
    if (last != s.samples.rend()) out.push_back({std::move(s.labels), last->t_ms, last->value});
    return true;
  };
  if (auto read = history.select_each(matchers, from_ms, to_ms, visitor); !read) return std::unexpected(read.error());
  return out;
}

// Every sample of the series named by `names` in [from_ms, to_ms].
std::expected<std::vector<store::SeriesSamples>, std::string> samples_of(const store::Queryable& history,
                                                                          const std::string& names,
                                                                          std::int64_t from_ms, std::int64_t to_ms) {
  auto matcher = store::LabelMatcher::make(store::LabelMatcher::Op::kRegex, std::string(store::kMetricNameLabel), names);
  if (!matcher) return std::unexpected(matcher.error());
  const store::LabelMatcher matchers[] = {*matcher};
  return history.select(matchers, from_ms, to_ms);
}

std::optional<unsigned> parse_pid(std::string_view text) {
  unsigned pid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return pid;
}

// A dollar series of another tier counts other dollars: not this run's counter.
bool in_tier(const store::Labels& labels, const std::string& tier) { return labels.get("tier") == tier; }

// The reading a GPU's series recorded at `t_ms`, as the cost report reads a reading: each series' latest
// value at or before it, no older than `max_age_ms` (a field the GPU did not give stays absent).
CostReading reading_at(const std::vector<store::SeriesSamples>& series, std::string_view uuid, std::int64_t t_ms,
                       std::int64_t max_age_ms, const std::string& tier) {
  using model::FieldId;
  const auto dcgm = [](FieldId id) { return model::FieldCatalog::get(id).dcgm_name; };
  const std::pair<std::string_view, std::optional<double> CostReading::*> fields[] = {
      {dcgm(FieldId::kGrEngineActive), &CostReading::gr_active},
      {dcgm(FieldId::kSmActive), &CostReading::sm_active},
      {dcgm(FieldId::kGpuUtil), &CostReading::utilization_percent},
      {dcgm(FieldId::kTotalEnergy), &CostReading::energy_millijoules},
      {dcgm(FieldId::kPowerUsage), &CostReading::power_watts},
  };
  CostReading r;
  r.t_ms = t_ms;
  for (const auto& s : series) {
    // A MIG instance's ratios are its own, not its GPU's reading.
    if (s.labels.get("UUID") != uuid || !s.labels.get("GPU_I_ID").empty()) continue;
    const auto after = std::ranges::upper_bound(s.samples, t_ms, {}, &store::Sample::t_ms);
    if (after == s.samples.begin()) continue;
    const auto at = std::prev(after);
    if (t_ms - at->t_ms > max_age_ms || store::is_stale_marker(at->value)) continue;
    const std::string_view name = s.labels.metric_name();
    if (name == kGpuUp) r.up = at->value != 0;
    if (name == kHourlyPrice && in_tier(s.labels, tier)) r.usd_per_hour = at->value;
    for (const auto& [field, member] : fields) {
      if (name == field) r.*member = at->value;
    }
  }
  return r;
}

}  // namespace

std::expected<std::vector<CostSeed>, std::string> read_cost_seeds(const store::Queryable& history,
                                                                  std::span<const std::string> uuids,
                                                                  const std::string& tier, std::int64_t now_ms,
                                                                  std::int64_t retention_ms,
                                                                  const analysis::CostRules& rules) {
  std::map<std::string, CostSeed, std::less<>> found;
  std::map<std::string, std::int64_t, std::less<>> last_reading_ms;
  const std::set<std::string, std::less<>> wanted(uuids.begin(), uuids.end());

  std::vector<std::int64_t> lookbacks;
  for (const std::int64_t step : kCostLookbackStepsMs) {
    if (step < retention_ms) lookbacks.push_back(step);
  }
  lookbacks.push_back(retention_ms);

  const std::string counter_names =
      name_regex({kGpuUp, exporter::kCostDollarsTotal, exporter::kCostIdleDollarsTotal,
                  exporter::kCostUnusedDollarsTotal, exporter::kEnergyJoulesTotal, exporter::kEnergyCostDollarsTotal});
  for (const std::int64_t lookback : lookbacks) {
    if (found.size() == wanted.size()) break;
    auto last = last_samples(history, counter_names, now_ms - lookback, now_ms);
    if (!last) return std::unexpected(fmt::format("reading the last {}s: {}", lookback / 1000, last.error()));
    // The GPUs first found in this window: their last reading is their latest gpuscope_gpu_up sample.
    for (const LastSample& s : *last) {
      const std::string_view uuid = s.labels.get("UUID");
      if (s.labels.metric_name() != kGpuUp || !wanted.contains(uuid) || found.contains(uuid)) continue;
      auto& t = last_reading_ms[std::string(uuid)];
      t = std::max(t, s.t_ms);
    }
    for (const auto& [uuid, t] : last_reading_ms) {
      if (found.contains(uuid)) continue;
      CostSeed seed;
      seed.uuid = uuid;
      // The GPU's counters as last recorded (a GPU with hpc_job labels has one series: they carry none).
      for (const LastSample& s : *last) {
        if (s.labels.get("UUID") != uuid) continue;
        const std::string_view name = s.labels.metric_name();
        // A MIG instance's dollars are its own counters (its GPU's are the unallocated slices'): continued
        // when recorded within a reading's reach of now, else the instance is gone.
        if (const std::string_view gi = s.labels.get("GPU_I_ID"); !gi.empty()) {
          const auto id = parse_pid(gi);
          if (!id || !in_tier(s.labels, tier) || now_ms - s.t_ms > rules.max_gap_ms) continue;
          analysis::MigInstanceKey key{*id, std::string(s.labels.get("GPU_I_PROFILE")), std::string(s.labels.get("pod")),
                                       std::string(s.labels.get("namespace")), std::string(s.labels.get("container"))};
          auto in = std::ranges::find(seed.mig_instances, key, &CostSeed::Instance::key);
          if (in == seed.mig_instances.end()) in = seed.mig_instances.insert(seed.mig_instances.end(), {key, {}, {}, {}, 0});
          in->last_seen_ms = std::max(in->last_seen_ms, s.t_ms);
          if (name == exporter::kCostDollarsTotal) in->dollars = s.value;
          if (name == exporter::kCostIdleDollarsTotal) in->idle_dollars = s.value;
          if (name == exporter::kCostUnusedDollarsTotal) in->unused_dollars = s.value;
          continue;
        }
        if (name == exporter::kEnergyJoulesTotal) seed.energy_joules = s.value;
        if (name == exporter::kEnergyCostDollarsTotal) seed.energy_dollars = s.value;
        if (!in_tier(s.labels, tier)) continue;
        if (name == exporter::kCostDollarsTotal) seed.dollars = s.value;
        if (name == exporter::kCostIdleDollarsTotal) seed.idle_dollars = s.value;
        if (name == exporter::kCostUnusedDollarsTotal) seed.unused_dollars = s.value;
      }
      found.emplace(uuid, std::move(seed));
    }
  }

  // The readings recent enough for the next one to bill the time since them, and the processes still
  // running then: within the longest gap a reading may stand for.
  const std::int64_t recent_from = now_ms - rules.max_gap_ms;
  if (std::ranges::any_of(last_reading_ms, [&](const auto& kv) { return kv.second >= recent_from; })) {
    using model::FieldId;
    const auto dcgm = [](FieldId id) { return model::FieldCatalog::get(id).dcgm_name; };
    auto series = samples_of(history,
                             name_regex({kGpuUp, kHourlyPrice, dcgm(FieldId::kGrEngineActive), dcgm(FieldId::kSmActive),
                                         dcgm(FieldId::kGpuUtil), dcgm(FieldId::kTotalEnergy),
                                         dcgm(FieldId::kPowerUsage)}),
                             recent_from - rules.max_gap_ms, now_ms);
    if (!series) return std::unexpected(fmt::format("reading the last readings: {}", series.error()));
    for (auto& [uuid, seed] : found) {
      const std::int64_t t = last_reading_ms.at(uuid);
      if (t >= recent_from) seed.last_reading = reading_at(*series, uuid, t, rules.max_gap_ms, tier);
    }
    auto processes = last_samples(history, std::string(exporter::kProcessCostDollarsTotal), recent_from, now_ms);
    if (!processes) return std::unexpected(fmt::format("reading the processes' counters: {}", processes.error()));
    for (const LastSample& s : *processes) {
      const auto seed = found.find(s.labels.get("UUID"));
      const auto pid = parse_pid(s.labels.get("pid"));
      if (seed == found.end() || !pid || !in_tier(s.labels, tier)) continue;
      seed->second.processes.push_back(
          {{*pid, std::string(s.labels.get("process_name")), std::string(s.labels.get("container_id"))}, s.value, s.t_ms});
    }
  }

  std::vector<CostSeed> out;
  out.reserve(found.size());
  for (auto& [uuid, seed] : found) out.push_back(std::move(seed));
  return out;
}

}  // namespace gpuscope::agent
