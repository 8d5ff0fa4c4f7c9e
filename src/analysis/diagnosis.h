// The diagnosis: for each GPU and a window of its readings, one verdict on why it is slow or wasted
// (with the values that decided it and the usual fix) plus secondary findings. Pure: it reads the
// histories it is given (gpu_signals.h) and nothing else, so the agent, `gpuscope diagnose` and the
// backtest timeline decide alike.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/fabric_ports.h"
#include "analysis/gpu_signals.h"
#include "analysis/thresholds.h"

namespace gpuscope::analysis {

enum class Verdict {
  kIdle,
  kTransferBound,
  kLaunchBound,
  kInputStarved,
  kNoTensorCores,
  kMemoryBound,
  kComputeBound,
  // Waits on communication while a NIC port on its PCIe switch counts errors, drops or link downs, or
  // falls behind its peers (network_verdict.h).
  kNetworkBound,
  kUnhealthy,
  kUnknown,
};

// The stable id of `--format json` and of gpuscope_diagnosis_info's verdict label ("input_starved").
std::string_view verdict_id(Verdict v);
// For people ("starved by the input pipeline").
std::string_view verdict_title(Verdict v);

// One value that decided a verdict or a finding: `name` is a stable id ("sm_active"), `text` the value
// as a person reads it ("50.8 GB/s, 81 % of the Gen5 x16 link").
struct Evidence {
  std::string name;
  double value = 0;
  std::string text;
};

struct Finding {
  std::string id;  // power_capped, thermal_slowdown, memory_nearly_full, utilization_lies, ...
  std::string summary;
  std::vector<Evidence> evidence;
  std::string fix;
};

struct GpuDiagnosis {
  GpuIdentity identity;
  Verdict verdict = Verdict::kUnknown;
  std::string detail;   // transfer_bound: "host→device"; input_starved: "CPU side" or "data loading over PCIe";
                        // network_bound: the port(s), "mlx5_3/1"
  std::string summary;  // one sentence: what the GPU does, in numbers
  std::vector<Evidence> evidence;
  std::string fix;
  std::vector<Finding> findings;
  // Verdicts that could not be decided and why (absent fields): "no_tensor_cores: ... not recorded".
  std::vector<std::string> undecided;
  // The readings the verdict is drawn from, (segment_start_ms, segment_end_ms]: the window, or the GPU's
  // current regime when it changed what it does inside the window (or, for the first readings of a new
  // regime, the one it just left).
  std::int64_t segment_start_ms = 0;
  std::int64_t segment_end_ms = 0;
  std::int64_t at_ms = 0;
  std::size_t readings = 0;
  // Since when the verdict holds, where known (idle: the last activity in the history looked at;
  // `since_is_lower_bound` when the history ends before it).
  std::optional<std::int64_t> since_ms;
  bool since_is_lower_bound = false;
};

struct Diagnosis {
  std::int64_t at_ms = 0;
  std::int64_t window_ms = 0;
  std::vector<GpuDiagnosis> gpus;
};

// Diagnoses each GPU over the window (at_ms - window_ms, at_ms]. Histories may reach further back
// (what "idle since" reads); GPUs of one host and job are each other's peers for the imbalance finding.
Diagnosis diagnose(std::span<const GpuHistory> gpus, std::int64_t at_ms, std::int64_t window_ms,
                   const Thresholds& thresholds);
// The same with the node's fabric ports (fabric_ports.h, read over kFabricLookbackMs): a GPU that waits on
// communication while a port near it is in trouble gets the network verdict.
Diagnosis diagnose(std::span<const GpuHistory> gpus, std::span<const PortHistory> ports, std::int64_t at_ms,
                   std::int64_t window_ms, const Thresholds& thresholds);

// The times a diagnosis may be asked for: 1970 to the end of year 9999 (RFC 3339's four-digit years).
// Outside them a window's start would overflow, and no recording holds readings there.
inline constexpr std::int64_t kEarliestDiagnosisMs = 0;
inline constexpr std::int64_t kLatestDiagnosisMs = 253'402'300'799'000;

// The XIDs that mean the GPU needs a reset or replacement (not an application's error).
bool is_critical_xid(int xid);

}  // namespace gpuscope::analysis
