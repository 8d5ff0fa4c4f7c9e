#include "sim/gpu_physics.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "nvml/nvml_abi.h"
#include "sim/mig.h"

namespace gpuscope::sim {
namespace {

// Die temperature: a fast pole (die to cold plate, well under a second) and a slow one (the cold
// plate and coolant). Measured on an H100 stepping from 130 W to 700 W: +18 °C within 1 s, then
// ~0.5 °C/s, 77 °C after 20 s.
constexpr double kFastThermalShare = 0.65;
constexpr double kFastThermalTauS = 0.7;
constexpr double kSlowThermalTauS = 20.0;
// Software thermal slowdown takes this share of the clock per °C over its threshold (measured: 1980 ->
// ~1900 MHz at 80 °C, one degree over).
constexpr double kSoftThrottlePerC = 0.04;
constexpr double kSoftThrottleFloor = 0.3;  // of the clock: the software slowdown goes no lower
constexpr double kHwThrottleFloor = 0.15;  // of the clock: the hardware slowdown's deepest cut
constexpr double kReplayProbabilityBusy = 2e-4;  // per cell: a replay or so an hour under load
constexpr std::uint64_t kCheckpointCells = 4096;
// Between bursts shorter than a cell (the 120 ms sleeps of an input-starved loop) the board does
// not settle to its idle power: measured 286 W for a 16% duty of 700 W bursts over a 130 W floor.
constexpr double kBurstGapPowerShare = 0.13;

// Power a workload draws above the board's context floor at full clocks, as a share of the range
// from that floor to TDP (1 = TDP), per unit of each activity. Fitted on the H100 recording's phases
// (tiny kernels 138 W, host-to-device copy 140 W, device copy 412 W, fp32 matmul ~700 W, bf16 matmul
// ~955 W of demand, which the 700 W cap holds at 1361 MHz).
constexpr double kPowerPerGr = 0.058;
constexpr double kPowerPerSm = 0.175;
constexpr double kPowerPerTensor = 1.23;
constexpr double kPowerPerDram = 0.295;
constexpr double kPowerPerFpPipe = 0.96;        // FP32, FP16 and FP64 pipes alike
constexpr double kPowerPerPcieLink = 0.015;     // per link's worth of traffic, both directions

constexpr double kHbmOffsetC = 5.5;
constexpr double kHbmDieCoupling = 0.5;
constexpr double kHbmPerDramActive = 20.0;

double dynamic_fraction(const Activity& a, double link_mibps) {
  const auto& m = a.metric;
  const double pcie = link_mibps > 0 ? (m[kPcieRxMiBps] + m[kPcieTxMiBps]) / link_mibps : 0;
  return kPowerPerGr * m[kGrActive] + kPowerPerSm * m[kSmActive] + kPowerPerTensor * m[kTensorActive] +
         kPowerPerDram * m[kDramActive] + kPowerPerFpPipe * (m[kFp32Active] + m[kFp16Active] + m[kFp64Active]) +
         kPowerPerPcieLink * pcie;
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

GpuPhysics::GpuPhysics(const GpuSpec& spec, std::vector<PowerCapWindow> caps, std::vector<ContextWindow> contexts,
                       std::uint64_t seed, unsigned gpu)
    : spec_(spec),
      model_(*spec.model),
      caps_(std::move(caps)),
      contexts_(std::move(contexts)),
      noise_(seed, gpu),
      seed_(seed),
      gpu_(gpu),
      link_mibps_(pcie_link_mibps(spec.pcie_gen, spec.pcie_width)),
      intercept_c_(0),
      slope_c_per_w_((model_.tdp_temp_c - model_.idle_temp_c) / (model_.tdp_w - model_.idle_w)) {
  intercept_c_ = model_.idle_temp_c - slope_c_per_w_ * model_.idle_w;
  // Start in thermal equilibrium with the first second's load, as a node that has been running.
  const Cell first = eval(0, State{});
  state_.fast_rise_c = kFastThermalShare * first.rise_target_c;
  state_.slow_rise_c = (1.0 - kFastThermalShare) * first.rise_target_c;
  checkpoints_.push_back(state_);
}

double GpuPhysics::enforced_limit_w(double t) const {
  double limit = spec_.power_limit_w;
  for (const PowerCapWindow& c : caps_) {
    if (t >= c.from_s && t < c.until_s) limit = std::min(limit, c.limit_w);
  }
  return limit;
}

bool GpuPhysics::holds_context(double t) const {
  return std::any_of(contexts_.begin(), contexts_.end(),
                     [t](const ContextWindow& w) { return t >= w.from_s && t < w.until_s; });
}

GpuPhysics::Cell GpuPhysics::eval(std::uint64_t k, const State& start) const {
  const double t = static_cast<double>(k) * kCellS;
  const auto phase = std::prev(std::upper_bound(spec_.phases.begin(), spec_.phases.end(), t,
                                                [](double v, const Phase& p) { return v < p.at_s; }));
  Cell c{};
  // In MIG mode the instances run the work (the GPU's own workload waits until MIG is off again).
  c.activity = spec_.mig_enabled_at(t) ? mig_gpu_activity(spec_, model_, link_mibps_, seed_, gpu_, k)
                                       : workload_activity(phase->spec, t - phase->at_s, k, model_, link_mibps_, noise_);
  c.limit_w = enforced_limit_w(t);
  const double power_noise = 1.0 + 0.02 * noise_.symmetric(Signal::kPower, k);
  std::uint64_t reasons = 0;
  double power = 0;
  if (!c.activity.busy()) {
    if (holds_context(t)) {
      // Measured: nothing running but a context held reads P0, full clocks, no clock event reason.
      c.sm_mhz = model_.max_sm_mhz;
      power = model_.context_idle_w * power_noise;
    } else {
      reasons |= nvmlClocksEventReasonGpuIdle;
      c.sm_mhz = model_.idle_sm_mhz;
      power = model_.idle_w * power_noise;
    }
  } else {
    // Bursts shorter than a cell run at their own intensity, the cell's mean over the duty.
    const double duty = std::clamp(c.activity.duty, 0.01, 1.0);
    Activity burst = c.activity;
    for (std::size_t m = 0; m < kMetricCount; ++m) {
      burst.metric[m] /= duty;
      if (!is_rate_metric(m)) burst.metric[m] = std::min(1.0, burst.metric[m]);
    }
    // A running kernel holds a context: the board's floor is its context power.
    const double floor = model_.context_idle_w;
    const double dynamic = (model_.tdp_w - floor) * dynamic_fraction(burst, link_mibps_) * power_noise;
    double clock = 1.0;
    if (c.activity.board_clock_factor < 1.0) {
      clock *= c.activity.board_clock_factor;
      reasons |= nvmlClocksThrottleReasonHwSlowdown;
    }
    // The fast thermal pole settles within a cell, so the driver's thermal controller acts on the
    // temperature this cell's power brings, temp(clock) = a + b * clock, not on the last reading
    // (which would make it swing between full clocks and the floor from one second to the next).
    const double gain = kFastThermalShare * slope_c_per_w_ * c.activity.cooling_degradation;
    const double a = intercept_c_ + start.slow_rise_c + gain * floor;
    const double b = gain * dynamic * duty;
    if (a + b * clock >= model_.soft_throttle_c) {
      reasons |= nvmlClocksEventReasonSwThermalSlowdown;
      // clock = c0 * (1 - k * (temp(clock) - threshold)), solved for clock.
      const double k = kSoftThrottlePerC;
      const double solved = clock * (1.0 - k * (a - model_.soft_throttle_c)) / (1.0 + clock * k * b);
      clock = std::clamp(solved, kSoftThrottleFloor * clock, clock);
    }
    if (a + b * clock >= model_.slowdown_c) {
      // The hardware slowdown brakes as hard as it takes to hold the die at its threshold.
      reasons |= nvmlClocksThrottleReasonHwThermalSlowdown;
      const double held = b > 0 ? (model_.slowdown_c - a) / b : clock;
      clock = std::clamp(held, std::min(clock, kHwThrottleFloor), clock);
    }
    const double unthrottled_clock = clock;
    power = floor + dynamic * clock;
    // The power controller lowers clocks until the board fits under its enforced limit.
    const double target = c.limit_w * 0.995;
    if (power > target && dynamic > 0) {
      reasons |= nvmlClocksEventReasonSwPowerCap;
      clock = std::max(0.0, (target - floor) / dynamic);
      power = floor + dynamic * clock;
    }
    if (duty < 1.0) {
      // A clock sample lands between bursts most of the time; power lingers above the floor there.
      power = duty * power + (1.0 - duty) * (floor + kBurstGapPowerShare * (power - floor));
      clock = duty * clock + (1.0 - duty) * unthrottled_clock;
    }
    const double mhz = std::clamp(model_.max_sm_mhz * clock, static_cast<double>(model_.idle_sm_mhz),
                                  static_cast<double>(model_.max_sm_mhz));
    c.sm_mhz = std::min(round_clock(mhz), model_.max_sm_mhz);
  }
  c.power_w = std::min(power, c.limit_w);
  c.reasons = reasons;
  c.rise_target_c = c.power_w * slope_c_per_w_ * c.activity.cooling_degradation;
  const double replay_p = c.activity.busy() ? kReplayProbabilityBusy : kReplayProbabilityBusy / 10;
  c.replay = noise_.unit(Signal::kReplay, k) < replay_p;
  return c;
}

GpuPhysics::State GpuPhysics::relax(State s, double rise_target_c, double dt) {
  const double fast = kFastThermalShare * rise_target_c;
  const double slow = (1.0 - kFastThermalShare) * rise_target_c;
  s.fast_rise_c = fast + (s.fast_rise_c - fast) * std::exp(-dt / kFastThermalTauS);
  s.slow_rise_c = slow + (s.slow_rise_c - slow) * std::exp(-dt / kSlowThermalTauS);
  return s;
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
      cell_ = eval(k_, state_);
      have_cell_ = true;
    }
    if (k_ == k) break;
    const Cell& c = cell_;
    state_.energy_j += c.power_w * kCellS;
    add_violations(c.reasons, kCellS, state_.violation_s);
    for (std::size_t m = 0; m < kMetricCount; ++m) state_.metric[m] += c.activity.metric[m] * kCellS;
    if (c.replay) ++state_.replays;
    state_ = relax(state_, c.rise_target_c, kCellS);
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
  const State now = relax(state_, c.rise_target_c, dt);
  r.temp_c = temp_of(now);
  // HBM shares the cold plate with the die but heats with its own traffic (measured on an H100: 77 °C
  // against a 65 °C die under a device copy, 69 °C against 77 °C under a bf16 GEMM).
  r.mem_temp_c = intercept_c_ + kHbmOffsetC + kHbmDieCoupling * (r.temp_c - intercept_c_) +
                 kHbmPerDramActive * c.activity.metric[kDramActive];
  r.energy_j = state_.energy_j + c.power_w * dt;
  r.violation_s = state_.violation_s;
  add_violations(c.reasons, dt, r.violation_s);
  for (std::size_t m = 0; m < kMetricCount; ++m) r.metric_integral[m] = state_.metric[m] + c.activity.metric[m] * dt;
  r.pcie_replays = state_.replays;
  return r;
}

}  // namespace gpuscope::sim
