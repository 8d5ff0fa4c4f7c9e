// What one GPU's time between two readings cost and how it was spent: the unit the cost report
// (gpuscope cost) sums over a recorded history and the agent's cost counters add up live, so both
// count the same dollars. A GPU-hour held is paid whether it works or not; the split says how much of
// it bought work (SM-active-weighted), how much sat idle (no kernels, no copies), and how much was
// "busy but not working" (copies or tiny kernels: utilization.gpu high, SM active low).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gpuscope::analysis {

inline constexpr double kJoulesPerKwh = 3.6e6;

// One reading of one GPU, as the accounting weighs it; an absent value was not recorded.
struct CostReading {
  std::int64_t t_ms = 0;
  bool up = true;                                // gpuscope_gpu_up (false: the GPU fell off the bus)
  std::optional<double> gr_active;               // DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0-1
  std::optional<double> sm_active;               // DCGM_FI_PROF_SM_ACTIVE, 0-1
  std::optional<double> utilization_percent;     // DCGM_FI_DEV_GPU_UTIL
  std::optional<double> energy_millijoules;      // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (since the driver loaded)
  std::optional<double> power_watts;             // DCGM_FI_DEV_POWER_USAGE
  std::optional<double> usd_per_hour;            // gpuscope_gpu_hourly_price_dollars (absent: not priced)
};

enum class CostActivity {
  kIdle,            // no kernels and no copies: GR engine active and utilization.gpu both low
  kBusy,            // kernels or copies ran: working in proportion to SM active, the rest unused
  kDown,            // the GPU stopped answering: paid, nothing ran
  kUnknown,         // neither GR engine active nor utilization.gpu recorded: paid, split unknown
};

struct CostRules {
  // A reading stands for the time since the one before only up to this gap, Prometheus's lookback
  // (a sample is current for 5 minutes): a longer gap is the agent (or the recording) being away, and
  // that time is not billed, so a restart never counts the same time twice.
  std::int64_t max_gap_ms = 5 * 60 * 1000;
  // The diagnosis' idle line: GR engine active below 5 %, or utilization.gpu below 5 % without it.
  // Both must be low where both are recorded (copies keep utilization.gpu up with GR at 0: not idle).
  double idle_gr_active = 0.05;
  double idle_utilization_percent = 5;
  // USD per kWh (the catalog's energy_usd_per_kwh); absent: energy has no cost.
  std::optional<double> energy_usd_per_kwh;
};

// What one interval (prev.t, cur.t] cost, weighed by `cur` (a reading's ratios describe the period
// before it).
struct CostInterval {
  double seconds = 0;
  CostActivity activity = CostActivity::kUnknown;
  // The share that bought work: SM active, or utilization.gpu / 100 where SM active is not recorded
  // (an upper bound: `working_from_utilization`). 0 when idle or down.
  double working_share = 0;
  bool working_from_utilization = false;
  std::optional<double> dollars;  // absent: no price at cur
  double energy_joules = 0;       // from the energy counter (a counter that went back is a driver reload:
                                  // its new value is all within the interval), else power × time
};

// The interval's cost; none when cur is not after prev or the gap exceeds rules.max_gap_ms.
std::optional<CostInterval> cost_interval(const CostReading& prev, const CostReading& cur, const CostRules& rules);

// Sums of intervals; additive over time, GPUs and processes.
struct CostTotals {
  double seconds = 0;            // GPU time held (intervals with readings at both ends)
  double priced_seconds = 0;     // of which with a price
  double idle_seconds = 0;
  double busy_seconds = 0;
  double down_seconds = 0;
  double unknown_seconds = 0;
  double working_seconds = 0;    // Σ seconds × working share: GPU-seconds of work
  double dollars = 0;            // everything paid
  double idle_dollars = 0;       // paid while no kernels and no copies ran
  double unused_dollars = 0;     // paid while the SMs were idle: idle + down + busy × (1 − working share)
  double working_dollars = 0;    // busy × working share
  double down_dollars = 0;
  double energy_joules = 0;
  double energy_dollars = 0;
  bool working_from_utilization = false;  // some working share came from utilization.gpu (no SM active)

  CostTotals& operator+=(const CostTotals& other);
  // Adds one interval, its dollars scaled by `share` (a process's part of the GPU; 1 for the GPU).
  void add(const CostInterval& interval, const CostRules& rules, double share = 1.0);
  // busy_but_not_working = unused − idle − down.
  double busy_not_working_dollars() const;
  // The share of the time held that bought work (working GPU-seconds over seconds); none without time.
  std::optional<double> efficiency() const;
};

// What one process on a GPU used at a reading, to split the GPU's interval between its processes.
struct ProcessUse {
  std::optional<double> sm_util_percent;  // gpuscope_process_sm_utilization_ratio × 100
  std::optional<double> memory_bytes;     // gpuscope_process_memory_bytes
};

// Each process's share of the GPU's interval (summing to 1): by SM utilization where any process
// has some, else by memory held (an idle GPU is wasted by whoever holds its memory), else equal.
// Empty for no processes: the interval is the GPU's alone ("no process").
std::vector<double> process_shares(std::span<const ProcessUse> processes);

}  // namespace gpuscope::analysis
