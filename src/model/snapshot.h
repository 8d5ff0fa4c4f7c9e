// One immutable reading of every GPU at one time: each field's value with its status
// ("valid or why not"), the processes on each GPU and the event counts seen so far.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/field_catalog.h"

namespace gpuscope::model {

enum class ValueStatus : std::uint8_t {
  kValid,
  kUnsupported,  // the GPU or driver lacks it (missing symbol, NOT_SUPPORTED, FUNCTION_NOT_FOUND, no GPM)
  kError,        // the call failed; `error_code` holds NVML's return code
};

struct FieldValue {
  double value = 0;
  ValueStatus status = ValueStatus::kUnsupported;
  int error_code = 0;  // NVML return code when status is kError

  bool valid() const { return status == ValueStatus::kValid; }
  static FieldValue of(double v) { return {v, ValueStatus::kValid, 0}; }
  static FieldValue unsupported() { return {0, ValueStatus::kUnsupported, 0}; }
  static FieldValue error(int code) { return {0, ValueStatus::kError, code}; }
};

// Who a pid is, read from /proc. `visible` is false when the pid is not in this PID namespace
// (an agent in a container without the host's PID namespace): the process is still reported.
struct ProcessIdentity {
  bool visible = false;
  std::string name;          // comm, or the simulator's name for simulated pids
  std::string command_line;  // argv joined by spaces
  std::string user;          // owner's user name (or uid as text when it has no name)
  std::string container_id;  // 64-hex (or shorter) id from the cgroup path, empty outside containers
  std::string pod_uid;       // the Kubernetes pod's UID from the cgroup path, empty outside a pod
};

enum class ProcessKind : std::uint8_t { kCompute, kGraphics, kComputeAndGraphics };

struct ProcessSample {
  unsigned pid = 0;
  ProcessKind kind = ProcessKind::kCompute;
  std::optional<std::uint64_t> used_memory_bytes;  // absent when NVML reports "not available"
  std::optional<unsigned> gpu_instance_id;          // MIG only
  std::optional<unsigned> compute_instance_id;      // MIG only
  std::optional<double> sm_util_percent;            // from process utilization samples
  std::optional<double> mem_util_percent;
  ProcessIdentity identity;
};

// Events seen on one GPU since the agent started. Every event is counted: two equal XIDs in a row
// are two events.
struct EventCounts {
  std::uint64_t xid_total = 0;
  std::map<unsigned long long, std::uint64_t> xid_by_code;
  std::optional<unsigned long long> last_xid;
  std::uint64_t single_bit_ecc = 0;
  std::uint64_t double_bit_ecc = 0;
};

// A container on a Kubernetes node, as the kubelet's pod-resources API names it.
struct KubernetesPod {
  std::string pod;
  std::string namespace_name;
  std::string container;
  bool operator==(const KubernetesPod&) const = default;
};

// One MIG device of a GPU in MIG mode (a compute instance inside a GPU instance), read at one time.
// Only the fields a MIG device has of its own are read (is_mig_instance_field: its memory and GPM's
// profiling ratios); every other field stays unsupported, the GPU's reading holds it.
struct MigInstanceSample {
  unsigned device_index = 0;  // nvmlDeviceGetMigDeviceHandleByIndex's index (nvidia-smi's "MIG Dev")
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string profile;  // "3g.40gb": the GPU instance profile's name without the driver's "MIG " prefix; empty if unknown
  std::string uuid;     // the MIG device's own UUID ("MIG-..."), what CUDA_VISIBLE_DEVICES and the kubelet name
  std::optional<unsigned> sm_count;                 // streaming multiprocessors of the MIG device
  std::optional<unsigned> gpu_instance_slices;      // of the GPU's 7 compute slices (H100, A100)
  std::array<FieldValue, kFieldCount> fields{};
  // serve --kubernetes: the container the kubelet allocated this MIG device to.
  std::optional<KubernetesPod> kubernetes_pod;
  // Several containers hold time-sliced shares of this MIG device: kubernetes_pod names the last of them,
  // so the processes in it get no pod labels (as kubernetes_gpu_shared for a whole GPU).
  bool kubernetes_shared = false;

  const FieldValue& operator[](FieldId id) const { return fields[index_of(id)]; }
  FieldValue& operator[](FieldId id) { return fields[index_of(id)]; }
};

struct GpuSample {
  unsigned index = 0;
  bool up = true;          // false while the GPU answers GPU_IS_LOST (or its handle is gone)
  int down_error_code = 0;  // NVML's code that marked it down
  std::array<FieldValue, kFieldCount> fields{};
  std::vector<ProcessSample> processes;
  std::optional<int> processes_error_code;  // set when the process list could not be read
  EventCounts events;
  // HPC jobs on this GPU, from the scheduler's mapping files (dcgm-exporter's hpc_job label).
  std::vector<std::string> hpc_jobs;
  // serve --kubernetes: the container the kubelet allocated this GPU to (dcgm-exporter's pod, namespace,
  // container labels); none while no container holds it.
  std::optional<KubernetesPod> kubernetes_pod;
  // Several containers hold a part of this GPU (time-slicing, MIG devices of different pods): kubernetes_pod
  // names the last of them, so its per-process series get no pod labels.
  bool kubernetes_gpu_shared = false;
  // MIG mode as read at this reading (it can change while the agent runs), and the GPU's MIG devices in
  // index order; empty outside MIG mode.
  bool mig_enabled = false;
  std::vector<MigInstanceSample> mig_instances;

  const FieldValue& operator[](FieldId id) const { return fields[index_of(id)]; }
  FieldValue& operator[](FieldId id) { return fields[index_of(id)]; }
};

// The parts of a reading, timed separately so a slow one is visible (the exporter's per-collector
// duration and success series, as node_exporter has them).
enum class Collector : std::uint8_t { kDevice, kGpm, kProcesses, kCount };
inline constexpr std::size_t kCollectorCount = static_cast<std::size_t>(Collector::kCount);
inline constexpr std::array<std::string_view, kCollectorCount> kCollectorNames{"device", "gpm", "processes"};

struct Snapshot {
  std::chrono::system_clock::time_point time;  // when the reading started (the driver's clock)
  std::chrono::nanoseconds duration{0};         // how long the reading took
  std::vector<GpuSample> gpus;
  // Time spent in each collector, summed over the GPUs.
  std::array<std::chrono::nanoseconds, kCollectorCount> collector_durations{};
  // CPU time the reading thread spent in each collector since the backend opened (a counter): on a real
  // driver most of it is the driver's own work inside the NVML calls.
  std::array<std::chrono::nanoseconds, kCollectorCount> collector_cpu_total{};
  // With call counting on (serve --nvml-call-counts): calls made to each NVML function since the backend
  // opened, by the function's symbol name; empty otherwise.
  std::vector<std::pair<std::string_view, std::uint64_t>> nvml_calls;
};

}  // namespace gpuscope::model
