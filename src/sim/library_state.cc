#include "sim/library_state.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuscope::sim {

LibraryState& library() {
  // A static object, not a leaked heap one: dlclose() runs its destructor, so a client that loads
  // and unloads the library repeatedly does not leak the state each time.
  static LibraryState state;
  return state;
}

nvmlReturn_t apply_faults(std::unique_lock<std::mutex>& lock, std::string_view function, std::optional<unsigned> gpu,
                          Simulator*& sim, double& t) {
  LibraryState& state = library();
  if (auto it = state.calls.find(function); it != state.calls.end()) {
    ++it->second;
  } else {
    state.calls.emplace(std::string(function), 1);
  }
  FaultDecision d = sim->faults().decide(function, gpu, t);
  if (d.delay_s > 0) {
    // A slow driver call: other threads keep going meanwhile, as they would with a real driver.
    LibraryState& lib = library();
    const std::uint64_t generation = lib.generation;
    lock.unlock();
    std::this_thread::sleep_for(std::chrono::duration<double>(d.delay_s));
    lock.lock();
    if (lib.generation != generation || !lib.sim) return NVML_ERROR_UNINITIALIZED;
    sim = lib.sim.get();
    t = sim->now();
    d = sim->faults().decide(function, gpu, t);
  }
  if (d.lost) return NVML_ERROR_GPU_IS_LOST;
  if (d.error != 0) return static_cast<nvmlReturn_t>(d.error);
  CallCharge::add(sim->costs().call(function));
  return NVML_SUCCESS;
}

void write_call_counts(const LibraryState& state) {
  const char* path = std::getenv("GPUSCOPE_SIM_CALL_COUNTS");
  if (path == nullptr || *path == '\0') return;
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr) return;
  for (const auto& [function, count] : state.calls) std::fprintf(f, "%s\t%llu\n", function.c_str(), count);
  std::fclose(f);
}

nvmlReturn_t copy_string(std::string_view text, char* buffer, unsigned int length) {
  if (buffer == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buffer, text.data(), text.size());
  buffer[text.size()] = '\0';
  return NVML_SUCCESS;
}

}  // namespace gpuscope::sim
