// NvmlBackend: finds and loads an NVML library (the driver's or gpuscope's simulator), discovers the GPUs
// and reads every catalog field, the processes and the event counts of each GPU into one Snapshot.
#pragma once

#include <array>
#include <chrono>
#include <expected>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/gpu_details.h"
#include "model/gpu_info.h"
#include "model/retired_pages.h"
#include "model/snapshot.h"
#include "nvml/nvml_abi.h"
#include "nvml/process_engines.h"

namespace gpuscope::nvml {

struct BackendOptions {
  // Search order: `library_path` (--nvml-lib), env GPUSCOPE_NVML_LIB, libnvidia-ml.so.1, libnvidia-ml.so.
  std::string library_path;
  // Load gpuscope's simulated NVML instead (see simulator_library_path()); `library_path` then
  // overrides where the simulator library is.
  bool simulate = false;
  // Scenario file for the simulator; empty = the simulator's built-in default. Exported to the
  // library as env GPUSCOPE_SIM_SCENARIO before it is loaded.
  std::string scenario;
  // Start the XID/ECC event thread (nvmlEventSet) so snapshots carry event counts.
  bool watch_events = false;
  // With watch_events: no thread; each sample() first counts the events already delivered. For a
  // virtual clock (backtests), where events must be in the reading of the time they happen.
  bool poll_events = false;
  // Resolve process pids to name, command line, user and container through this /proc.
  std::string proc_root = "/proc";
  // Read nvmlDeviceGetPcieThroughput (dmon's rxpci/txpci). Each call blocks ~20 ms on a real driver,
  // so the agent, which exports GPM's PCIe bytes instead, leaves it off.
  bool read_pcie_throughput = true;
  // Read the cumulative counters (energy, PCIe replays, violation times, ECC, retired pages, remapped
  // rows) at most this often and carry them over in between; 0: every sample. On a real driver they
  // are most of a sample's CPU (0.2 to 3 ms each per GPU).
  std::chrono::nanoseconds counter_interval{0};
  // Ask per-process utilization at most this often per GPU (by the library's clock), and at once when a
  // process appears; 0: every sample. The driver answers each process's average since the previous
  // read, so a longer interval loses resolution, not samples; ~0.9 ms of CPU a call on an H100.
  std::chrono::nanoseconds process_utilization_interval{0};
  // Count the calls to each NVML function (Snapshot::nvml_calls): a debug aid, ~1 ns a call.
  bool count_calls = false;
};

enum class BackendErrorKind {
  kLibraryNotFound,  // no library could be loaded (CLI exit code 3)
  kSymbolMissing,    // the library lacks nvmlInit*: not an NVML library
  kInitFailed,       // nvmlInit failed: driver not loaded, no permission, ...
  kSimulatorInput,   // the simulator's nvmlInit refused its input: the scenario file or a GPUSCOPE_SIM_* variable
  kDiscoveryFailed,  // count or handles could not be read
};

struct BackendError {
  BackendErrorKind kind;
  int nvml_code = 0;    // NVML's return code where there is one
  std::string message;  // one line, ready to print
};

class NvmlLibrary;      // dlopen'ed library + symbol table (nvml_library.h)
class EventWatcher;     // XID/ECC event thread (event_watcher.h)
class ProcessResolver;  // pid → name, user, container (process_resolver.h)

class NvmlBackend {
 public:
  static std::expected<std::unique_ptr<NvmlBackend>, BackendError> open(const BackendOptions& options);
  ~NvmlBackend();
  NvmlBackend(const NvmlBackend&) = delete;
  NvmlBackend& operator=(const NvmlBackend&) = delete;

  const model::SystemInfo& system() const { return system_; }
  // Every GPU found at start, in NVML index order; a lost GPU stays listed (its samples say down).
  const std::vector<model::GpuInfo>& gpus() const { return gpus_; }

  // Reads every field of every GPU, the processes and the event counts. Never throws; a failing
  // call marks only its field. A GPU answering GPU_IS_LOST is marked down and retried next time.
  model::Snapshot sample();

