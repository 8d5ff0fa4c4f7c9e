#include "analysis/cost_interval.h"

#include <algorithm>
#include <cmath>

namespace gpuscope::analysis {
namespace {

bool recorded(const std::optional<double>& v) { return v && std::isfinite(*v); }

CostActivity activity_of(const CostReading& r, const CostRules& rules) {
  if (!r.up) return CostActivity::kDown;
  const bool gr = recorded(r.gr_active);
  const bool util = recorded(r.utilization_percent);
  if (!gr && !util) return CostActivity::kUnknown;
  const bool gr_idle = !gr || *r.gr_active < rules.idle_gr_active;
  const bool util_idle = !util || *r.utilization_percent < rules.idle_utilization_percent;
  return gr_idle && util_idle ? CostActivity::kIdle : CostActivity::kBusy;
}

double energy_joules(const CostReading& prev, const CostReading& cur, double seconds) {
  if (!cur.up) return 0;
  if (recorded(prev.energy_millijoules) && recorded(cur.energy_millijoules)) {
    const double delta = *cur.energy_millijoules - *prev.energy_millijoules;
    // A counter that went back was reset (a driver reload): what it reads now was all spent since.
    return (delta >= 0 ? delta : *cur.energy_millijoules) / 1000.0;
  }
  if (recorded(cur.power_watts)) return std::max(0.0, *cur.power_watts) * seconds;
  return 0;
}

}  // namespace

std::optional<CostInterval> cost_interval(const CostReading& prev, const CostReading& cur, const CostRules& rules) {
  const std::int64_t gap = cur.t_ms - prev.t_ms;
  if (gap <= 0 || gap > rules.max_gap_ms) return std::nullopt;
  CostInterval out;
  out.seconds = static_cast<double>(gap) / 1000.0;
  out.activity = activity_of(cur, rules);
  if (out.activity == CostActivity::kBusy) {
    if (recorded(cur.sm_active)) {
      out.working_share = std::clamp(*cur.sm_active, 0.0, 1.0);
    } else if (recorded(cur.utilization_percent)) {
      out.working_share = std::clamp(*cur.utilization_percent / 100.0, 0.0, 1.0);
      out.working_from_utilization = true;
    } else {
      // GR engine active alone: kernels ran, how full they kept the SMs is not recorded.
      out.working_share = std::clamp(*cur.gr_active, 0.0, 1.0);
      out.working_from_utilization = true;
    }
  }
  if (recorded(cur.usd_per_hour) && *cur.usd_per_hour >= 0) out.dollars = *cur.usd_per_hour * out.seconds / 3600.0;
  out.energy_joules = energy_joules(prev, cur, out.seconds);
  return out;
}

CostTotals& CostTotals::operator+=(const CostTotals& o) {
  seconds += o.seconds;
  priced_seconds += o.priced_seconds;
  idle_seconds += o.idle_seconds;
  busy_seconds += o.busy_seconds;
  down_seconds += o.down_seconds;
  unknown_seconds += o.unknown_seconds;
  working_seconds += o.working_seconds;
  dollars += o.dollars;
  idle_dollars += o.idle_dollars;
  unused_dollars += o.unused_dollars;
  working_dollars += o.working_dollars;
  down_dollars += o.down_dollars;
  energy_joules += o.energy_joules;
  energy_dollars += o.energy_dollars;
  working_from_utilization = working_from_utilization || o.working_from_utilization;
  return *this;
}

void CostTotals::add(const CostInterval& in, const CostRules& rules, double share) {
  const double s = in.seconds * share;
  const double d = in.dollars.value_or(0) * share;
  seconds += s;
  if (in.dollars) priced_seconds += s;
  dollars += d;
  switch (in.activity) {
    case CostActivity::kIdle:
      idle_seconds += s;
      idle_dollars += d;
      unused_dollars += d;
      break;
    case CostActivity::kBusy:
      busy_seconds += s;
      working_seconds += s * in.working_share;
      working_dollars += d * in.working_share;
      unused_dollars += d * (1.0 - in.working_share);
      working_from_utilization = working_from_utilization || in.working_from_utilization;
      break;
    case CostActivity::kDown:
      down_seconds += s;
      down_dollars += d;
      unused_dollars += d;
      break;
    case CostActivity::kUnknown:
      unknown_seconds += s;
      break;
  }
  const double joules = in.energy_joules * share;
  energy_joules += joules;
  if (rules.energy_usd_per_kwh) energy_dollars += joules / kJoulesPerKwh * *rules.energy_usd_per_kwh;
}

double CostTotals::busy_not_working_dollars() const {
  return std::max(0.0, unused_dollars - idle_dollars - down_dollars);
}

std::optional<double> CostTotals::efficiency() const {
  if (seconds <= 0) return std::nullopt;
  return working_seconds / seconds;
}

std::vector<double> process_shares(std::span<const ProcessUse> processes) {
  std::vector<double> out(processes.size(), 0.0);
  if (processes.empty()) return out;
  const auto weigh = [&](auto value_of) {
    double sum = 0;
    for (const auto& p : processes) sum += value_of(p);
    if (!(sum > 0) || !std::isfinite(sum)) return false;
    for (std::size_t i = 0; i < processes.size(); ++i) out[i] = value_of(processes[i]) / sum;
    return true;
  };
  const auto positive = [](const std::optional<double>& v) { return v && std::isfinite(*v) && *v > 0 ? *v : 0.0; };
  if (weigh([&](const ProcessUse& p) { return positive(p.sm_util_percent); })) return out;
  if (weigh([&](const ProcessUse& p) { return positive(p.memory_bytes); })) return out;
  std::ranges::fill(out, 1.0 / static_cast<double>(processes.size()));
  return out;
}

}  // namespace gpuscope::analysis
