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

// Shapes measured on a real H100 (shared/reference/real-h100, phase means at 1 s) are marked so;
// the others are mixes of them. PCIe rates are MiB/s unless a profile scales them to the link.
constexpr BusyShape kTraining{.sm = 0.80, .gr = 0.90, .occupancy = 0.30, .tensor = 0.42, .dram = 0.30, .fp64 = 0,
                              .fp32 = 0.02, .fp16 = 0.02, .integer = 0.10, .pcie_rx_mibps = 600,
                              .pcie_tx_mibps = 120, .nvlink_share = 0.8, .util = 0.98};
// Measured: a bf16 8192x8192 matmul loop. Occupancy is low (0.14) at full speed: GEMM kernels run
// few, large thread blocks per SM.
constexpr BusyShape kGemm{.sm = 0.961, .gr = 0.995, .occupancy = 0.142, .tensor = 0.933, .dram = 0.252, .fp64 = 0,
                          .fp32 = 0, .fp16 = 0, .integer = 0.05, .pcie_rx_mibps = 17, .pcie_tx_mibps = 6.7,
                          .nvlink_share = 0, .util = 0.995};
// Measured: an fp32 matmul with TF32 off: the SMs are as busy as in the bf16 GEMM, the FP32 pipe does
// the work, the tensor pipes stay at 0.
constexpr BusyShape kNoTensor{.sm = 0.967, .gr = 0.998, .occupancy = 0.121, .tensor = 0, .dram = 0.066, .fp64 = 0,
                              .fp32 = 0.773, .fp16 = 0, .integer = 0.05, .pcie_rx_mibps = 5, .pcie_tx_mibps = 2.7,
                              .nvlink_share = 0, .util = 1.0};
// Measured: a 4 GiB device-to-device copy. A memory-bound kernel keeps its SMs active (and highly
// occupied) while they stall on DRAM.
constexpr BusyShape kMemoryBound{.sm = 0.989, .gr = 0.992, .occupancy = 0.793, .tensor = 0, .dram = 0.895,
                                 .fp64 = 0, .fp32 = 0, .fp16 = 0, .integer = 0.10, .pcie_rx_mibps = 25,
                                 .pcie_tx_mibps = 10, .nvlink_share = 0, .util = 0.99};
// Measured: a loop of 1024-element adds. The engine is busy launching (and "utilization" counts it)
// while each kernel occupies a sliver of one SM for microseconds; the launches stream over PCIe.
constexpr BusyShape kSmallKernels{.sm = 0.0002, .gr = 0.239, .occupancy = 0.000013, .tensor = 0, .dram = 0.0000066,
                                  .fp64 = 0, .fp32 = 0.0000027, .fp16 = 0, .integer = 0.0001, .pcie_rx_mibps = 152,
                                  .pcie_tx_mibps = 18.6, .nvlink_share = 0, .util = 0.24};
// Measured: pinned host-to-device copies. Only the copy engine works: "utilization" reads ~100% with
// the graphics engine and SMs idle; RX is set to kH2dRxLinkShare of the link by the profile.
constexpr BusyShape kH2dCopy{.sm = 0, .gr = 0.00006, .occupancy = 0, .tensor = 0, .dram = 0.0155, .fp64 = 0,
                             .fp32 = 0, .fp16 = 0, .integer = 0, .pcie_rx_mibps = 0, .pcie_tx_mibps = 0,
                             .nvlink_share = 0, .util = 0.999};
// Measured: bf16 matmul bursts with 120 ms host-side sleeps between them (CPU preprocessing), as the
// 1 s means see it: every sample shows the same low level, no visible sawtooth. kCpuStarvedDuty of
// each second runs the GEMM.
constexpr BusyShape kCpuStarved{.sm = 0.156, .gr = 0.19, .occupancy = 0.023, .tensor = 0.151, .dram = 0.056,
                                .fp64 = 0, .fp32 = 0, .fp16 = 0, .integer = 0.01, .pcie_rx_mibps = 4.3,
                                .pcie_tx_mibps = 2.4, .nvlink_share = 0, .util = 0.20};
constexpr BusyShape kStarved{.sm = 0.04, .gr = 0.12, .occupancy = 0.02, .tensor = 0.01, .dram = 0.05, .fp64 = 0,
                             .fp32 = 0.01, .fp16 = 0.01, .integer = 0.02, .pcie_rx_mibps = 0, .pcie_tx_mibps = 100,
                             .nvlink_share = 0.02, .util = 0.45};
constexpr BusyShape kInference{.sm = 0.55, .gr = 0.65, .occupancy = 0.25, .tensor = 0.30, .dram = 0.40, .fp64 = 0,
                               .fp32 = 0.05, .fp16 = 0.20, .integer = 0.10, .pcie_rx_mibps = 800,
                               .pcie_tx_mibps = 300, .nvlink_share = 0, .util = 0.85};

// NCCL's collectives while the GPU waits on them: their kernels stay resident (the GR engine busy) on the
// few SMs of their channels (16 of 132 on an H100) while data crosses NVLink and, for the node's other
// peers, PCIe to the NIC (GPUDirect RDMA). A collective_wait cell mixes kCollectiveComputeShare of
// training with the rest of such waiting: sub-second steps, as the 1 s means see them.
constexpr BusyShape kCollective{.sm = 0.08, .gr = 0.97, .occupancy = 0.01, .tensor = 0, .dram = 0.04, .fp64 = 0,
                                .fp32 = 0.005, .fp16 = 0.005, .integer = 0.02, .pcie_rx_mibps = 3000,
                                .pcie_tx_mibps = 3000, .nvlink_share = 0.15, .util = 1.0};
