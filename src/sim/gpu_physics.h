// One simulated GPU's physics over scenario time: the workload's activity turned into clocks,
// power, temperature and throttle reasons, and the counters NVML reports as integrals of them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/noise.h"
#include "sim/scenario.h"
#include "sim/workload.h"

namespace gpuscope::sim {

// Every time-dependent value is piecewise constant over cells of this length; counters integrate
// them exactly, so an integral read at any t agrees with the values read along the way.
inline constexpr double kCellS = 1.0;

// nvmlPerfPolicyType_t order.
enum Violation : std::size_t { kViolPower, kViolThermal, kViolSyncBoost, kViolBoardLimit, kViolLowUtil,
                               kViolReliability, kViolationCount };

struct PowerCapWindow {
  double from_s, until_s, limit_w;
};

// While a process holds a CUDA context the GPU does not park: its clocks stay up and it draws its
// context floor even with nothing running.
struct ContextWindow {
  double from_s, until_s;
};

struct Reading {
  double t = -1;
  Activity activity;
  double power_w = 0;
  double limit_w = 0;  // enforced power limit
  double temp_c = 0;
  double mem_temp_c = 0;  // HBM; only meaningful on boards that report it
  unsigned sm_mhz = 0;
  std::uint64_t reasons = 0;  // clock event reason bits
  // Integrals from scenario time 0 to t.
  double energy_j = 0;
  std::array<double, kViolationCount> violation_s{};
  std::array<double, kMetricCount> metric_integral{};  // ratio-seconds, or MiB for rates
  std::uint64_t pcie_replays = 0;
};

class GpuPhysics {
 public:
  GpuPhysics(const GpuSpec& spec, std::vector<PowerCapWindow> caps, std::vector<ContextWindow> contexts,
             std::uint64_t seed, unsigned gpu);

  // Everything at scenario time t >= 0. The reference stays valid until the next call.
  const Reading& at(double t);

  double enforced_limit_w(double t) const;

 private:
  struct Cell {  // the values of one cell
    Activity activity;
    double power_w, limit_w;
    double rise_target_c;  // steady temperature above the thermal line's intercept at this power
    unsigned sm_mhz;
    std::uint64_t reasons;
    bool replay;
  };
  struct State {  // integrals (and temperature) at the start of a cell
    double fast_rise_c = 0, slow_rise_c = 0;  // the two thermal poles, above the intercept
    double energy_j = 0;
    std::array<double, kViolationCount> violation_s{};
    std::array<double, kMetricCount> metric{};
    std::uint64_t replays = 0;
  };

  Cell eval(std::uint64_t k, const State& start) const;
  bool holds_context(double t) const;
  // The thermal poles `dt` seconds on, under a load whose steady rise is `rise_target_c`.
  static State relax(State s, double rise_target_c, double dt);
  double temp_of(const State& s) const { return intercept_c_ + s.fast_rise_c + s.slow_rise_c; }
  void advance_to(std::uint64_t k);

  const GpuSpec& spec_;
  const GpuModel& model_;
  std::vector<PowerCapWindow> caps_;
  std::vector<ContextWindow> contexts_;
  Noise noise_;
  std::uint64_t seed_;
  unsigned gpu_;
  double link_mibps_;          // the PCIe link's bandwidth as the scenario trained it
  double intercept_c_;         // steady die temperature is intercept + slope * power at nominal cooling
  double slope_c_per_w_;

  std::uint64_t k_ = 0;  // the cell `state_` starts
  State state_;
  std::vector<State> checkpoints_;  // state at cell i * kCheckpointCells, for going back in time
  bool have_cell_ = false;
  Cell cell_{};  // eval(k_, state_), cached
  Reading reading_;
};

}  // namespace gpuscope::sim
