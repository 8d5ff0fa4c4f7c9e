// The signals the diagnosis reads, per GPU: which recorded series each comes from (the DCGM names
// gpuscope and dcgm-exporter export, so a fleet's Prometheus answers too), and the samples of one GPU
// over a span of time, grouped from whatever series a store or a Prometheus returned.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "store/labels.h"
#include "store/queryable.h"

namespace gpuscope::analysis {

enum class Signal : std::size_t {
  kGrActive,      // ratio of time the graphics engine ran anything (a kernel)
  kSmActive,      // ratio of cycles an SM had a warp resident, averaged over the SMs
  kSmOccupancy,   // resident warps over the SMs' maximum
  kTensorActive,  // tensor pipes
  kFp64Active,
  kFp32Active,
  kFp16Active,
  kDramActive,    // ratio of cycles the memory interface was busy
  kPcieRxBytes,   // bytes/s the GPU received (host→device)
  kPcieTxBytes,
  kNvlinkRxBytes,
  kNvlinkTxBytes,
  kUtilization,   // utilization.gpu, percent: a kernel *or a copy* ran during the period
  kMemoryUtilization,  // percent of time device memory was read or written (NVML's memory utilization)
  kPower,         // W
  kPowerLimit,    // W, enforced
  kSmClock,       // MHz
  kMaxSmClock,    // MHz
  kGpuTemp,       // °C
  kMemoryTemp,    // °C
  kSlowdownTemp,  // °C
  kFbUsed,        // MiB (the driver's reservation excluded)
  kFbFree,        // MiB
  kFbReserved,    // MiB
  kEccDbeVolatile,
  kEccSbeVolatile,
  kRowRemapFailure,
  kRowRemapPending,
  kXid,           // the last XID the GPU reported (0: none)
  kGpuUp,         // gpuscope_gpu_up: 0 when the GPU stopped answering
  kPcieLinkGen,
  kPcieLinkWidth,
  kPcieLinkGenMax,
  kPcieLinkWidthMax,
  kThrottleReasons,  // bit mask (NVML's clocks-event reasons), built from either exported form
  kCount,
};
inline constexpr std::size_t kSignalCount = static_cast<std::size_t>(Signal::kCount);

// NVML's clocks-event (throttle) reason bits the diagnosis reads.
inline constexpr std::uint64_t kThrottleSwPowerCap = 0x4;
inline constexpr std::uint64_t kThrottleHwSlowdown = 0x8;
inline constexpr std::uint64_t kThrottleSwThermal = 0x20;
inline constexpr std::uint64_t kThrottleHwThermal = 0x40;
inline constexpr std::uint64_t kThrottleHwPowerBrake = 0x80;

// The series names that feed `signal`, the preferred first (several: gpuscope's own and
// dcgm-exporter's spellings of the same reading).
std::span<const std::string_view> signal_series(Signal signal);
// A short human name ("SM active", "PCIe RX").
std::string_view signal_title(Signal signal);
// Every series name any signal reads (what a store keeps for the diagnosis: store::RecentWindow), and
// the same as one RE2 alternation for a `__name__=~` matcher.
std::span<const std::string_view> signal_names();
const std::string& signal_name_regex();

struct Point {
  std::int64_t t_ms;
  double value;
};

// One GPU's identity: the labels its series share (gpu, UUID, device, modelName, pci_bus_id, the host
// label, hpc_job, GPU_I_ID ...), and a key that tells GPUs apart across hosts.
struct GpuIdentity {
  std::string key;
  store::Labels labels;
  std::string gpu;    // index label
  std::string uuid;
  std::string host;   // Hostname, hostname or instance
  std::string model;  // modelName
  std::string job;    // hpc_job ("" when none): GPUs of one job are each other's peers
  // A MIG instance's series (GPU_I_ID, GPU_I_PROFILE): diagnosed as a GPU of its own; both empty for a GPU.
  std::string mig_instance;
  std::string mig_profile;
};

// The samples of one GPU, per signal, sorted by time.
struct GpuHistory {
  GpuIdentity identity;
  std::array<std::vector<Point>, kSignalCount> signals;

  const std::vector<Point>& points(Signal s) const { return signals[static_cast<std::size_t>(s)]; }
  // The points with from_ms < t <= to_ms (a left-open window, as PromQL's ranges).
  std::span<const Point> window(Signal s, std::int64_t from_ms, std::int64_t to_ms) const;
};

// The key that tells one GPU's series apart from another's (host, UUID or index, MIG instance): the
// GpuIdentity key group_by_gpu gives; empty for series without a GPU identity (no UUID, no gpu label).
std::string gpu_key(const store::Labels& labels);

// Groups raw series (as Queryable::select or a Prometheus range-vector answer return them) into one
// history per GPU, ordered by host then GPU index. Staleness markers and NaNs are skipped. Series
// without a GPU identity (no UUID and no gpu label) are ignored.
std::vector<GpuHistory> group_by_gpu(std::vector<store::SeriesSamples> series);

}  // namespace gpuscope::analysis
