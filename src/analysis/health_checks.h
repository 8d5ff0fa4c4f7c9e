// The pre-flight health gate: from one reading of the GPUs (and the kernel log's XIDs), is this node fit
// to start a training job? One pure function, shared by `gpuscope check` and the agent's /api/v1/check.
#pragma once

#include <array>
#include <cstdint>
#include <expected>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/kernel_xid_log.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::analysis {

// Stable ids (the --fail-on words, JSON's "id"): never renamed, only added to.
enum class HealthCheck : std::uint8_t { kEcc, kXid, kRemap, kPcie, kThermal, kPersistence, kDriver, kCount };
inline constexpr std::size_t kHealthCheckCount = static_cast<std::size_t>(HealthCheck::kCount);

// "ecc", "xid", "remap", "pcie", "thermal", "persistence", "driver".
std::string_view health_check_id(HealthCheck check);
std::optional<HealthCheck> health_check_by_id(std::string_view id);
// Every check, in report order.
std::span<const HealthCheck> all_health_checks();

// A set of checks (bit per check).
class HealthCheckSet {
 public:
  constexpr HealthCheckSet() = default;
  constexpr HealthCheckSet(std::initializer_list<HealthCheck> checks) {
    for (auto c : checks) add(c);
  }
  static constexpr HealthCheckSet all() {
    HealthCheckSet s;
    s.bits_ = (1U << kHealthCheckCount) - 1;
    return s;
  }
  constexpr void add(HealthCheck c) { bits_ |= 1U << static_cast<unsigned>(c); }
  constexpr bool contains(HealthCheck c) const { return (bits_ & (1U << static_cast<unsigned>(c))) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  friend constexpr bool operator==(HealthCheckSet, HealthCheckSet) = default;

 private:
  std::uint32_t bits_ = 0;
};

// "ecc,xid" (or "all"); the error names the first unknown or empty word.
std::expected<HealthCheckSet, std::string> parse_health_checks(std::string_view list);

// The checks a GPU must pass to be handed to a job (`gpuscope select`): its memory is sound and no
// critical XID was seen. The rest (a slow link, a hot or non-persistent GPU) costs speed, not results.
inline constexpr HealthCheckSet kCriticalHealthChecks{HealthCheck::kEcc, HealthCheck::kXid, HealthCheck::kRemap};

// A CUDA version as the driver API numbers it: 1000 * major + 10 * minor (12.4 = 12040).
// "12", "12.4", "12.4.1" (the patch level does not matter to compatibility); nullopt otherwise.
std::optional<int> parse_cuda_version(std::string_view text);
std::string cuda_version_text(int version);  // 12040 -> "12.4"

// XIDs that say the GPU (not the application) is broken, each with why; any of them fails the xid
// check. XIDs not listed (13 graphics engine exception, 31 MMU fault, 43 GPU stopped processing, 45
// preemptive cleanup, ...) are usually a bug or an out-of-bounds access in the job itself and are only
// reported.
struct CriticalXid {
  unsigned xid;
  std::string_view meaning;
  std::string_view why_critical;
};
std::span<const CriticalXid> critical_xids();
const CriticalXid* find_critical_xid(unsigned xid);

struct HealthCheckOptions {
  // Failing one of these makes the report unhealthy; the others are still run and reported as warnings.
  HealthCheckSet fail_on = HealthCheckSet::all();
  // The CUDA runtime the job was built with (parse_cuda_version); the driver check needs it.
  std::optional<int> cuda_runtime_version;
  // XIDs from the kernel log; nullopt when none was read, with why in `kernel_log_not_read`.
  std::optional<KernelXidLog> kernel_log;
  std::string kernel_log_not_read;
  // Whether the snapshot's XID event counts are real (an event set was registered: the agent); a
  // one-shot reading sees no events, which says nothing.
  bool xid_events_watched = false;
  // Report kernel-log XIDs at PCI addresses of none of the GPUs checked (a GPU that fell off the bus
  // before discovery) as a node problem. Off when only some GPUs were asked for.
  bool node_wide = true;
};

enum class CheckStatus : std::uint8_t { kPass, kFail, kNotChecked };
std::string_view check_status_id(CheckStatus status);  // "pass", "fail", "not_checked"

// A reading that decided a check, numeric, its unit in the key ("gpu_temp_celsius").
struct CheckValue {
  std::string key;
  double value = 0;
};

// An XID seen on a GPU: where from and how often.
struct XidSighting {
  unsigned xid = 0;
  std::uint64_t count = 0;
  bool critical = false;
  std::string source;  // "kernel_log" or "nvml_events"
  std::string text;    // the kernel log's text of the last one; the meaning for critical XIDs from events
};

struct CheckResult {
  HealthCheck check = HealthCheck::kEcc;
  CheckStatus status = CheckStatus::kNotChecked;
  bool gating = true;   // in fail_on: a failure makes the report unhealthy (else a warning)
  std::string summary;  // for people: what is wrong, what passed, or why it was not checked
  std::vector<CheckValue> values;
  std::vector<XidSighting> xids;  // the xid check only
  std::string pci_bus_id;         // a node's xid result: the address the XIDs were logged at
};

struct GpuHealth {
  unsigned index = 0;
  std::string uuid;
  std::string name;
  std::string pci_bus_id;
  bool up = true;           // false: NVML cannot reach the GPU; it fails the gate whatever fail_on says
  int down_error_code = 0;  // NVML's code, when down
  // Every check but driver, in report order; when down, only xid (from the kernel log, when read).
  std::vector<CheckResult> checks;

  bool healthy() const;  // up, and no gating check failed
};

struct HealthReport {
  std::vector<GpuHealth> gpus;
  std::vector<CheckResult> node;  // checks about the node: driver; xid at unknown PCI addresses
  HealthCheckSet fail_on;
  // The kernel log's state as it was used: read (source), unreadable (source and error) or not read (why).
  std::string kernel_log_source;
  bool kernel_log_readable = false;
  std::string kernel_log_error;

  bool healthy() const;
  // Down GPUs plus failures of gating checks (what makes the exit code 1).
  std::size_t problem_count() const;
};

// Judges every GPU in `gpus` (the ones asked for) from its sample in `snapshot` (matched by index; a
// GPU the snapshot lacks is down). Values the GPU does not report leave their check "not checked",
// never passed.
HealthReport check_health(const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                          const model::SystemInfo& system, const HealthCheckOptions& options);

}  // namespace gpuscope::analysis
