// Workload profiles: what a job does to a GPU's engines second by second (SM, tensor, DRAM, PCIe,
// NVLink activity), before clocks, power and heat are applied by the physics (gpu_physics.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "sim/gpu_catalog.h"
#include "sim/noise.h"
#include "sim/scenario.h"

namespace gpuscope::sim {

// The GPM metrics the simulator models, in the order its integrals are kept.
enum Metric : std::size_t {
  kGrActive,  // ratios 0..1 (GPM reports them in percent)
  kSmActive,
  kSmOccupancy,
  kIntegerActive,
  kTensorActive,
  kDfmaActive,
  kHmmaActive,
  kDmmaActive,
  kImmaActive,
  kDramActive,
  kFp64Active,
  kFp32Active,
  kFp16Active,
  kPcieTxMiBps,  // rates in MiB/s
  kPcieRxMiBps,
  kNvlinkRxMiBps,
  kNvlinkTxMiBps,
  kMetricCount,
};

inline constexpr bool is_rate_metric(std::size_t m) { return m >= kPcieTxMiBps; }

struct Activity {
  std::array<double, kMetricCount> metric{};
  double util_gpu = 0;  // fraction of the period a kernel was running ("GPU utilization")
  double util_mem = 0;  // fraction of the period device memory was read or written
  // Profiles that slow the board itself rather than the job (straggler): clock factor, 1 = none.
  double board_clock_factor = 1.0;
  // thermal_runaway: how much worse than nominal the cooling is (thermal resistance factor).
  double cooling_degradation = 1.0;
  // Share of the cell the work ran when it comes in bursts shorter than a cell (1 = steady): the
  // metrics are the cell's means, but the bursts meet the power limit at their own peak.
  double duty = 1.0;

  bool busy() const { return util_gpu > 0; }
};

// What a PCIe link of `gen` and `width` lanes carries in one direction, MiB/s.
double pcie_link_mibps(unsigned gen, unsigned width);

// The activity of one 1-second cell `cell` of a GPU running `spec` since `phase_elapsed_s`, on a
// PCIe link that carries `link_mibps`.
Activity workload_activity(const WorkloadSpec& spec, double phase_elapsed_s, std::uint64_t cell,
                           const GpuModel& model, double link_mibps, const Noise& noise);

}  // namespace gpuscope::sim
