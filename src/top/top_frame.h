// What `gpuscope top` shows of one reading, whichever source took it (NVML here, or an agent's HTTP
// API): per GPU the values the screen draws, its processes and the diagnosis' verdict. Plain data, so
// the model and the screen never know where a reading came from.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpuscope::top {

// The values kept per GPU. Activities are in percent (0-100) whatever their source unit, so the
// nvidia-smi utilization and the profiling ratios sit on one scale side by side.
enum class Metric : std::size_t {
  kUtilization,   // utilization.gpu: a kernel ran at some point of the sample period
  kSmActive,      // DCGM_FI_PROF_SM_ACTIVE x 100: how much of the SMs was busy
  kTensorActive,  // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE x 100
  kDramActive,    // DCGM_FI_PROF_DRAM_ACTIVE x 100
  kMemoryUsedMiB,
  kMemoryTotalMiB,
  kPowerWatts,
  kPowerLimitWatts,
  kTemperatureC,
  kSmClockMHz,
  kMemClockMHz,
  kMaxSmClockMHz,
  kSlowdownTempC,  // where the driver starts lowering clocks to cool down
  kCount,
};
inline constexpr std::size_t kMetricCount = static_cast<std::size_t>(Metric::kCount);

struct ProcessRow {
  unsigned pid = 0;
  unsigned gpu = 0;          // the GPU's index
  std::string user;          // empty when unknown (a pid of another PID namespace, a remote agent)
  std::string command;       // command line, or name
  std::optional<std::uint64_t> memory_bytes;
  std::optional<double> sm_percent;
  std::optional<unsigned> gpu_instance_id{};  // MIG: the GPU instance it runs in (shown as "0/1")
};

struct VerdictLine {
  std::string id;       // "input_starved"
  std::string title;    // "starved by the input pipeline"
  std::string summary;  // one sentence with numbers
  std::vector<std::string> findings;  // finding ids: "power_capped", "utilization_lies"
};

// One GPU instance of a GPU in MIG mode (its first MIG device; memory and activity are per GPU instance).
struct MigInstanceFrame {
  unsigned gpu_instance_id = 0;
  std::string profile;  // "3g.40gb"
  std::string uuid;     // "MIG-..."
  std::optional<double> memory_used_mib;
  std::optional<double> memory_total_mib;
  std::optional<double> sm_active;      // percent, as Metric::kSmActive
  std::optional<double> tensor_active;  // percent
  std::string pod;                      // "namespace/pod" the kubelet gave it to; empty when none
  std::optional<VerdictLine> verdict;   // the instance's own diagnosis
};

struct GpuFrame {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  bool up = true;
  std::string down_reason;  // why it is down, for the screen ("GPU is lost")
  std::array<std::optional<double>, kMetricCount> values{};
  std::optional<std::uint64_t> throttle_reasons;  // NVML's clocks-event reason bits
  std::vector<ProcessRow> processes;
  std::optional<VerdictLine> verdict;
  std::vector<MigInstanceFrame> mig_instances;  // in MIG mode: one per GPU instance, in MIG device order

  const std::optional<double>& value(Metric m) const { return values[static_cast<std::size_t>(m)]; }
  std::optional<double>& value(Metric m) { return values[static_cast<std::size_t>(m)]; }
};

struct Frame {
  std::chrono::system_clock::time_point time;  // when the reading was taken (the source's clock)
  std::string host;
  std::vector<GpuFrame> gpus;  // by index
};

// "SwPowerCap HwSlowdown" for a reason mask; "" for none (idle bits left out: an idle GPU is not throttled).
std::string throttle_text(std::uint64_t reasons);

}  // namespace gpuscope::top