  // What nvidia-smi shows of GPU `gpu` (an index into gpus()) beyond the catalog, read now (~60 NVML
  // calls; not for the sampler). kDmon reads only what dmon's extra columns need (jpg_util, ofa_util,
  // protected_memory); every other member keeps error 13. A lost GPU answers GPU_IS_LOST in every
  // member read. Implemented in device_details.cc.
  enum class DetailSet : std::uint8_t { kAll, kDmon };
  model::GpuDetails details(std::size_t gpu, DetailSet set = DetailSet::kAll);

  // GPU `gpu`'s retired pages, both causes (nvmlDeviceGetRetiredPages_v2 with its count probe; the v1
  // call, without timestamps, where the library lacks v2). For query --query-retired-pages; implemented
  // in retired_pages_reader.cc.
  model::RetiredPagesReading retired_pages(std::size_t gpu);

  // Each process's confidential-compute protected memory in bytes, by pid (nvmlDeviceGetRunningProcessDetailList,
  // all modes), or NVML's return code. For pmon -s m's ccpm; implemented in process_detail_reader.cc.
  std::expected<std::map<unsigned, std::uint64_t>, int> process_protected_memory(std::size_t gpu);

  // Per-process engine utilization samples of GPU `gpu` newer than `since_us` (pass the newest time_us
  // of the previous call, 0 for all the driver keeps): nvmlDeviceGetProcessesUtilizationInfo, or
  // nvmlDeviceGetProcessUtilization (no jpg/ofa) where the driver lacks it. For pmon; implemented in
  // process_engines.cc.
  ProcessEngineReading process_engines(std::size_t gpu, unsigned long long since_us);

  // The library's clock: the simulator's (virtual or real) when it has one, else the system clock.
  std::chrono::system_clock::time_point now() const;

  // Simulator only: freeze the simulated clock at `t`. False when the library is not the simulator.
  bool set_sim_time(std::chrono::system_clock::time_point t);
  // Simulator only: the scenario's fabric as a sysfs tree, its counters brought to the simulator's
  // current time; the tree's root. Nullopt when the library is not the simulator or the scenario has
  // no fabric.
  std::optional<std::string> update_sim_sysfs() const;

  const NvmlLibrary& library() const { return *library_; }

 private:
  NvmlBackend() = default;
  struct GpuState;

  // GPU `gpu`'s handle, or nullptr while it is down (lost, not yet recovered).
  nvmlDevice_t handle(std::size_t gpu) const;
  std::expected<void, BackendError> discover();
  void read_static(GpuState& s, model::GpuInfo& info);
  model::GpuSample sample_gpu(std::size_t i);
  bool try_recover(GpuState& s, model::GpuInfo& info);
  // `mark` sees every return code, so GPU_IS_LOST anywhere ends the GPU's reading. The other queries of
  // a reading are in device_readers.h.
  template <class Mark>
  void read_gpm(model::GpuSample& g, GpuState& s, const model::GpuInfo& info, Mark&& mark);

  // Declared first so it outlives everything that calls into it.
  std::unique_ptr<NvmlLibrary> library_;
  model::SystemInfo system_;
  std::vector<model::GpuInfo> gpus_;
  std::vector<std::unique_ptr<GpuState>> state_;
  std::unique_ptr<EventWatcher> events_;
  std::unique_ptr<ProcessResolver> proc_resolver_;
  std::string proc_root_;
  bool read_pcie_throughput_ = true;
  std::chrono::nanoseconds counter_interval_{0};
  std::chrono::nanoseconds process_util_interval_{0};
  std::array<std::chrono::nanoseconds, model::kCollectorCount> collector_durations_{};
  std::array<std::chrono::nanoseconds, model::kCollectorCount> collector_cpu_{};        // this reading
  std::array<std::chrono::nanoseconds, model::kCollectorCount> collector_cpu_total_{};  // since open
};

// Where gpuscope's simulated libnvidia-ml.so.1 is: env GPUSCOPE_SIM_LIB, else next to the running
// executable (build tree: <dir>/sim/, installed: <dir>/../lib/gpuscope/). Empty when not found.
std::string simulator_library_path();

}  // namespace gpuscope::nvml
