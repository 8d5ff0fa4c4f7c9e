// NVML's lifecycle, system and device-discovery functions, and the simulator's own gpuscopeSim*
// extensions. Device queries live in device_exports.cc, processes, events and GPM beside it.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <span>
#include <string>

#include "nvml/nvml_abi.h"
#include "sim/library_state.h"
#include "sim/return_codes.h"
#include "sim/sim_clock.h"

using namespace gpuscope::sim;

namespace {

nvmlReturn_t init_library(std::string_view function) noexcept {
  try {
    CallCharge charge;  // spent after `lock` below is released
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    if (lib.sim) {
      ++lib.refcount;
      CallCharge::add(lib.sim->costs().call(function));
      return NVML_SUCCESS;
    }
    auto created = Simulator::create();
    lib.init_failure_source = Simulator::InitFailure::Source::kDriver;
    lib.init_failure_message.clear();
    if (!created) {
      const Simulator::InitFailure& failure = created.error();
      lib.init_failure_source = failure.source;
      lib.init_failure_message = failure.message;
      if (!failure.message.empty()) {
        // One line a person can act on; most clients' error paths only show the code's text.
        // A client that prints nvmlErrorString itself (gpuscope) sets GPUSCOPE_SIM_QUIET.
        if (const char* quiet = std::getenv("GPUSCOPE_SIM_QUIET"); quiet == nullptr || *quiet == '\0') {
          std::fprintf(stderr, "gpuscope-sim: %s\n", failure.message.c_str());
        }
        lib.texts.push_back("Unknown Error: " + failure.message);
        lib.unknown_error_text = lib.texts.back().c_str();
      }
      return failure.code;
    }
    std::unique_ptr<Simulator>& sim = *created;
    const FaultDecision fault = sim->faults().decide(function, std::nullopt, sim->now());
    if (fault.error != 0) return static_cast<nvmlReturn_t>(fault.error);
    CallCharge::add(sim->costs().call(function));
    lib.sim = std::move(sim);
    lib.refcount = 1;
    ++lib.generation;
    lib.unknown_error_text = "Unknown Error";
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// Handle lookups answer for the GPU they resolve to, so a lost GPU cannot be looked up either.
template <class Match>
nvmlReturn_t handle_call(std::string_view function, nvmlDevice_t* device, Match&& match) noexcept {
  try {
    CallCharge charge;  // spent after `lock` below is released
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    Simulator* sim = lib.sim.get();
    if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
    if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    double t = sim->now();
    const std::expected<unsigned, nvmlReturn_t> index = match(*sim);
    if (!index) {
      if (const nvmlReturn_t r = apply_faults(lock, function, std::nullopt, sim, t); r != NVML_SUCCESS) return r;
      return index.error();
    }
    if (const nvmlReturn_t r = apply_faults(lock, function, *index, sim, t); r != NVML_SUCCESS) return r;
    *device = Simulator::handle(sim->device(*index));
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

bool same_bus_id(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

nvmlReturn_t get_count(std::string_view function, unsigned int* count) {
  return node_call(function, [&](Simulator& sim, double) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = sim.device_count();
    return NVML_SUCCESS;
  });
}

nvmlReturn_t get_handle_by_index(std::string_view function, unsigned int index, nvmlDevice_t* device) {
  return handle_call(function, device, [&](Simulator& sim) -> std::expected<unsigned, nvmlReturn_t> {
    if (index >= sim.device_count()) return std::unexpected(NVML_ERROR_INVALID_ARGUMENT);
    return index;
  });
}

nvmlReturn_t cuda_driver_version(std::string_view function, int* version) {
  return node_call(function, [&](Simulator& sim, double) {
    if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *version = sim.scenario().node.cuda_driver_version;
    return NVML_SUCCESS;
  });
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlInit_v2(void) { return init_library("nvmlInit_v2"); }
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlInit(void) { return init_library("nvmlInit"); }
// Flag NVML_INIT_FLAG_NO_GPUS changes nothing: a scenario always has GPUs.
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int) { return init_library("nvmlInitWithFlags"); }

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlShutdown(void) {
  try {
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    if (!lib.sim) return NVML_ERROR_UNINITIALIZED;
    if (--lib.refcount > 0) return NVML_SUCCESS;
    // Waiters in nvmlEventSetWait hold pointers into the state: let them leave first.
    ++lib.generation;
    lib.changed.notify_all();
    lib.changed.wait(lock, [&] { return lib.waiters == 0; });
    write_call_counts(lib);
    lib.sim.reset();
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  if (result != NVML_ERROR_UNKNOWN) return nvml_error_text(result);
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    return lib.unknown_error_text;
  } catch (...) {
    return "Unknown Error";
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return node_call("nvmlSystemGetDriverVersion", [&](Simulator& sim, double) {
    return copy_string(sim.scenario().node.driver_version, version, length);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return node_call("nvmlSystemGetNVMLVersion", [&](Simulator& sim, double) {
    // NVML versions itself as <CUDA major>.<driver version>, e.g. 12.550.54.15.
    const NodeSpec& node = sim.scenario().node;
    return copy_string(std::to_string(node.cuda_driver_version / 1000) + "." + node.driver_version, version, length);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return cuda_driver_version("nvmlSystemGetCudaDriverVersion", version);
}

#if !GPUSCOPE_SIM_LEGACY
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return cuda_driver_version("nvmlSystemGetCudaDriverVersion_v2", version);
}
#endif

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return get_count("nvmlDeviceGetCount_v2", count);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) {
  return get_count("nvmlDeviceGetCount", count);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  return get_handle_by_index("nvmlDeviceGetHandleByIndex_v2", index, device);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return get_handle_by_index("nvmlDeviceGetHandleByIndex", index, device);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  // A MIG device's UUID finds that MIG device while it exists (as drivers from R470 on do).
  if (uuid != nullptr && std::string_view(uuid).starts_with("MIG-")) {
    return node_call("nvmlDeviceGetHandleByUUID", [&](Simulator& sim, double t) {
      if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
      for (unsigned i = 0; i < sim.device_count(); ++i) {
        for (MigDevice* mig : sim.mig_devices(i, t)) {
          if (mig->uuid == uuid) {
            *device = Simulator::handle(*mig);
            return NVML_SUCCESS;
          }
        }
      }
      return NVML_ERROR_NOT_FOUND;
    });
  }
  return handle_call("nvmlDeviceGetHandleByUUID", device, [&](Simulator& sim) -> std::expected<unsigned, nvmlReturn_t> {
    if (uuid == nullptr) return std::unexpected(NVML_ERROR_INVALID_ARGUMENT);
    for (unsigned i = 0; i < sim.device_count(); ++i) {
      if (sim.device(i).identity.uuid == uuid) return i;
    }
    return std::unexpected(NVML_ERROR_NOT_FOUND);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId, nvmlDevice_t* device) {
  return handle_call("nvmlDeviceGetHandleByPciBusId_v2", device,
                     [&](Simulator& sim) -> std::expected<unsigned, nvmlReturn_t> {
                       if (pciBusId == nullptr) return std::unexpected(NVML_ERROR_INVALID_ARGUMENT);
                       for (unsigned i = 0; i < sim.device_count(); ++i) {
                         const GpuIdentity& id = sim.device(i).identity;
                         if (same_bus_id(id.bus_id, pciBusId) || same_bus_id(id.bus_id_legacy, pciBusId)) return i;
                       }
                       return std::unexpected(NVML_ERROR_NOT_FOUND);
                     });
}

// ---- gpuscope's simulator only.

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimSetTime(unsigned long long unixNs) {
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    if (!lib.sim) return NVML_ERROR_UNINITIALIZED;
    if (unixNs > static_cast<unsigned long long>(INT64_MAX)) return NVML_ERROR_INVALID_ARGUMENT;
    const std::int64_t epoch = lib.sim->clock().wall_ns_at(0);
    const double t = static_cast<double>(static_cast<std::int64_t>(unixNs) - epoch) * 1e-9;
    if (t > kMaxScenarioSeconds) return NVML_ERROR_INVALID_ARGUMENT;  // past the longest scenario
    lib.sim->clock().freeze_at(static_cast<std::int64_t>(unixNs));
    lib.changed.notify_all();
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetTime(unsigned long long* unixNs) {
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    if (!lib.sim) return NVML_ERROR_UNINITIALIZED;
    if (unixNs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *unixNs = static_cast<unsigned long long>(std::max<std::int64_t>(0, lib.sim->clock().wall_ns()));
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetProcessName(unsigned int pid, char* name, unsigned int length) {
  return node_call("gpuscopeSimGetProcessName", [&](Simulator& sim, double t) {
    if (name == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto found = sim.process_name(pid, t);
    if (!found) return NVML_ERROR_NOT_FOUND;
    return copy_string(*found, name, length);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetProcessUser(unsigned int pid, char* user, unsigned int length) {
  return node_call("gpuscopeSimGetProcessUser", [&](Simulator& sim, double) {
    if (user == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto found = sim.process_user(pid);
    if (!found) return NVML_ERROR_NOT_FOUND;
    return copy_string(*found, user, length);
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetCallCount(const char* function, unsigned long long* count) {
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    if (function == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto it = lib.calls.find(std::string_view(function));
    *count = it == lib.calls.end() ? 0 : it->second;
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetCallCountByIndex(unsigned int index, char* function,
                                                                unsigned int length, unsigned long long* count) {
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    if (function == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (index >= lib.calls.size()) return NVML_ERROR_NOT_FOUND;
    const auto it = std::next(lib.calls.begin(), index);
    *count = it->second;
    return copy_string(it->first, function, length);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetCallCost(const char* function, unsigned int fieldCount,
                                                        const unsigned int* fieldIds, unsigned long long* cpuNs,
                                                        unsigned long long* blockedNs) {
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    if (!lib.sim) return NVML_ERROR_UNINITIALIZED;
    if (function == nullptr || cpuNs == nullptr || blockedNs == nullptr || (fieldCount > 0 && fieldIds == nullptr)) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    CallCost cost = lib.sim->costs().call(function);
    if (fieldCount > 0) cost += lib.sim->costs().field_values(std::span(fieldIds, fieldCount));
    *cpuNs = static_cast<unsigned long long>(cost.cpu.count());
    *blockedNs = static_cast<unsigned long long>(cost.blocked.count());
    return NVML_SUCCESS;
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetInitFailure(unsigned int* source, char* message, unsigned int length) {
  try {
    LibraryState& lib = library();
    const std::lock_guard lock(lib.mutex);
    if (source == nullptr || message == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    switch (lib.init_failure_source) {
      case Simulator::InitFailure::Source::kDriver:
        return NVML_ERROR_NOT_FOUND;
      case Simulator::InitFailure::Source::kScenario:
        *source = GPUSCOPE_SIM_INIT_FAILURE_SCENARIO;
        break;
      case Simulator::InitFailure::Source::kEnvironment:
        *source = GPUSCOPE_SIM_INIT_FAILURE_ENVIRONMENT;
        break;
    }
    return copy_string(lib.init_failure_message, message, length);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimGetHostname(char* name, unsigned int length) {
  return node_call("gpuscopeSimGetHostname",
                   [&](Simulator& sim, double) { return copy_string(sim.scenario().node.hostname, name, length); });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t gpuscopeSimUpdateSysfs(char* root, unsigned int length) {
  return node_call("gpuscopeSimUpdateSysfs", [&](Simulator& sim, double t) {
    if (root == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto tree = sim.update_sysfs(t);
    if (!tree) return NVML_ERROR_NOT_SUPPORTED;
    if (!*tree) {
      // Said once on stderr as the scenario's errors are; the caller sees UNKNOWN.
      std::fprintf(stderr, "gpuscope-sim: %s\n", tree->error().c_str());
      return NVML_ERROR_UNKNOWN;
    }
    return copy_string(**tree, root, length);
  });
}
