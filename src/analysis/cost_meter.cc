#include "analysis/cost_meter.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace gpuscope::analysis {
namespace {

bool finite(const std::optional<double>& v) { return v && std::isfinite(*v); }

// A recorded counter value to continue from: a NaN or negative one (a damaged sample) is not a total.
double carried(const std::optional<double>& v) { return finite(v) && *v > 0 ? *v : 0.0; }

}  // namespace

CostMeter::CostMeter(CostRules rules) : rules_(std::move(rules)) {
  std::lock_guard lock(mu_);
  publish();
}

void CostMeter::seed(const CostSeed& seed) {
  std::lock_guard lock(mu_);
  GpuState& state = gpus_[seed.uuid];
  state = GpuState{};
  // Only the counters are carried over: the other sums (seconds, working share) are not exported, and
  // a report over the history recomputes them.
  state.totals.dollars = carried(seed.dollars);
  state.totals.idle_dollars = carried(seed.idle_dollars);
  state.totals.unused_dollars = carried(seed.unused_dollars);
  state.totals.energy_joules = carried(seed.energy_joules);
  state.totals.energy_dollars = carried(seed.energy_dollars);
  state.priced = seed.dollars.has_value();
  state.energy_measured = seed.energy_joules.has_value();
  if (seed.last_reading) {
    state.last = seed.last_reading;
    state.last_t_ms = seed.last_reading->t_ms;
  }
  for (const auto& p : seed.processes) {
    ProcessState& ps = state.processes[p.key];
    ps.totals.dollars = carried(p.dollars);
    ps.last_seen_ms = p.last_seen_ms;
  }
  publish();
}

void CostMeter::set_energy_usd_per_kwh(std::optional<double> usd_per_kwh) {
  std::lock_guard lock(mu_);
  rules_.energy_usd_per_kwh = usd_per_kwh;
}

void CostMeter::update(std::int64_t t_ms, std::span<const MeteredGpu> gpus) {
  std::lock_guard lock(mu_);
  for (const MeteredGpu& gpu : gpus) update_gpu(gpus_[gpu.uuid], gpu, t_ms);
  publish();
}

void CostMeter::update_gpu(GpuState& state, const MeteredGpu& gpu, std::int64_t t_ms) {
  CostReading cur = gpu.reading;
  cur.t_ms = t_ms;
  // A reading at or before the previous one (a clock stepped back) bills nothing and does not become
  // the previous reading: the time it would re-bill was billed already.
  if (state.last && t_ms <= state.last->t_ms) return;
  std::optional<CostInterval> interval;
  if (state.last) interval = cost_interval(*state.last, cur, rules_);
  if (interval) state.totals.add(*interval, rules_);
  state.last = cur;
  state.last_t_ms = t_ms;
  state.priced = finite(cur.usd_per_hour) || state.priced;
  state.energy_measured = state.energy_measured || (cur.up && (finite(cur.energy_millijoules) || finite(cur.power_watts)));

  if (gpu.processes_read) {
    // A process listed twice (compute and graphics) is one process with one share.
    std::vector<const MeteredProcess*> listed;
    std::vector<ProcessUse> uses;
    listed.reserve(gpu.processes.size());
    uses.reserve(gpu.processes.size());
    for (const auto& p : gpu.processes) {
      if (std::ranges::any_of(listed, [&](const MeteredProcess* q) { return q->key.pid == p.key.pid; })) continue;
      listed.push_back(&p);
      uses.push_back(p.use);
    }
    const std::vector<double> shares = process_shares(uses);
    state.current.clear();
    for (std::size_t i = 0; i < listed.size(); ++i) {
      const MeteredProcess& p = *listed[i];
      ProcessState& ps = state.processes[p.key];
      if (interval) ps.totals.add(*interval, rules_, shares[i]);
      ps.last_seen_ms = t_ms;
      ps.memory_bytes = p.use.memory_bytes;
      state.current.push_back(p.key);
    }
  } else {
    state.current.clear();
  }
  // A process not seen for longer than a reading may stand for has ended: its counter is not continued
  // (a process that comes back under the same key after that starts again at 0, as after a restart).
  std::erase_if(state.processes, [&](const auto& kv) { return t_ms - kv.second.last_seen_ms > rules_.max_gap_ms; });
}

void CostMeter::publish() {
  auto view = std::make_shared<std::vector<GpuCostTotals>>();
  view->reserve(gpus_.size());
  for (const auto& [uuid, state] : gpus_) {
    GpuCostTotals g;
    g.uuid = uuid;
    g.totals = state.totals;
    g.priced = state.priced;
    g.energy_measured = state.energy_measured;
    g.last_t_ms = state.last_t_ms;
    for (const ProcessKey& key : state.current) {
      const auto it = state.processes.find(key);
      if (it == state.processes.end()) continue;
      g.processes.push_back({key, it->second.totals, it->second.memory_bytes});
    }
    view->push_back(std::move(g));
  }
  published_.store(std::move(view), std::memory_order_release);
}

}  // namespace gpuscope::analysis
