// NVML's event sets: XID and ECC events from the scenario's timeline, delivered once per set, with
// a wait that blocks like the driver's (real clock) or until the virtual clock is moved.
#include <chrono>

#include "nvml/nvml_abi.h"
#include "sim/library_state.h"

using namespace gpuscope::sim;

namespace {

constexpr unsigned kNoInstance = 0xFFFFFFFFU;

nvmlReturn_t wait_for_event(std::string_view function, nvmlEventSet_t set, nvmlEventData_t* data,
                            unsigned int timeoutms) noexcept {
  try {
    CallCharge charge;  // spent after `lock` below is released
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    Simulator* sim = lib.sim.get();
    if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
    if (data == nullptr || sim->find(set) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    double t = sim->now();
    if (const nvmlReturn_t r = apply_faults(lock, function, std::nullopt, sim, t); r != NVML_SUCCESS) return r;
    const std::uint64_t generation = lib.generation;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutms);
    for (;;) {
      EventSet* events = sim->find(set);
      if (events == nullptr) return NVML_ERROR_INVALID_ARGUMENT;  // freed by another thread meanwhile
      if (const auto e = events->next(sim->events(), sim->now())) {
        data->device = Simulator::handle(sim->device(e->gpu));
        data->eventType = e->type;
        data->eventData = e->data;
        data->gpuInstanceId = kNoInstance;
        data->computeInstanceId = kNoInstance;
        return NVML_SUCCESS;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return NVML_ERROR_TIMEOUT;
      auto wake = deadline;
      if (!sim->clock().is_virtual()) {
        // Real time: sleep until the next scenario event falls due, if that comes first.
        const auto due = now + sim->clock().until(events->next_due(sim->events()));
        wake = std::min(wake, due);
      }
      ++lib.waiters;
      lib.changed.wait_until(lock, wake);
      --lib.waiters;
      if (lib.generation != generation || !lib.sim) {
        lib.changed.notify_all();  // a shutdown may be waiting for the waiters to leave
        return NVML_ERROR_UNINITIALIZED;
      }
    }
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

}  // namespace

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  return node_call("nvmlEventSetCreate", [&](Simulator& sim, double t) {
    if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *set = sim.create_event_set(t);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                                          nvmlEventSet_t set) {
  return device_call("nvmlDeviceRegisterEvents", device, [&](Simulator& sim, SimDevice& d, double) {
    EventSet* events = sim.find(set);
    if (events == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if ((eventTypes & ~kSupportedEventTypes) != 0) return NVML_ERROR_NOT_SUPPORTED;
    events->add(d.index, eventTypes);
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes) {
  return device_call("nvmlDeviceGetSupportedEventTypes", device, [&](Simulator&, SimDevice&, double) {
    if (eventTypes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = kSupportedEventTypes;
    return NVML_SUCCESS;
  });
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                     unsigned int timeoutms) {
  return wait_for_event("nvmlEventSetWait_v2", set, data, timeoutms);
}
GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms) {
  return wait_for_event("nvmlEventSetWait", set, data, timeoutms);
}

GPUSCOPE_SIM_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  return node_call("nvmlEventSetFree", [&](Simulator& sim, double) {
    return sim.free_event_set(set) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
  });
}
