#include "nvml/nvml_backend.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "nvml/device_readers.h"
#include "nvml/event_watcher.h"
#include "nvml/gpm_metrics.h"
#include "nvml/mig_reader.h"
#include "nvml/nvml_library.h"
#include "nvml/process_reader.h"
#include "nvml/process_resolver.h"

namespace gpuscope::nvml {
namespace {

using model::FieldId;
using model::FieldValue;

// Below this window two GPM samples give noisy ratios; the first reading waits this long.
constexpr auto kMinGpmWindow = std::chrono::milliseconds(100);

std::string c_string(const char* buf, std::size_t cap) { return std::string(buf, strnlen(buf, cap)); }

// Sets an environment variable for the duration of a scope, then restores what was there, so
// opening a backend leaves the process environment as it found it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) previous_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (previous_) {
      setenv(name_, previous_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> previous_;
};

// CPU time of the calling thread: what a reading costs the host, the driver's work inside NVML included.
std::chrono::nanoseconds thread_cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

std::string executable_dir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string{} : exe.parent_path().string();
}

}  // namespace

// Per-GPU state the backend keeps between samples.
// What is read at the counter interval (BackendOptions::counter_interval) and carried over in between:
// the cumulative counters, and the gauges an operator or the link changes rarely (power limits, the
// PCIe link's current generation and width, BAR1 use), which on a real driver cost ~0.14 ms each.
constexpr std::array<FieldId, 24> kCounterFields{
    FieldId::kTotalEnergy,          FieldId::kPcieReplay,
    FieldId::kPowerViolation,       FieldId::kThermalViolation,
    FieldId::kSyncBoostViolation,   FieldId::kBoardLimitViolation,
    FieldId::kLowUtilViolation,     FieldId::kReliabilityViolation,
    FieldId::kEccSbeVolTotal,       FieldId::kEccDbeVolTotal,
    FieldId::kEccSbeAggTotal,       FieldId::kEccDbeAggTotal,
    FieldId::kRetiredSbe,           FieldId::kRetiredDbe,
    FieldId::kRetiredPending,       FieldId::kUncorrectableRemappedRows,
    FieldId::kCorrectableRemappedRows, FieldId::kRowRemapFailure,
    FieldId::kRowRemapPending,      FieldId::kPowerLimit,
    FieldId::kEnforcedPowerLimit,   FieldId::kPcieLinkGenCurrent,
    FieldId::kPcieLinkWidthCurrent, FieldId::kBar1Used,
};

struct NvmlBackend::GpuState {
  nvmlDevice_t device = nullptr;
  std::array<model::FieldValue, kCounterFields.size()> counters{};
  std::chrono::steady_clock::time_point counters_read_at{};
  bool counters_valid = false;
  bool up = true;
  int down_code = 0;
  nvmlGpmSample_t gpm_prev = nullptr;
  nvmlGpmSample_t gpm_cur = nullptr;
  bool gpm_prev_valid = false;
  std::unique_ptr<ProcessReader> processes;  // process lists and utilization (process_reader.h)
  // The fan query answered NOT_SUPPORTED (H100 SXM: no fans): not asked again until the GPU returns.
  bool fan_unsupported = false;
  std::unique_ptr<MigReader> mig;  // MIG mode and MIG devices (mig_reader.h)
  // In MIG mode the GPU's own GPM figures, read every counter interval (see sample_gpu).
  std::array<model::FieldValue, kGpmWanted.size()> gpm_carry{};
  std::chrono::steady_clock::time_point gpm_read_at{};
  bool gpm_carry_valid = false;
};

nvmlDevice_t NvmlBackend::handle(std::size_t gpu) const {
  if (gpu >= state_.size() || !state_[gpu]->up) return nullptr;
  return state_[gpu]->device;
}

std::string simulator_library_path() {
  if (const char* env = std::getenv("GPUSCOPE_SIM_LIB"); env != nullptr && *env != '\0') return env;
  const std::string dir = executable_dir();
  if (dir.empty()) return {};
  for (const char* rel : {"/sim/libnvidia-ml.so.1", "/../sim/libnvidia-ml.so.1", "/../lib/gpuscope/libnvidia-ml.so.1"}) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(dir + rel, ec);
    if (!ec && std::filesystem::exists(p, ec)) return p.string();
  }
  return {};
}

