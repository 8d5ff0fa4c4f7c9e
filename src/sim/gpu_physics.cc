#include "sim/gpu_physics.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "nvml/nvml_abi.h"

namespace gpuscope::sim {
namespace {

constexpr double kAmbientC = 27.0;
constexpr double kThermalTauS = 45.0;  // heat sink time constant: temperature lags power by tens of s
constexpr double kSxmTempAtTdpC = 68.0;
constexpr double kPcieTempAtTdpC = 76.0;  // passive PCIe boards rely on chassis airflow, run hotter
constexpr double kSoftThrottleMarginC = 5.0;
constexpr double kHwThrottleFactor = 0.6;
constexpr double kReplayProbabilityBusy = 2e-4;  // per cell: a replay or so an hour under load
constexpr std::uint64_t kCheckpointCells = 4096;

// Share of the board's dynamic power range a workload draws at full clocks; 1 is about TDP.
double dynamic_fraction(const Activity& a) {
  const auto& m = a.metric;
  return (0.15 * m[kGrActive] + 0.35 * m[kSmActive] + 0.35 * m[kTensorActive] + 0.20 * m[kDramActive] +
          0.10 * m[kFp32Active]) /
         0.8;
}

unsigned round_clock(double mhz) { return static_cast<unsigned>(std::lround(mhz / 15.0) * 15); }

// Each violation counter runs only while its clock event reason is set.
void add_violations(std::uint64_t reasons, double dt, std::array<double, kViolationCount>& v) {
  const auto add_if = [&](Violation which, std::uint64_t mask) {
    if ((reasons & mask) != 0) v[which] += dt;
  };
  add_if(kViolPower, nvmlClocksEventReasonSwPowerCap);
  add_if(kViolThermal, nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksThrottleReasonHwThermalSlowdown);
  add_if(kViolSyncBoost, nvmlClocksEventReasonSyncBoost);
  add_if(kViolBoardLimit, nvmlClocksThrottleReasonHwSlowdown);
  add_if(kViolLowUtil, nvmlClocksEventReasonGpuIdle);
}

}  // namespace

GpuPhysics::GpuPhysics(const GpuSpec& spec, std::vector<PowerCapWindow> caps, std::uint64_t seed, unsigned gpu)
    : spec_(spec),
      model_(*spec.model),
      caps_(std::move(caps)),
      noise_(seed, gpu),
      thermal_resistance_(((model_.sxm ? kSxmTempAtTdpC : kPcieTempAtTdpC) - kAmbientC) / model_.tdp_w),
      cell_decay_(std::exp(-kCellS / kThermalTauS)) {
  // Start in thermal equilibrium with the first second's load, as a node that has been running.
  const Cell first = eval(0, kAmbientC);
  state_.temp_c = first.temp_target_c;
  checkpoints_.push_back(state_);
}

double GpuPhysics::enforced_limit_w(double t) const {
  double limit = spec_.power_limit_w;
  for (const PowerCapWindow& c : caps_) {
    if (t >= c.from_s && t < c.until_s) limit = std::min(limit, c.limit_w);
  }
  return limit;
}

GpuPhysics::Cell GpuPhysics::eval(std::uint64_t k, double temp_c) const {
  const double t = static_cast<double>(k) * kCellS;
  const auto phase = std::prev(std::upper_bound(spec_.phases.begin(), spec_.phases.end(), t,
                                                [](double v, const Phase& p) { return v < p.at_s; }));
  Cell c{};
  c.activity = workload_activity(phase->spec, t - phase->at_s, k, model_, noise_);
  c.limit_w = enforced_limit_w(t);
  const double power_noise = 1.0 + 0.02 * noise_.symmetric(Signal::kPower, k);
  std::uint64_t reasons = 0;
  double power = 0;
  if (!c.activity.busy()) {
    reasons |= nvmlClocksEventReasonGpuIdle;
    c.sm_mhz = model_.idle_sm_mhz;
    power = model_.idle_w * power_noise;
  } else {
    double clock = 1.0;
    if (c.activity.board_clock_factor < 1.0) {
      clock *= c.activity.board_clock_factor;
      reasons |= nvmlClocksThrottleReasonHwSlowdown;
    }
    const double soft = model_.slowdown_c - kSoftThrottleMarginC;
    if (temp_c >= soft) {
      reasons |= nvmlClocksEventReasonSwThermalSlowdown;
      clock *= std::clamp(1.0 - 0.08 * (temp_c - soft), 0.3, 1.0);
    }
    if (temp_c >= model_.slowdown_c) {
      reasons |= nvmlClocksThrottleReasonHwThermalSlowdown;
      clock *= kHwThrottleFactor;
    }
    const double dynamic = (model_.tdp_w - model_.idle_w) * dynamic_fraction(c.activity) * power_noise;
    power = model_.idle_w + dynamic * clock;
    // The power controller lowers clocks until the board fits under its enforced limit.
    const double target = c.limit_w * 0.995;
    if (power > target && dynamic > 0) {
      reasons |= nvmlClocksEventReasonSwPowerCap;
      clock = std::max(0.0, (target - model_.idle_w) / dynamic);
      power = model_.idle_w + dynamic * clock;
    }
    const double mhz = std::clamp(model_.max_sm_mhz * clock, static_cast<double>(model_.idle_sm_mhz),
                                  static_cast<double>(model_.max_sm_mhz));
    c.sm_mhz = std::min(round_clock(mhz), model_.max_sm_mhz);
  }
  c.power_w = std::min(power, c.limit_w);
  c.reasons = reasons;
  c.temp_target_c = kAmbientC + c.power_w * thermal_resistance_ * c.activity.cooling_degradation;
  const double replay_p = c.activity.busy() ? kReplayProbabilityBusy : kReplayProbabilityBusy / 10;
  c.replay = noise_.unit(Signal::kReplay, k) < replay_p;
  return c;
}

void GpuPhysics::advance_to(std::uint64_t k) {
  if (k < k_) {
    // Time went backwards (a client froze an earlier t): replay from the last checkpoint.
    const std::uint64_t idx = std::min<std::uint64_t>(k / kCheckpointCells, checkpoints_.size() - 1);
    state_ = checkpoints_[idx];
    k_ = idx * kCheckpointCells;
    have_cell_ = false;
  }
  while (k_ < k || !have_cell_) {
    if (!have_cell_) {
      cell_ = eval(k_, state_.temp_c);
      have_cell_ = true;
    }
    if (k_ == k) break;
    const Cell& c = cell_;
    state_.energy_j += c.power_w * kCellS;
    add_violations(c.reasons, kCellS, state_.violation_s);
    for (std::size_t m = 0; m < kMetricCount; ++m) state_.metric[m] += c.activity.metric[m] * kCellS;
    if (c.replay) ++state_.replays;
    state_.temp_c = c.temp_target_c + (state_.temp_c - c.temp_target_c) * cell_decay_;
    ++k_;
    have_cell_ = false;
    if (k_ % kCheckpointCells == 0 && k_ / kCheckpointCells == checkpoints_.size()) checkpoints_.push_back(state_);
  }
}

const Reading& GpuPhysics::at(double t) {
  t = std::max(0.0, t);
  if (t == reading_.t) return reading_;
  const auto k = static_cast<std::uint64_t>(std::floor(t / kCellS));
  advance_to(k);
  const Cell& c = cell_;
  const double dt = t - static_cast<double>(k) * kCellS;
  Reading& r = reading_;
  r.t = t;
  r.activity = c.activity;
  r.power_w = c.power_w;
  r.limit_w = c.limit_w;
  r.sm_mhz = c.sm_mhz;
  r.reasons = c.reasons;
  r.temp_c = c.temp_target_c + (state_.temp_c - c.temp_target_c) * std::exp(-dt / kThermalTauS);
  r.energy_j = state_.energy_j + c.power_w * dt;
  r.violation_s = state_.violation_s;
  add_violations(c.reasons, dt, r.violation_s);
  for (std::size_t m = 0; m < kMetricCount; ++m) r.metric_integral[m] = state_.metric[m] + c.activity.metric[m] * dt;
  r.pcie_replays = state_.replays;
  return r;
}

}  // namespace gpuscope::sim
