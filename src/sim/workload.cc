#include "sim/workload.h"

#include <algorithm>
#include <cmath>

namespace gpuscope::sim {
namespace {

// Nominal engine levels of a busy profile; noise and `level` are applied by make_busy().
struct BusyShape {
  double sm, gr, occupancy, tensor, dram, fp64, fp32, fp16, integer;
  double pcie_rx_mibps, pcie_tx_mibps;
  double nvlink_share;  // of the model's NVLink bandwidth under all-reduce
  double util;
};

constexpr BusyShape kTraining{.sm = 0.82, .gr = 0.90, .occupancy = 0.42, .tensor = 0.50, .dram = 0.45, .fp64 = 0,
                              .fp32 = 0.10, .fp16 = 0.22, .integer = 0.12, .pcie_rx_mibps = 600,
                              .pcie_tx_mibps = 120, .nvlink_share = 0.8, .util = 0.98};
constexpr BusyShape kNoTensor{.sm = 0.80, .gr = 0.90, .occupancy = 0.45, .tensor = 0, .dram = 0.35, .fp64 = 0.02,
                              .fp32 = 0.55, .fp16 = 0, .integer = 0.20, .pcie_rx_mibps = 400, .pcie_tx_mibps = 80,
                              .nvlink_share = 0.5, .util = 0.98};
constexpr BusyShape kMemoryBound{.sm = 0.35, .gr = 0.92, .occupancy = 0.30, .tensor = 0.03, .dram = 0.88,
                                 .fp64 = 0, .fp32 = 0.12, .fp16 = 0.05, .integer = 0.10, .pcie_rx_mibps = 300,
                                 .pcie_tx_mibps = 60, .nvlink_share = 0.3, .util = 0.98};
constexpr BusyShape kSmallKernels{.sm = 0.25, .gr = 0.88, .occupancy = 0.08, .tensor = 0.05, .dram = 0.12,
                                  .fp64 = 0, .fp32 = 0.08, .fp16 = 0.04, .integer = 0.10, .pcie_rx_mibps = 200,
                                  .pcie_tx_mibps = 50, .nvlink_share = 0.1, .util = 0.95};
constexpr BusyShape kStarved{.sm = 0.04, .gr = 0.12, .occupancy = 0.02, .tensor = 0.01, .dram = 0.05, .fp64 = 0,
                             .fp32 = 0.01, .fp16 = 0.01, .integer = 0.02, .pcie_rx_mibps = 0, .pcie_tx_mibps = 100,
                             .nvlink_share = 0.02, .util = 0.45};
constexpr BusyShape kInference{.sm = 0.55, .gr = 0.65, .occupancy = 0.25, .tensor = 0.30, .dram = 0.40, .fp64 = 0,
                               .fp32 = 0.05, .fp16 = 0.20, .integer = 0.10, .pcie_rx_mibps = 800,
                               .pcie_tx_mibps = 300, .nvlink_share = 0, .util = 0.85};

constexpr double kDataStarvedPeriodS = 12;
constexpr double kStarvedFraction = 0.45;  // of each data_starved cycle spent waiting for input
constexpr double kBurstGapS = 10;
constexpr double kBurstWindowS = 3;
constexpr double kStragglerSlowdown = 0.72;
constexpr double kRunawayRampS = 1200;
constexpr double kRunawayMaxDegradation = 3.0;

double clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

// What one PCIe link can carry, MiB/s (per-lane rate after line coding, times lanes).
double pcie_link_mibps(const GpuModel& model) {
  static constexpr double kLaneMBps[] = {0, 250, 500, 985, 1969, 3938, 7877};
  const unsigned gen = std::min(model.pcie_gen, 6U);
  return kLaneMBps[gen] * model.pcie_width * 1e6 / 1048576.0;
}

Activity make_busy(const BusyShape& s, double level, std::uint64_t cell, const GpuModel& model, const Noise& noise) {
  const auto jitter = [&](Signal sig, double amplitude) { return 1.0 + amplitude * noise.symmetric(sig, cell); };
  Activity a;
  auto& m = a.metric;
  const double sm = clamp01(s.sm * level * jitter(Signal::kSmActive, 0.04));
  m[kSmActive] = sm;
  // Physical orderings the clients rely on: SM active <= graphics engine active, and no pipe or
  // occupancy can be busier than the SMs it runs on.
  m[kGrActive] = clamp01(std::max(sm, s.gr * level * jitter(Signal::kGrActive, 0.03)));
  m[kSmOccupancy] = std::min(sm, s.occupancy * level * jitter(Signal::kOccupancy, 0.05));
  const double tensor = std::min(sm, s.tensor * level * jitter(Signal::kTensor, 0.05));
  m[kTensorActive] = tensor;
  m[kHmmaActive] = tensor * 0.97;
  m[kImmaActive] = tensor * 0.03;
  m[kDfmaActive] = 0;
  m[kDmmaActive] = 0;
  m[kDramActive] = clamp01(s.dram * level * jitter(Signal::kDram, 0.05));
  m[kFp64Active] = std::min(sm, s.fp64 * level);
  m[kFp32Active] = std::min(sm, s.fp32 * level);
  m[kFp16Active] = std::min(sm, s.fp16 * level);
  m[kIntegerActive] = std::min(sm, s.integer * level);
  const double pcie = jitter(Signal::kPcie, 0.10);
  m[kPcieRxMiBps] = s.pcie_rx_mibps * pcie;
  m[kPcieTxMiBps] = s.pcie_tx_mibps * pcie;
  const double nvlink = model.nvlink_mibps * s.nvlink_share * level * jitter(Signal::kNvlink, 0.05);
  m[kNvlinkRxMiBps] = nvlink;
  m[kNvlinkTxMiBps] = nvlink * 0.98;
  // "Utilization" only says a kernel was running; it is at least the SM activity, often far more.
  a.util_gpu = clamp01(std::max(sm, s.util * (1.0 + 0.01 * noise.symmetric(Signal::kUtil, cell))));
  a.util_mem = clamp01(m[kDramActive] * 0.85);
  return a;
}

}  // namespace

Activity workload_activity(const WorkloadSpec& spec, double phase_elapsed_s, std::uint64_t cell,
                           const GpuModel& model, const Noise& noise) {
  const double level = spec.level;
  switch (spec.profile) {
    case Profile::kIdle:
    case Profile::kStalled:
      return {};
    case Profile::kTraining:
    case Profile::kMemoryLeak:
      return make_busy(kTraining, level, cell, model, noise);
    case Profile::kThermalRunaway: {
      Activity a = make_busy(kTraining, level, cell, model, noise);
      const double ramp = spec.ramp_s > 0 ? spec.ramp_s : kRunawayRampS;
      a.cooling_degradation = 1.0 + std::min(kRunawayMaxDegradation - 1.0, phase_elapsed_s / ramp);
      return a;
    }
    case Profile::kStraggler: {
      BusyShape shape = kTraining;
      shape.sm = 0.90;  // the slow GPU never waits for its peers; they wait for it
      shape.gr = 0.95;
      Activity a = make_busy(shape, level, cell, model, noise);
      a.board_clock_factor = spec.slowdown > 0 ? spec.slowdown : kStragglerSlowdown;
      return a;
    }
    case Profile::kNoTensor:
      return make_busy(kNoTensor, level, cell, model, noise);
    case Profile::kMemoryBound:
      return make_busy(kMemoryBound, level, cell, model, noise);
    case Profile::kSmallKernels:
      return make_busy(kSmallKernels, level, cell, model, noise);
    case Profile::kDataStarved: {
      const double period = spec.period_s > 0 ? spec.period_s : kDataStarvedPeriodS;
      const double x = std::fmod(phase_elapsed_s, period) / period;
      if (x < kStarvedFraction) {
        // Waiting for the input pipeline: the next batch streams in over PCIe, the SMs idle.
        BusyShape shape = kStarved;
        shape.pcie_rx_mibps = 0.4 * pcie_link_mibps(model);
        return make_busy(shape, 1.0, cell, model, noise);
      }
      // Computing on the batch; SM activity decays over the burst (the sawtooth), the input
      // pipeline's prefetch trickles in meanwhile.
      const double u = (x - kStarvedFraction) / (1.0 - kStarvedFraction);
      BusyShape shape = kTraining;
      const double decay = 1.0 - 0.3 * u;
      shape.sm *= decay;
      shape.tensor *= decay;
      shape.occupancy *= decay;
      shape.pcie_rx_mibps = 300;
      return make_busy(shape, level, cell, model, noise);
    }
    case Profile::kInferenceBursty: {
      const double gap = spec.period_s > 0 ? spec.period_s : kBurstGapS;
      const auto window = static_cast<std::uint64_t>(std::max(0.0, phase_elapsed_s) / kBurstWindowS);
      const double p = std::clamp(kBurstWindowS / gap, 0.05, 0.95);
      if (noise.unit(Signal::kBurst, window) >= p) return {};
      return make_busy(kInference, level, cell, model, noise);
    }
  }
  return {};
}

}  // namespace gpuscope::sim