namespace {

// "scenario FILE:LINE: what" or "environment variable NAME: what" when the simulator's nvmlInit
// refused its input; nothing for a real driver or a simulated driver failure.
std::optional<std::string> simulator_input_error(const NvmlLibrary& L) {
  if (L.SimGetInitFailure == nullptr) return std::nullopt;
  unsigned source = 0;
  std::string message(4096, '\0');
  if (L.SimGetInitFailure(&source, message.data(), static_cast<unsigned>(message.size())) != NVML_SUCCESS) {
    return std::nullopt;
  }
  message.resize(message.find('\0'));
  if (source == GPUSCOPE_SIM_INIT_FAILURE_SCENARIO) return "scenario " + message;
  if (source == GPUSCOPE_SIM_INIT_FAILURE_ENVIRONMENT) return "environment variable " + message;
  return std::nullopt;
}

}  // namespace

std::expected<std::unique_ptr<NvmlBackend>, BackendError> NvmlBackend::open(const BackendOptions& options) {
  std::vector<std::string> candidates;
  std::string named_by;  // what chose the library, when one was chosen
  // The simulator reads its scenario from the environment at nvmlInit.
  std::optional<ScopedEnv> scenario_env, quiet_env;
  if (options.simulate) {
    if (!options.scenario.empty()) scenario_env.emplace("GPUSCOPE_SIM_SCENARIO", options.scenario);
    // We print NVML's error string ourselves: the simulator need not print it too.
    quiet_env.emplace("GPUSCOPE_SIM_QUIET", "1");
    std::string sim = options.library_path.empty() ? simulator_library_path() : options.library_path;
    if (!options.library_path.empty()) {
      named_by = "--nvml-lib";
    } else if (const char* env = std::getenv("GPUSCOPE_SIM_LIB"); env != nullptr && *env != '\0') {
      named_by = "GPUSCOPE_SIM_LIB (for --simulate)";
    } else {
      named_by = "--simulate (the simulator next to gpuscope)";
    }
    if (sim.empty()) {
      return std::unexpected(BackendError{BackendErrorKind::kLibraryNotFound, 0,
                                          "simulated NVML library not found next to the gpuscope executable "
                                          "(sim/libnvidia-ml.so.1 or ../lib/gpuscope/); set GPUSCOPE_SIM_LIB"});
    }
    candidates.push_back(sim);
  } else if (!options.library_path.empty()) {
    // An explicit choice is never silently replaced by another library.
    candidates.push_back(options.library_path);
    named_by = "--nvml-lib";
  } else if (const char* env = std::getenv("GPUSCOPE_NVML_LIB"); env != nullptr && *env != '\0') {
    candidates.push_back(env);
    named_by = "GPUSCOPE_NVML_LIB";
  } else {
    candidates = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
  }

  auto lib = NvmlLibrary::open(candidates, named_by, options.count_calls);
  if (!lib) return std::unexpected(lib.error());

  std::unique_ptr<NvmlBackend> backend(new NvmlBackend());
  backend->library_ = std::move(*lib);
  backend->proc_root_ = options.proc_root;
  backend->read_pcie_throughput_ = options.read_pcie_throughput;
  backend->counter_interval_ = options.counter_interval;
  backend->process_util_interval_ = options.process_utilization_interval;
  auto& L = *backend->library_;

  if (nvmlReturn_t rc = L.nvmlInit_v2(); rc != NVML_SUCCESS) {
    // A mistake in the scenario or the simulator's environment is the user's input, not a driver
    // failure: the simulator tells what it refused through its own extension.
    if (auto input = simulator_input_error(L)) {
      backend->library_.reset();
      return std::unexpected(BackendError{BackendErrorKind::kSimulatorInput, static_cast<int>(rc), std::move(*input)});
    }
    const std::string why = L.error_string(rc);
    backend->library_.reset();  // nothing to shut down
    return std::unexpected(BackendError{BackendErrorKind::kInitFailed, static_cast<int>(rc),
                                        fmt::format("NVML initialization failed: {} (library {})", why,
                                                    candidates.size() == 1 ? candidates[0] : "libnvidia-ml")});
  }
  if (auto discovered = backend->discover(); !discovered) return std::unexpected(discovered.error());
  if (options.watch_events) {
    std::vector<nvmlDevice_t> devices;
    for (const auto& s : backend->state_) devices.push_back(s->device);
    backend->events_ = std::make_unique<EventWatcher>(L, std::move(devices), !options.poll_events);
  }
  return backend;
}

