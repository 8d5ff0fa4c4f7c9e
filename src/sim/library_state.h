// The library-wide state behind the exported NVML functions: the reference-counted Simulator, the
// one lock every call takes, and the guards that turn faults and exceptions into return codes.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "nvml/nvml_abi.h"
#include "sim/call_costs.h"
#include "sim/simulator.h"

// NVML's functions are the library's only exports; everything else is hidden (-fvisibility=hidden).
#define GPUSCOPE_SIM_EXPORT extern "C" __attribute__((visibility("default")))

#ifndef GPUSCOPE_SIM_LEGACY
#define GPUSCOPE_SIM_LEGACY 0
#endif

namespace gpuscope::sim {

struct LibraryState {
  std::mutex mutex;
  // Wakes event waiters when the virtual clock moves or the library shuts down.
  std::condition_variable changed;
  std::unique_ptr<Simulator> sim;
  unsigned refcount = 0;
  std::uint64_t generation = 0;  // bumped by every load and unload, so waiters notice
  unsigned waiters = 0;
  // nvmlErrorString(NVML_ERROR_UNKNOWN): "Unknown Error" or, after a failed load, the reason.
  // Texts are kept forever so a pointer handed out never dangles.
  const char* unknown_error_text = "Unknown Error";
  std::deque<std::string> texts;
  // Calls per function since the library was loaded (gpuscopeSimGetCallCount).
  std::map<std::string, unsigned long long, std::less<>> calls;
  // The latest nvmlInit's failure when the simulator's input was at fault (gpuscopeSimGetInitFailure);
  // kDriver when it succeeded or failed as a driver does.
  Simulator::InitFailure::Source init_failure_source = Simulator::InitFailure::Source::kDriver;
  std::string init_failure_message;
};

// Deliberately never destroyed: clients may call in from atexit handlers or other threads while
// static destructors run.
LibraryState& library();

// Counts the call, then applies the faults injected for `function` (about `gpu`). May sleep for a
// slow-call fault with the lock released; then `sim` and `t` are refreshed. NVML_SUCCESS when the call
// may go on: then its cost is added to the thread's CallCharge, spent once the wrapper has unlocked.
nvmlReturn_t apply_faults(std::unique_lock<std::mutex>& lock, std::string_view function, std::optional<unsigned> gpu,
                          Simulator*& sim, double& t);

// Writes every function's call count ("name<TAB>count" lines) to env GPUSCOPE_SIM_CALL_COUNTS's file,
// if set. Called with the lock held at the last nvmlShutdown.
void write_call_counts(const LibraryState& state);

// A call about the whole node. body(Simulator&, double t) -> nvmlReturn_t.
template <class Body>
nvmlReturn_t node_call(std::string_view function, Body&& body) noexcept {
  try {
    CallCharge charge;  // spent after `lock` below is released
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    Simulator* sim = lib.sim.get();
    if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
    double t = sim->now();
    if (const nvmlReturn_t r = apply_faults(lock, function, std::nullopt, sim, t); r != NVML_SUCCESS) return r;
    return body(*sim, t);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// A call about a full GPU or a MIG device. body(Simulator&, SimDevice& gpu, MigDevice* mig, double t) ->
// nvmlReturn_t, where `gpu` is the MIG device's parent and `mig` null for a full GPU's handle. A handle
// of a MIG device that no longer exists is INVALID_ARGUMENT, as with the driver; faults and costs are
// the parent GPU's.
template <class Body>
nvmlReturn_t any_device_call(std::string_view function, nvmlDevice_t handle, Body&& body) noexcept {
  try {
    CallCharge charge;  // spent after `lock` below is released
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    Simulator* sim = lib.sim.get();
    if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
    SimDevice* device = sim->find(handle);
    MigDevice* mig = nullptr;
    if (device == nullptr) {
      mig = sim->find_mig(handle);
      if (mig == nullptr || !mig->spec.alive(sim->now())) return NVML_ERROR_INVALID_ARGUMENT;
      device = &sim->device(mig->gpu);
    }
    double t = sim->now();
    if (const nvmlReturn_t r = apply_faults(lock, function, device->index, sim, t); r != NVML_SUCCESS) return r;
    if (mig != nullptr && !mig->spec.alive(t)) return NVML_ERROR_INVALID_ARGUMENT;  // ended during a slow call
    return body(*sim, *device, mig, t);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// A call about one full GPU. body(Simulator&, SimDevice&, double t) -> nvmlReturn_t. A MIG device's
// handle answers NOT_SUPPORTED (the driver's answer to a query that has no per-instance meaning).
template <class Body>
nvmlReturn_t device_call(std::string_view function, nvmlDevice_t handle, Body&& body) noexcept {
  return any_device_call(function, handle, [&](Simulator& sim, SimDevice& d, MigDevice* mig, double t) -> nvmlReturn_t {
    if (mig != nullptr) return NVML_ERROR_NOT_SUPPORTED;
    return body(sim, d, t);
  });
}

// A call about a GPU instance (nvmlGpuInstance_t). body(Simulator&, MigDevice&, double t) -> nvmlReturn_t.
template <class Body>
nvmlReturn_t gpu_instance_call(std::string_view function, nvmlGpuInstance_t handle, Body&& body) noexcept {
  try {
    CallCharge charge;
    LibraryState& lib = library();
    std::unique_lock lock(lib.mutex);
    Simulator* sim = lib.sim.get();
    if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
    MigDevice* mig = sim->find_gpu_instance(handle);
    if (mig == nullptr || !mig->spec.alive(sim->now())) return NVML_ERROR_INVALID_ARGUMENT;
    double t = sim->now();
    if (const nvmlReturn_t r = apply_faults(lock, function, mig->gpu, sim, t); r != NVML_SUCCESS) return r;
    if (!mig->spec.alive(t)) return NVML_ERROR_INVALID_ARGUMENT;
    return body(*sim, *mig, t);
  } catch (...) {
    return NVML_ERROR_UNKNOWN;
  }
}

// Copies `text` into a caller's buffer the way NVML does: INSUFFICIENT_SIZE unless it fits whole.
nvmlReturn_t copy_string(std::string_view text, char* buffer, unsigned int length);

}  // namespace gpuscope::sim
