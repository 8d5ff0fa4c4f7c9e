// The diagnosis' thresholds, each from what the ratio it reads means rather than fitted to one
// recording (see each default's reason), and settable by name (`--threshold NAME=VALUE`).
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::analysis {

struct Thresholds {
  // GR engine active below this: the GPU ran kernels less than 5 % of the time — idle, whatever memory
  // it holds. (A GPU between requests of an inference server reads 0.000x; a step of any real job is
  // far above.)
  double idle_gr_active = 0.05;
  // Without profiling ratios: utilization.gpu below this percent is idle.
  double idle_utilization_percent = 5;
  // No kernels, yet utilization.gpu at least this (only copies keep it up then), or PCIe at least
  // transfer_link_share of the link: the GPU waits on transfers.
  double transfer_utilization_percent = 50;
  double transfer_link_share = 0.25;
  // DRAM active at or above this: the memory interface is busy 70 % of cycles, near what HBM sustains in
  // practice (the real H100's device copy reads 0.895) — the kernels wait on memory ...
  double memory_bound_dram_active = 0.7;
  // ... unless the tensor pipes are this busy too (then both units are saturated: a well-fed GEMM).
  double memory_bound_tensor_max = 0.3;
  // SM active / GR engine active below this: while kernels run they keep fewer than half of the SMs
  // busy — kernels too small or too short to fill the GPU (real tiny kernels: 0.001; a GEMM: 0.97).
  double launch_bound_fill = 0.5;
  // GR engine active below this while the kernels fill the SMs: the GPU sits waiting for the host more
  // than 40 % of the time.
  double starved_busy_share = 0.6;
  // A sawtooth slower than the readings: at least this share of the window's readings with SM active
  // below half the window's peak, the peak at least sawtooth_peak_sm_active, and at least two rises.
  double sawtooth_low_share = 0.25;
  double sawtooth_peak_sm_active = 0.5;
  // While starved, PCIe RX at least this share of the link: batches stream in (data loading);
  // below it the host is busy preparing them (CPU preprocessing).
  double loading_link_share = 0.10;
  // Tensor pipes below this while the SMs are busy: the tensor cores are effectively unused ...
  double tensor_unused = 0.05;
  // ... and the FP32+FP16+FP64 pipes at least this busy: the math runs on the CUDA cores instead.
  double float_pipes_busy = 0.2;
  // Without profiling ratios: utilization.memory at or above this percent is memory bound.
  double memory_bound_memory_utilization_percent = 70;
  // A throttle reason on in at least this share of the window's readings is a finding.
  double throttle_share = 0.25;
  // Power at or above this share of the enforced limit counts as at the cap.
  double power_cap_share = 0.95;
  // Memory used at or above this share of the board's memory: the next allocation may fail.
  double memory_full_share = 0.95;
  // utilization.gpu above 100 × SM active by at least this many points: "utilization" lies.
  double utilization_lie_points = 50;
  // A busy GPU whose SM active is below this share of its peers' median (same host and job), or whose
  // SM clock is below clock_imbalance_share of theirs, holds the others back.
  double imbalance_sm_share = 0.7;
  double clock_imbalance_share = 0.85;
};

// Sets one threshold from `NAME=VALUE`; a one-line error for an unknown name or a value out of range.
std::expected<void, std::string> set_threshold(Thresholds& t, std::string_view assignment);

}  // namespace gpuscope::analysis