NvmlBackend::~NvmlBackend() {
  events_.reset();
  if (library_) {
    for (auto& s : state_) {
      if (library_->nvmlGpmSampleFree != nullptr) {
        if (s->gpm_prev != nullptr) library_->nvmlGpmSampleFree(s->gpm_prev);
        if (s->gpm_cur != nullptr) library_->nvmlGpmSampleFree(s->gpm_cur);
      }
      s->mig.reset();  // frees its GPM samples while the library is up
    }
    if (library_->nvmlShutdown != nullptr) library_->nvmlShutdown();
  }
}

std::expected<void, BackendError> NvmlBackend::discover() {
  auto& L = *library_;
  system_.library_path = L.path();
  system_.simulated = L.is_simulator();

  char buf[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (L.nvmlSystemGetDriverVersion != nullptr && L.nvmlSystemGetDriverVersion(buf, sizeof buf) == NVML_SUCCESS) {
    system_.driver_version = c_string(buf, sizeof buf);
  }
  if (L.nvmlSystemGetNVMLVersion != nullptr && L.nvmlSystemGetNVMLVersion(buf, sizeof buf) == NVML_SUCCESS) {
    system_.nvml_version = c_string(buf, sizeof buf);
  }
  if (int cuda = 0;
      L.nvmlSystemGetCudaDriverVersion_v2 != nullptr && L.nvmlSystemGetCudaDriverVersion_v2(&cuda) == NVML_SUCCESS) {
    system_.cuda_driver_version = cuda;
  }
  char host[256] = {};
  if (L.SimGetHostname != nullptr && L.SimGetHostname(host, sizeof host) == NVML_SUCCESS) {
    system_.hostname = c_string(host, sizeof host);
  } else if (gethostname(host, sizeof host - 1) == 0) {
    system_.hostname = c_string(host, sizeof host);
  }

  unsigned count = 0;
  if (nvmlReturn_t rc = L.nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) {
    return std::unexpected(BackendError{BackendErrorKind::kDiscoveryFailed, static_cast<int>(rc),
                                        fmt::format("cannot count GPUs: {}", L.error_string(rc))});
  }
  for (unsigned i = 0; i < count; ++i) {
    auto state = std::make_unique<GpuState>();
    state->mig = std::make_unique<MigReader>(L);
    state->processes = std::make_unique<ProcessReader>(L, process_util_interval_, [this] { return now(); });
    model::GpuInfo info;
    info.index = i;
    if (nvmlReturn_t rc = L.nvmlDeviceGetHandleByIndex_v2(i, &state->device); rc != NVML_SUCCESS) {
      // Keep the GPU listed, marked down: one bad GPU never hides the others.
      state->device = nullptr;
      state->up = false;
      state->down_code = static_cast<int>(rc);
      info.discovery_error = static_cast<int>(rc);
    } else {
      read_static(*state, info);
    }
    gpus_.push_back(std::move(info));
    state_.push_back(std::move(state));
  }
  proc_resolver_ = std::make_unique<ProcessResolver>(
      proc_root_, [lib = library_.get()](unsigned pid) -> std::optional<model::ProcessIdentity> {
        if (lib->SimGetProcessName == nullptr) return std::nullopt;
        char name[256] = {};
        if (lib->SimGetProcessName(pid, name, sizeof name) != NVML_SUCCESS) return std::nullopt;
        model::ProcessIdentity id;
        id.name = c_string(name, sizeof name);
        char user[64] = {};
        if (lib->SimGetProcessUser != nullptr && lib->SimGetProcessUser(pid, user, sizeof user) == NVML_SUCCESS) {
          id.user = c_string(user, sizeof user);
        }
        return id;
      });
  return {};
}

void NvmlBackend::read_static(GpuState& s, model::GpuInfo& info) {
  auto& L = *library_;
  nvmlDevice_t d = s.device;
  s.fan_unsupported = false;  // a GPU that returns may be another board
  if (s.processes != nullptr) s.processes->reset();
  auto text = [&](auto fn, std::size_t cap) -> std::optional<std::string> {
    if (fn == nullptr) return std::nullopt;
    std::vector<char> b(cap, '\0');
    if (fn(d, b.data(), static_cast<unsigned>(cap)) != NVML_SUCCESS) return std::nullopt;
    return c_string(b.data(), cap);
  };
  auto uint = [&](auto fn, auto... args) -> std::optional<unsigned> {
    unsigned v = 0;
    if (fn == nullptr || fn(d, args..., &v) != NVML_SUCCESS) return std::nullopt;
    return v;
  };

  info.discovery_error = 0;
  if (auto idx = uint(L.nvmlDeviceGetIndex)) info.index = *idx;
  info.minor_number = uint(L.nvmlDeviceGetMinorNumber);
  info.name = text(L.nvmlDeviceGetName, NVML_DEVICE_NAME_BUFFER_SIZE).value_or("");
  info.uuid = text(L.nvmlDeviceGetUUID, NVML_DEVICE_UUID_BUFFER_SIZE).value_or("");
  info.serial = text(L.nvmlDeviceGetSerial, NVML_DEVICE_SERIAL_BUFFER_SIZE);
  info.board_part_number = text(L.nvmlDeviceGetBoardPartNumber, 80);
  info.vbios_version = text(L.nvmlDeviceGetVbiosVersion, 32);
  if (nvmlPciInfo_t pci{}; L.nvmlDeviceGetPciInfo_v3 != nullptr && L.nvmlDeviceGetPciInfo_v3(d, &pci) == NVML_SUCCESS) {
    info.pci_bus_id = c_string(pci.busId, sizeof pci.busId);
  }
  if (nvmlMemory_v2_t m{}; L.nvmlDeviceGetMemoryInfo_v2 != nullptr && (m.version = nvmlMemory_v2, true) &&
                           L.nvmlDeviceGetMemoryInfo_v2(d, &m) == NVML_SUCCESS) {
    info.memory_total_bytes = m.total;
  } else if (nvmlMemory_t m1{};
             L.nvmlDeviceGetMemoryInfo != nullptr && L.nvmlDeviceGetMemoryInfo(d, &m1) == NVML_SUCCESS) {
    info.memory_total_bytes = m1.total;
  }
  info.max_sm_clock_mhz = uint(L.nvmlDeviceGetMaxClockInfo, NVML_CLOCK_SM);
  info.max_mem_clock_mhz = uint(L.nvmlDeviceGetMaxClockInfo, NVML_CLOCK_MEM);
  info.max_graphics_clock_mhz = uint(L.nvmlDeviceGetMaxClockInfo, NVML_CLOCK_GRAPHICS);
  auto watts = [](std::optional<unsigned> mw) -> std::optional<double> {
    if (!mw) return std::nullopt;
    return *mw / 1000.0;
  };
  info.power_limit_watts = watts(uint(L.nvmlDeviceGetPowerManagementLimit));
  info.power_default_limit_watts = watts(uint(L.nvmlDeviceGetPowerManagementDefaultLimit));
  info.enforced_power_limit_watts = watts(uint(L.nvmlDeviceGetEnforcedPowerLimit));
  info.architecture = uint(L.nvmlDeviceGetArchitecture);
  if (int major = 0, minor = 0; L.nvmlDeviceGetCudaComputeCapability != nullptr &&
                                L.nvmlDeviceGetCudaComputeCapability(d, &major, &minor) == NVML_SUCCESS) {
    info.cuda_cc_major = major;
    info.cuda_cc_minor = minor;
  }
  info.pcie_max_gen = uint(L.nvmlDeviceGetMaxPcieLinkGeneration);
  info.pcie_max_width = uint(L.nvmlDeviceGetMaxPcieLinkWidth);
  info.num_cores = uint(L.nvmlDeviceGetNumGpuCores);
  info.slowdown_temp_celsius = uint(L.nvmlDeviceGetTemperatureThreshold, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN);
  info.shutdown_temp_celsius = uint(L.nvmlDeviceGetTemperatureThreshold, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN);
  if (unsigned cur = 0, pending = 0;
      L.nvmlDeviceGetMigMode != nullptr && L.nvmlDeviceGetMigMode(d, &cur, &pending) == NVML_SUCCESS) {
    info.mig_enabled = cur != 0;
  }
  if (int mode = 0; L.nvmlDeviceGetPersistenceMode != nullptr && L.nvmlDeviceGetPersistenceMode(d, &mode) == NVML_SUCCESS) {
    info.persistence_mode = mode != 0;
  }
  if (int cur = 0, pending = 0;
      L.nvmlDeviceGetEccMode != nullptr && L.nvmlDeviceGetEccMode(d, &cur, &pending) == NVML_SUCCESS) {
    info.ecc_enabled = cur != 0;
  }
  info.gpm_supported = false;
  if (L.nvmlGpmQueryDeviceSupport != nullptr && L.nvmlGpmSampleAlloc != nullptr && L.nvmlGpmSampleGet != nullptr &&
      L.nvmlGpmMetricsGet != nullptr) {
    nvmlGpmSupport_t support{};
    support.version = NVML_GPM_SUPPORT_VERSION;
    if (L.nvmlGpmQueryDeviceSupport(d, &support) == NVML_SUCCESS && support.isSupportedDevice != 0) {
      if ((s.gpm_prev != nullptr || L.nvmlGpmSampleAlloc(&s.gpm_prev) == NVML_SUCCESS) &&
          (s.gpm_cur != nullptr || L.nvmlGpmSampleAlloc(&s.gpm_cur) == NVML_SUCCESS)) {
        info.gpm_supported = true;
      }
    }
  }
}

std::chrono::system_clock::time_point NvmlBackend::now() const {
  if (library_->SimGetTime != nullptr) {
    unsigned long long ns = 0;
    if (library_->SimGetTime(&ns) == NVML_SUCCESS) {
      return std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::nanoseconds(ns)));
    }
  }
  return std::chrono::system_clock::now();
}