constexpr double kCollectiveComputeShare = 0.25;

constexpr double kH2dRxLinkShare = 0.88;   // measured: 55.5 GB/s on a gen5 x16 link (63 GB/s)
constexpr double kH2dTxLinkShare = 0.053;  // completions and flow control going back: 3.3 GB/s
constexpr double kCpuStarvedDuty = kCpuStarved.sm / kGemm.sm;
// NVML's memory utilization is the share of time memory was read or written at its sampling grain,
// above the bandwidth share DRAM active reports: measured 33% at DRAM 0.252, 9% at 0.066, 2% at 0.016.
constexpr double kMemUtilPerDram = 1.33;
constexpr double kDataStarvedPeriodS = 12;
constexpr double kStarvedFraction = 0.45;  // of each data_starved cycle spent waiting for input
constexpr double kBurstGapS = 10;
constexpr double kBurstWindowS = 3;
constexpr double kStragglerSlowdown = 0.72;
constexpr double kRunawayRampS = 1200;
constexpr double kRunawayMaxDegradation = 3.0;
double clamp01(double x) { return std::clamp(x, 0.0, 1.0); }

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
  a.util_mem = clamp01(m[kDramActive] * kMemUtilPerDram);
  return a;
}

}  // namespace

double pcie_link_mibps(unsigned gen, unsigned width) {
  // Per-lane rate after line coding (8b/10b to gen 2, 128b/130b from gen 3), MB/s.
  static constexpr double kLaneMBps[] = {0, 250, 500, 985, 1969, 3938, 7877};
  return kLaneMBps[std::min(gen, 6U)] * width * 1e6 / 1048576.0;
}

Activity workload_activity(const WorkloadSpec& spec, double phase_elapsed_s, std::uint64_t cell,
                           const GpuModel& model, double link_mibps, const Noise& noise) {
  const double level = spec.level;
  switch (spec.profile) {
    case Profile::kIdle:
    case Profile::kStalled:
      return {};
    case Profile::kTraining:
    case Profile::kMemoryLeak:
      return make_busy(kTraining, level, cell, model, noise);
    case Profile::kGemm:
      return make_busy(kGemm, level, cell, model, noise);
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
    case Profile::kH2dCopy: {
      BusyShape shape = kH2dCopy;
      // `level` scales the bandwidth the copies reach; the copy engine is busy all the same.
      shape.pcie_rx_mibps = kH2dRxLinkShare * link_mibps;
      shape.pcie_tx_mibps = kH2dTxLinkShare * link_mibps;
      shape.dram *= level;
      Activity a = make_busy(shape, 1.0, cell, model, noise);
      a.metric[kPcieRxMiBps] = std::min(link_mibps, a.metric[kPcieRxMiBps] * level);
      a.metric[kPcieTxMiBps] *= level;
      return a;
    }
    case Profile::kDataStarved: {
      if (spec.source == StarvedSource::kCpu && spec.period_s <= 0) {
        // Sub-second bursts: each 1 s cell holds several GEMM bursts and host-side gaps.
        Activity a = make_busy(kCpuStarved, level, cell, model, noise);
        a.duty = std::min(1.0, kCpuStarvedDuty * level);
        return a;
      }
      const double period = spec.period_s > 0 ? spec.period_s : kDataStarvedPeriodS;
      const double x = std::fmod(phase_elapsed_s, period) / period;
      if (x < kStarvedFraction) {
        // Waiting for the input pipeline, the SMs idle: data loading streams the next batch in over
        // PCIe; CPU-side preprocessing moves nothing until the batch is ready.
        BusyShape shape = kStarved;
        shape.pcie_rx_mibps = spec.source == StarvedSource::kPcie ? 0.4 * link_mibps : kCpuStarved.pcie_rx_mibps;
        shape.pcie_tx_mibps = spec.source == StarvedSource::kPcie ? kStarved.pcie_tx_mibps : kCpuStarved.pcie_tx_mibps;
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
    case Profile::kCollectiveWait: {
      // `level` is the share of the step the GPU computes (default kCollectiveComputeShare).
      const double compute = spec.level != 1.0 ? std::clamp(spec.level, 0.0, 1.0) : kCollectiveComputeShare;
      const auto mix = [&](double busy, double waiting) { return compute * busy + (1 - compute) * waiting; };
      const BusyShape shape{.sm = mix(kTraining.sm, kCollective.sm),
                            .gr = mix(kTraining.gr, kCollective.gr),
                            .occupancy = mix(kTraining.occupancy, kCollective.occupancy),
                            .tensor = mix(kTraining.tensor, kCollective.tensor),
                            .dram = mix(kTraining.dram, kCollective.dram),
                            .fp64 = 0,
                            .fp32 = mix(kTraining.fp32, kCollective.fp32),
                            .fp16 = mix(kTraining.fp16, kCollective.fp16),
                            .integer = mix(kTraining.integer, kCollective.integer),
                            .pcie_rx_mibps = mix(kTraining.pcie_rx_mibps, kCollective.pcie_rx_mibps),
                            .pcie_tx_mibps = mix(kTraining.pcie_tx_mibps, kCollective.pcie_tx_mibps),
                            .nvlink_share = mix(kTraining.nvlink_share, kCollective.nvlink_share),
                            .util = 1.0};
      return make_busy(shape, 1.0, cell, model, noise);
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
