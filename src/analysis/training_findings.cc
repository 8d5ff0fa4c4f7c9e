#include "analysis/training_findings.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/gpu_signals.h"

namespace gpuscope::analysis {

namespace {

// A straggler's GPU clock this far below its peers' (median) is why it is slow: GPU Boost moves clocks by
// a few percent between identical boards, a throttled one drops by tens of percent.
constexpr double kSlowClockRatio = 0.9;
// A GPU this much hotter than the hottest of its peers runs differently (airflow, a failing fan).
constexpr double kHotterThanPeersCelsius = 10;

const model::GpuSample* sample_of(const TrainingContext& context, unsigned index) {
  if (context.snapshot == nullptr) return nullptr;
  for (const auto& g : context.snapshot->gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

std::optional<double> field_of(const model::GpuSample* g, model::FieldId id) {
  if (g == nullptr || !g->up || !(*g)[id].valid()) return std::nullopt;
  return (*g)[id].value;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The throttle reasons a straggler's GPU has on and most of its peers do not.
std::vector<std::string_view> own_throttle_reasons(std::uint64_t mine, std::span<const std::uint64_t> peers) {
  struct Reason {
    std::uint64_t bit;
    std::string_view name;
  };
  static constexpr Reason kReasons[] = {{kThrottleHwSlowdown, "hardware slowdown"},
                                        {kThrottleHwThermal, "hardware thermal slowdown"},
                                        {kThrottleSwThermal, "software thermal slowdown"},
                                        {kThrottleHwPowerBrake, "power brake"},
                                        {kThrottleSwPowerCap, "power cap"}};
  std::vector<std::string_view> out;
  for (const auto& r : kReasons) {
    if ((mine & r.bit) == 0) continue;
    const auto with = std::count_if(peers.begin(), peers.end(), [&](std::uint64_t p) { return (p & r.bit) != 0; });
    if (2 * static_cast<std::size_t>(with) < peers.size() || peers.empty()) out.push_back(r.name);
  }
  return out;
}

struct StragglerCause {
  std::string id;
  std::string text;
};

// What the straggler's GPU shows that its peers' GPUs (the other ranks' on this node) do not.
StragglerCause straggler_cause(std::optional<unsigned> gpu, std::span<const unsigned> peer_gpus,
                            const TrainingContext& context) {
  if (!gpu) {
    return {"gpu_unknown",
            "its GPU is unknown (the rank sent no gpu, and its pid holds none in the latest reading): "
            "compare its data loading, CPU and network with the other ranks'"};
  }
  const model::GpuSample* mine = sample_of(context, *gpu);
  if (mine == nullptr || !mine->up) return {"no_reading", fmt::format("its GPU {} has no reading", *gpu)};
  std::vector<double> peer_clocks, peer_temps;
  std::vector<std::uint64_t> peer_reasons;
  for (const unsigned p : peer_gpus) {
    if (p == *gpu) continue;
    const model::GpuSample* g = sample_of(context, p);
    if (auto c = field_of(g, model::FieldId::kSmClock)) peer_clocks.push_back(*c);
    if (auto t = field_of(g, model::FieldId::kGpuTemp)) peer_temps.push_back(*t);
    if (auto r = field_of(g, model::FieldId::kClocksEventReasons)) peer_reasons.push_back(static_cast<std::uint64_t>(*r));
  }
  std::vector<std::string> causes;
  std::string id;
  const auto clock = field_of(mine, model::FieldId::kSmClock);
  if (clock && !peer_clocks.empty()) {
    const double peers = median(peer_clocks);
    if (*clock < kSlowClockRatio * peers) {
      causes.push_back(fmt::format("its GPU {} runs at {:.0f} MHz, the other ranks' GPUs at {:.0f} MHz", *gpu, *clock, peers));
      id = "gpu_clock";
    }
  }
  if (auto reasons = field_of(mine, model::FieldId::kClocksEventReasons)) {
    const auto own = own_throttle_reasons(static_cast<std::uint64_t>(*reasons), peer_reasons);
    if (!own.empty()) {
      causes.push_back(fmt::format("GPU {} is held back by {}", *gpu, fmt::join(own, ", ")));
      if (id.empty()) id = "gpu_throttled";
    }
  }
  if (auto temp = field_of(mine, model::FieldId::kGpuTemp)) {
    const auto slowdown = field_of(mine, model::FieldId::kSlowdownTemp);
    const double hottest_peer = peer_temps.empty() ? 0 : *std::max_element(peer_temps.begin(), peer_temps.end());
    if (slowdown && *temp >= *slowdown) {
      causes.push_back(fmt::format("GPU {} is at {:.0f} °C, at its slowdown temperature ({:.0f} °C)", *gpu, *temp, *slowdown));
      if (id.empty()) id = "gpu_hot";
    } else if (!peer_temps.empty() && *temp >= hottest_peer + kHotterThanPeersCelsius) {
      causes.push_back(fmt::format("GPU {} is at {:.0f} °C, the others at most {:.0f} °C", *gpu, *temp, hottest_peer));
      if (id.empty()) id = "gpu_hot";
    }
  }
  if (causes.empty()) {
    return {"host", fmt::format("its GPU {} looks like the others' (clocks, temperature, no throttling): the time goes "
                                "elsewhere: its data loading, CPU, or the network to it",
                                *gpu)};
  }
  return {id, fmt::format("{}", fmt::join(causes, "; "))};
}

std::optional<StallFinding> find_stall(const JobView& job, const TrainingContext& context,
                                       const TrainingThresholds& thresholds) {
  std::optional<std::int64_t> last_ms;
  std::uint64_t last_step = 0;
  for (const auto& r : job.ranks) {
    if (!r.last_step_ms) continue;
    if (!last_ms || *r.last_step_ms > *last_ms) {
      last_ms = r.last_step_ms;
      last_step = r.last_step;
    }
  }
  if (!last_ms || context.now_ms - *last_ms <= thresholds.stall_after.count()) return std::nullopt;
  StallFinding finding{static_cast<double>(context.now_ms - *last_ms) / 1000.0, last_step, {}};
  std::vector<std::string> holding, alive;
  bool any_pid = false;
  for (const auto& r : job.ranks) {
    if (!r.pid) continue;
    any_pid = true;
    bool on_gpu = false;
    if (context.snapshot != nullptr) {
      for (const auto& g : context.snapshot->gpus) {
        for (const auto& p : g.processes) {
          if (static_cast<int>(p.pid) != *r.pid) continue;
          on_gpu = true;
          holding.push_back(p.used_memory_bytes
                                ? fmt::format("pid {} (rank {}) holds {:.1f} GiB on GPU {}", *r.pid, r.rank,
                                              static_cast<double>(*p.used_memory_bytes) / (1ULL << 30), g.index)
                                : fmt::format("pid {} (rank {}) runs on GPU {}", *r.pid, r.rank, g.index));
        }
      }
    }
    if (!on_gpu && (!context.process_alive || context.process_alive(*r.pid))) {
      alive.push_back(fmt::format("pid {} (rank {}) is alive", *r.pid, r.rank));
    }
  }
  if (!any_pid) {
    finding.detail = "no rank sent its pid, so the agent cannot tell a stall from a job that ended";
    return finding;
  }
  if (holding.empty() && alive.empty()) return std::nullopt;  // every process is gone: the job ended
  holding.insert(holding.end(), alive.begin(), alive.end());
  finding.detail = fmt::format("{}", fmt::join(holding, "; "));
  return finding;
}

void find_straggler(const JobView& job, const TrainingContext& context, const TrainingThresholds& thresholds,
                    JobFindings& out) {
  std::vector<const RankView*> counted;
  for (const auto& r : job.ranks) {
    if (r.window_steps >= thresholds.straggler_min_steps && r.window_mean_s > 0) counted.push_back(&r);
  }
  if (counted.size() < 2) return;
  double sum = 0;
  for (const auto* r : counted) sum += r->window_mean_s;
  const double mean = sum / static_cast<double>(counted.size());
  double squares = 0;
  for (const auto* r : counted) squares += (r->window_mean_s - mean) * (r->window_mean_s - mean);
  const double cv = std::sqrt(squares / static_cast<double>(counted.size())) / mean;
  out.step_time_cv = cv;
  if (!(cv > thresholds.straggler_cv)) return;
  const RankView* slowest = *std::max_element(counted.begin(), counted.end(), [](const RankView* a, const RankView* b) {
    return a->window_mean_s < b->window_mean_s;
  });
  const double others = (sum - slowest->window_mean_s) / static_cast<double>(counted.size() - 1);
  std::vector<unsigned> peer_gpus;
  for (const auto* r : counted) {
    if (r == slowest) continue;
    if (auto g = rank_gpu(*r, context)) peer_gpus.push_back(*g);
  }
  const auto gpu = rank_gpu(*slowest, context);
  auto cause = straggler_cause(gpu, peer_gpus, context);
  out.straggler = StragglerFinding{slowest->rank, gpu, slowest->window_mean_s, others, std::move(cause.id),
                                   std::move(cause.text)};
}

void find_memory_growth(const JobView& job, const TrainingThresholds& thresholds, JobFindings& out) {
  const std::size_t need = thresholds.memory_growth_boundaries;
  for (const auto& r : job.ranks) {
    const auto& b = r.boundary_allocated_bytes;
    if (need == 0 || b.size() < need + 1) continue;
    const std::size_t first = b.size() - need - 1;
    bool grew = true;
    for (std::size_t i = first + 1; i < b.size(); ++i) grew = grew && b[i] > b[i - 1];
    const double growth = b.back() - b[first];
    if (grew && growth >= thresholds.memory_growth_min_bytes) {
      out.memory_not_released.push_back({r.rank, growth, need});
    }
  }
}

}  // namespace

std::optional<unsigned> rank_gpu(const RankView& rank, const TrainingContext& context) {
  if (rank.gpu) {
    const std::string& id = *rank.gpu;
    unsigned index = 0;
    const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), index);
    if (ec == std::errc() && end == id.data() + id.size()) return index;
    for (const auto& g : context.gpus) {
      if (g.uuid == id) return g.index;
    }
  }
  if (rank.pid && context.snapshot != nullptr) {
    for (const auto& g : context.snapshot->gpus) {
      for (const auto& p : g.processes) {
        if (static_cast<int>(p.pid) == *rank.pid) return g.index;
      }
    }
  }
  return std::nullopt;
}

std::vector<JobFindings> find_training_problems(std::span<const JobView> jobs, const TrainingContext& context,
                                                const TrainingThresholds& thresholds) {
  std::vector<JobFindings> out;
  out.reserve(jobs.size());
  for (const auto& job : jobs) {
    JobFindings f;
    f.job = job.job;
    f.stalled = find_stall(job, context, thresholds);
    find_straggler(job, context, thresholds, f);
    find_memory_growth(job, thresholds, f);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gpuscope::analysis