bool NvmlBackend::set_sim_time(std::chrono::system_clock::time_point t) {
  if (library_->SimSetTime == nullptr) return false;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return ns >= 0 && library_->SimSetTime(static_cast<unsigned long long>(ns)) == NVML_SUCCESS;
}

std::optional<std::string> NvmlBackend::update_sim_sysfs() const {
  if (library_->SimUpdateSysfs == nullptr) return std::nullopt;
  char root[4096];
  if (library_->SimUpdateSysfs(root, sizeof root) != NVML_SUCCESS) return std::nullopt;
  return std::string(root);
}

model::Snapshot NvmlBackend::sample() {
  const auto started = std::chrono::steady_clock::now();
  model::Snapshot snap;
  snap.time = now();
  if (events_) events_->drain();

  // GPM ratios need two samples some time apart; the very first reading takes the first one here.
  bool waited_for_gpm = false;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    auto& s = *state_[i];
    if (gpus_[i].gpm_supported && s.up && !s.gpm_prev_valid &&
        library_->nvmlGpmSampleGet(s.device, s.gpm_prev) == NVML_SUCCESS) {
      s.gpm_prev_valid = true;
      waited_for_gpm = true;
    }
    // And each MIG instance's, the first time a GPU in MIG mode is read.
    if (gpus_[i].gpm_supported && s.up && s.mig != nullptr && s.mig->prime(s.device, true)) waited_for_gpm = true;
  }
  if (waited_for_gpm) std::this_thread::sleep_for(kMinGpmWindow);

  std::vector<unsigned> live_pids;
  collector_durations_ = {};
  collector_cpu_ = {};
  const auto cpu_started = thread_cpu_now();
  snap.gpus.reserve(state_.size());
  for (std::size_t i = 0; i < state_.size(); ++i) {
    snap.gpus.push_back(sample_gpu(i));
    for (const auto& p : snap.gpus.back().processes) live_pids.push_back(p.pid);
  }
  proc_resolver_->retain_only(live_pids);
  snap.duration = std::chrono::steady_clock::now() - started;
  snap.collector_durations = collector_durations_;
  // Device time is what the GPU readings took beyond the timed GPM and process parts.
  auto& device = snap.collector_durations[static_cast<std::size_t>(model::Collector::kDevice)];
  device = snap.duration;
  for (std::size_t c = 1; c < model::kCollectorCount; ++c) device -= std::min(device, snap.collector_durations[c]);
  auto cpu = collector_cpu_;
  auto& device_cpu = cpu[static_cast<std::size_t>(model::Collector::kDevice)];
  device_cpu = thread_cpu_now() - cpu_started;
  for (std::size_t c = 1; c < model::kCollectorCount; ++c) device_cpu -= std::min(device_cpu, cpu[c]);
  for (std::size_t c = 0; c < model::kCollectorCount; ++c) collector_cpu_total_[c] += cpu[c];
  snap.collector_cpu_total = collector_cpu_total_;
  if (library_->counts_calls()) snap.nvml_calls = library_->call_counts();
  return snap;
}

