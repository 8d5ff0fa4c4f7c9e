#include "analysis/cost_meter.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "analysis/mig_cost.h"

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
  for (const auto& mi : seed.mig_instances) {
    InstanceState& is = state.instances[mi.key];
    is.totals.dollars = carried(mi.dollars);
    is.totals.idle_dollars = carried(mi.idle_dollars);
    is.totals.unused_dollars = carried(mi.unused_dollars);
    is.last_seen_ms = mi.last_seen_ms;
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

  // Who pays for the interval: the whole GPU, or in MIG mode each GPU instance its slices' share (weighed
  // by its own activity) and the GPU itself the unallocated slices' share (idle). Each part is an
  // interval and the share of the GPU's time it stands for.
  struct Part {
    std::optional<CostInterval> interval;
    double share = 1.0;
  };
  Part own{interval, 1.0};
  std::vector<Part> instance_parts;
  state.current_instances.clear();
  state.unallocated_slices = 0;
  if (!gpu.mig_instances.empty()) {
    unsigned allocated = 0;
    for (const MeteredMigInstance& mi : gpu.mig_instances) {
      allocated += mi.slices;
      Part part{std::nullopt, mig_share(mi.slices, gpu.mig_total_slices)};
      if (state.last) part.interval = cost_interval(*state.last, mig_instance_reading(cur, mi.gr_active, mi.sm_active), rules_);
      InstanceState& is = state.instances[mi.key];
      if (part.interval) is.totals.add(*part.interval, rules_, part.share);
      is.slices = mi.slices;
      is.last_seen_ms = t_ms;
      state.current_instances.push_back(mi.key);
      instance_parts.push_back(part);
    }
    state.unallocated_slices = allocated < gpu.mig_total_slices ? gpu.mig_total_slices - allocated : 0;
    own.share = mig_unallocated_share(allocated, gpu.mig_total_slices);
    own.interval.reset();
    if (state.last) own.interval = cost_interval(*state.last, mig_unallocated_reading(cur), rules_);
    if (own.interval && interval) {
      // The GPU's own counters keep its whole energy: energy is measured for the GPU, not per instance.
      CostInterval money = *own.interval;
      money.energy_joules = 0;
      state.totals.add(money, rules_, own.share);
      CostInterval energy;
      energy.energy_joules = interval->energy_joules;
      state.totals.add(energy, rules_);
    }
  } else if (interval) {
    state.totals.add(*interval, rules_);
  }
  state.last = cur;
  state.last_t_ms = t_ms;
  state.priced = finite(cur.usd_per_hour) || state.priced;
  state.energy_measured = state.energy_measured || (cur.up && (finite(cur.energy_millijoules) || finite(cur.power_watts)));

  if (gpu.processes_read) {
    // A process listed twice (compute and graphics) is one process with one share.
    std::vector<const MeteredProcess*> listed;
    listed.reserve(gpu.processes.size());
    for (const auto& p : gpu.processes) {
      if (std::ranges::any_of(listed, [&](const MeteredProcess* q) { return q->key.pid == p.key.pid; })) continue;
      listed.push_back(&p);
    }
    // Each process shares its part with the others in it: its GPU instance's, else the GPU's own.
    const auto part_of = [&](const MeteredProcess& p) -> std::size_t {
      if (!p.gpu_instance_id) return instance_parts.size();
      for (std::size_t i = 0; i < gpu.mig_instances.size(); ++i) {
        if (gpu.mig_instances[i].key.gpu_instance_id == *p.gpu_instance_id) return i;
      }
      return instance_parts.size();
    };
    state.current.clear();
    for (std::size_t part = 0; part <= instance_parts.size(); ++part) {
      const Part& where = part < instance_parts.size() ? instance_parts[part] : own;
      std::vector<const MeteredProcess*> members;
      std::vector<ProcessUse> uses;
      for (const MeteredProcess* p : listed) {
        if (part_of(*p) != part) continue;
        members.push_back(p);
        uses.push_back(p->use);
      }
      const std::vector<double> shares = process_shares(uses);
      for (std::size_t i = 0; i < members.size(); ++i) {
        const MeteredProcess& p = *members[i];
        ProcessState& ps = state.processes[p.key];
        if (where.interval) ps.totals.add(*where.interval, rules_, where.share * shares[i]);
        ps.last_seen_ms = t_ms;
        ps.memory_bytes = p.use.memory_bytes;
        ps.gpu_instance_id = part < instance_parts.size() ? std::optional(gpu.mig_instances[part].key.gpu_instance_id)
                                                          : std::nullopt;
      }
    }
    // In the reading's order, as the exporter lists them.
    for (const MeteredProcess* p : listed) state.current.push_back(p->key);
  } else {
    state.current.clear();
  }
  // A process not seen for longer than a reading may stand for has ended: its counter is not continued
  // (a process that comes back under the same key after that starts again at 0, as after a restart).
  std::erase_if(state.processes, [&](const auto& kv) { return t_ms - kv.second.last_seen_ms > rules_.max_gap_ms; });
  // So has a GPU instance (destroyed, or held by another pod since).
  std::erase_if(state.instances, [&](const auto& kv) { return t_ms - kv.second.last_seen_ms > rules_.max_gap_ms; });
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
      g.processes.push_back({key, it->second.totals, it->second.memory_bytes, it->second.gpu_instance_id});
    }
    for (const MigInstanceKey& key : state.current_instances) {
      const auto it = state.instances.find(key);
      if (it == state.instances.end()) continue;
      g.mig_instances.push_back({key, it->second.slices, it->second.totals});
    }
    g.mig_unallocated_slices = state.unallocated_slices;
    view->push_back(std::move(g));
  }
  published_.store(std::move(view), std::memory_order_release);
}

}  // namespace gpuscope::analysis