// Reads one GPU. A GPU_IS_LOST answer from any call marks the GPU down and ends its reading.
model::GpuSample NvmlBackend::sample_gpu(std::size_t i) {
  auto& L = *library_;
  auto& s = *state_[i];
  auto& info = gpus_[i];
  model::GpuSample g;
  g.index = info.index;

  if (!s.up && !try_recover(s, info)) {
    g.up = false;
    g.down_error_code = s.down_code;
    return g;
  }
  const nvmlDevice_t d = s.device;
  bool lost = false;
  auto mark = [&](nvmlReturn_t rc) {
    if (rc == NVML_ERROR_GPU_IS_LOST) lost = true;
  };
  // Sets `id` from a call returning one unsigned, scaled.
  auto put_uint = [&](FieldId id, auto fn, double scale, auto... args) {
    if (lost) return;
    if (fn == nullptr) {
      g[id] = FieldValue::unsupported();
      return;
    }
    unsigned v = 0;
    nvmlReturn_t rc = fn(d, args..., &v);
    mark(rc);
    g[id] = rc == NVML_SUCCESS ? FieldValue::of(v * scale) : field_status_of(rc);
  };

  put_uint(FieldId::kSmClock, L.nvmlDeviceGetClockInfo, 1.0, NVML_CLOCK_SM);
  put_uint(FieldId::kMemClock, L.nvmlDeviceGetClockInfo, 1.0, NVML_CLOCK_MEM);
  put_uint(FieldId::kGraphicsClock, L.nvmlDeviceGetClockInfo, 1.0, NVML_CLOCK_GRAPHICS);
  put_uint(FieldId::kVideoClock, L.nvmlDeviceGetClockInfo, 1.0, NVML_CLOCK_VIDEO);
  // What cannot change while the GPU is attached was read at discovery; on a real driver each of these
  // calls costs 0.3 to 3 ms, every sample.
  auto put_static = [&](FieldId id, const std::optional<unsigned>& v) {
    g[id] = v ? FieldValue::of(*v) : FieldValue::unsupported();
  };
  put_static(FieldId::kMaxSmClock, info.max_sm_clock_mhz);
  put_static(FieldId::kMaxMemClock, info.max_mem_clock_mhz);
  put_static(FieldId::kMaxGraphicsClock, info.max_graphics_clock_mhz);
  put_uint(FieldId::kGpuTemp, L.nvmlDeviceGetTemperature, 1.0, NVML_TEMPERATURE_GPU);
  put_static(FieldId::kSlowdownTemp, info.slowdown_temp_celsius);
  put_static(FieldId::kShutdownTemp, info.shutdown_temp_celsius);
  put_uint(FieldId::kPowerUsage, L.nvmlDeviceGetPowerUsage, 1e-3);
  if (s.fan_unsupported) {
    g[FieldId::kFanSpeed] = FieldValue::unsupported();
  } else {
    put_uint(FieldId::kFanSpeed, L.nvmlDeviceGetFanSpeed, 1.0);
    s.fan_unsupported = g[FieldId::kFanSpeed].status == model::ValueStatus::kUnsupported;
  }
  put_static(FieldId::kPcieLinkGenMax, info.pcie_max_gen);
  put_static(FieldId::kPcieLinkWidthMax, info.pcie_max_width);
  // Each call blocks ~20 ms on a real driver (it measures a window), so only callers that show it read it.
  if (read_pcie_throughput_) {
    put_uint(FieldId::kPcieTxThroughput, L.nvmlDeviceGetPcieThroughput, 1.0, NVML_PCIE_UTIL_TX_BYTES);
    put_uint(FieldId::kPcieRxThroughput, L.nvmlDeviceGetPcieThroughput, 1.0, NVML_PCIE_UTIL_RX_BYTES);
  }

  // Cumulative counters (energy, replays, violation times, ECC, retired pages, remapped rows) cost 0.2 to
  // 3 ms of CPU each per GPU on a real driver; with a counter interval they are read that often and
  // carried over in between, which loses no event, only resolution.
  const auto now = std::chrono::steady_clock::now();
  const bool read_counters =
      counter_interval_.count() == 0 || !s.counters_valid || now - s.counters_read_at >= counter_interval_;
  if (read_counters) {
    put_uint(FieldId::kPowerLimit, L.nvmlDeviceGetPowerManagementLimit, 1e-3);
    put_uint(FieldId::kEnforcedPowerLimit, L.nvmlDeviceGetEnforcedPowerLimit, 1e-3);
    put_uint(FieldId::kPcieLinkGenCurrent, L.nvmlDeviceGetCurrPcieLinkGeneration, 1.0);
    put_uint(FieldId::kPcieLinkWidthCurrent, L.nvmlDeviceGetCurrPcieLinkWidth, 1.0);
    if (!lost) read_bar1(L, d, g, mark);
    put_uint(FieldId::kPcieReplay, L.nvmlDeviceGetPcieReplayCounter, 1.0);
    if (!lost && L.nvmlDeviceGetTotalEnergyConsumption == nullptr) {
      g[FieldId::kTotalEnergy] = FieldValue::unsupported();
    } else if (!lost) {
      unsigned long long mj = 0;
      nvmlReturn_t rc = L.nvmlDeviceGetTotalEnergyConsumption(d, &mj);
      mark(rc);
      g[FieldId::kTotalEnergy] = rc == NVML_SUCCESS ? FieldValue::of(static_cast<double>(mj)) : field_status_of(rc);
    }
    if (!lost) read_health(L, d, g, mark);
    if (!lost) read_violations(L, d, g, mark);
    if (!lost) {
      for (std::size_t k = 0; k < kCounterFields.size(); ++k) s.counters[k] = g[kCounterFields[k]];
      s.counters_read_at = now;
      s.counters_valid = true;
    }
  } else {
    for (std::size_t k = 0; k < kCounterFields.size(); ++k) g[kCounterFields[k]] = s.counters[k];
  }
  if (!lost) read_utilization(L, d, g, mark);
  if (!lost) read_memory(L, d, g, mark);
  if (!lost) read_field_values(L, d, g, mark);
  auto timed = [&](model::Collector c, auto&& read) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto cpu0 = thread_cpu_now();
    read();
    collector_durations_[static_cast<std::size_t>(c)] += std::chrono::steady_clock::now() - t0;
    collector_cpu_[static_cast<std::size_t>(c)] += thread_cpu_now() - cpu0;
  };
  if (!lost && s.mig != nullptr) timed(model::Collector::kGpm, [&] { mark(s.mig->read(d, info.gpm_supported, g)); });
  // In MIG mode the ratios that matter are each instance's (one MetricsGet each, ~1.24 ms of driver CPU on an
  // H100); the GPU's own GPM then gives only its PCIe and NVLink rates and the whole-GPU figures, read
  // every counter interval (a rate over that window) and carried over in between.
  const bool mig_instances = g.mig_enabled && !g.mig_instances.empty();
  if (!lost && (!mig_instances || !s.gpm_carry_valid || counter_interval_.count() == 0 ||
                now - s.gpm_read_at >= counter_interval_)) {
    timed(model::Collector::kGpm, [&] { read_gpm(g, s, info, mark); });
    s.gpm_read_at = now;
    s.gpm_carry_valid = mig_instances;
    for (std::size_t k = 0; k < kGpmWanted.size(); ++k) s.gpm_carry[k] = g[kGpmWanted[k].field];
  } else if (!lost) {
    for (std::size_t k = 0; k < kGpmWanted.size(); ++k) g[kGpmWanted[k].field] = s.gpm_carry[k];
  }
  if (!lost) timed(model::Collector::kProcesses, [&] { s.processes->read(s.device, g, *proc_resolver_, mark); });

  if (lost) {
    s.up = false;
    s.down_code = NVML_ERROR_GPU_IS_LOST;
    s.gpm_prev_valid = false;
    s.counters_valid = false;
    s.gpm_carry_valid = false;
    if (s.mig != nullptr) s.mig->reset();
    model::GpuSample down;
    down.index = info.index;
    down.up = false;
    down.down_error_code = s.down_code;
    return down;
  }

  if (events_ != nullptr) {
    g.events = events_->counts(static_cast<unsigned>(i));
    if (events_->watches_xid(static_cast<unsigned>(i))) {
      g[FieldId::kXidErrors] = FieldValue::of(static_cast<double>(g.events.last_xid.value_or(0)));
    }
  }
  return g;
}

bool NvmlBackend::try_recover(GpuState& s, model::GpuInfo& info) {
  auto& L = *library_;
  nvmlDevice_t d = nullptr;
  nvmlReturn_t rc = NVML_ERROR_NOT_FOUND;
  // The same physical GPU is found again by its bus id; its NVML index may have changed.
  if (!info.pci_bus_id.empty() && L.nvmlDeviceGetHandleByPciBusId_v2 != nullptr) {
    rc = L.nvmlDeviceGetHandleByPciBusId_v2(info.pci_bus_id.c_str(), &d);
  }
  if (rc != NVML_SUCCESS) rc = L.nvmlDeviceGetHandleByIndex_v2(info.index, &d);
  if (rc != NVML_SUCCESS) {
    s.down_code = static_cast<int>(rc);
    return false;
  }
  // A handle alone proves little: the GPU must answer a call.
  unsigned temp = 0;
  char uuid[NVML_DEVICE_UUID_BUFFER_SIZE] = {};
  rc = L.nvmlDeviceGetUUID != nullptr ? L.nvmlDeviceGetUUID(d, uuid, sizeof uuid)
                                      : L.nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &temp);
  if (rc != NVML_SUCCESS) {
    s.down_code = static_cast<int>(rc);
    return false;
  }
  s.device = d;
  s.up = true;
  s.down_code = 0;
  read_static(s, info);
  return true;
}

template <class Mark>
void NvmlBackend::read_gpm(model::GpuSample& g, GpuState& s, const model::GpuInfo& info, Mark&& mark) {
  // Without GPM (pre-Hopper, old driver) the profiling fields stay unsupported: absent, never 0.
  if (!info.gpm_supported || !s.gpm_prev_valid) return;
  auto& L = *library_;
  nvmlReturn_t rc = L.nvmlGpmSampleGet(s.device, s.gpm_cur);
  mark(rc);
  if (rc != NVML_SUCCESS) {
    // A failed read is an error on every profiling field, not a silent "unsupported".
    for (const auto& w : kGpmWanted) g[w.field] = field_status_of(rc);
    return;
  }
  mark(read_gpm_metrics(L, s.gpm_prev, s.gpm_cur, kGpmWanted, g.fields));
  // This sample is the start of the next window.
  std::swap(s.gpm_prev, s.gpm_cur);
}

}  // namespace gpuscope::nvml
