// The simulated node between nvmlInit and the last nvmlShutdown: the scenario, its clock, the GPUs
// and their physics, processes, health counters, faults, event sets and GPM samples.
#pragma once

#include <algorithm>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/event_sets.h"
#include "sim/faults.h"
#include "sim/gpu_physics.h"
#include "sim/identity.h"
#include "sim/mig.h"
#include "sim/process_table.h"
#include "sim/scenario.h"
#include "sim/sim_clock.h"
#include "sim/sysfs_tree.h"

namespace gpuscope::sim {

struct SimDevice {
  unsigned index;
  const GpuSpec& spec;
  const GpuModel& model;
  GpuIdentity identity;
  GpuPhysics physics;
};

// A MIG device: one GPU instance and the compute instance covering it, over the instance's life. Its
// address is its nvmlDevice_t (never a SimDevice's, so a full-GPU lookup does not find it); a handle
// kept past the instance's end is stale.
struct MigDevice {
  unsigned gpu;
  const MigInstanceSpec& spec;
  std::string uuid;
  std::string name;  // "NVIDIA H100 80GB HBM3 MIG 3g.40gb"
  MigMeter meter;
  char gpu_instance_anchor = 0;  // its GPU instance's nvmlGpuInstance_t is this member's address
};

struct RetiredPage {
  int cause;  // nvmlPageRetirementCause_t
  unsigned long long address;
  double at_s = 0;  // scenario time of the ECC event that retired it
};

// ECC and memory-repair state of one GPU at a time, from the scenario's events so far.
struct HealthCounts {
  unsigned long long sbe = 0, dbe = 0;  // volatile = aggregate: the node's driver loaded at t = 0
  unsigned remapped_correctable = 0, remapped_uncorrectable = 0;
  bool remap_pending = false, remap_failure = false;
  std::vector<RetiredPage> retired_pages;
};

// What a GPM sample holds: the GPU, when it was taken, and the integrals of every metric then.
struct GpmSample {
  bool taken = false;
  unsigned gpu = 0;
  double t = 0;
  std::array<double, kMetricCount> integral{};
  std::array<double, kMetricCount> instant{};
  const MigDevice* mig = nullptr;  // a MIG instance's sample; null for the whole GPU
};

class Simulator {
 public:
  struct InitFailure {
    // What is at fault: the simulated driver's state (a real driver fails the same way), or the
    // simulator's input, which gpuscopeSimGetInitFailure tells a client that knows the simulator.
    enum class Source { kDriver, kScenario, kEnvironment };
    nvmlReturn_t code;
    std::string message;  // "<file>:<line>: <what>" or "<VARIABLE>: <what>"; empty when there is nothing to tell
    Source source = Source::kDriver;
  };
  // Loads env GPUSCOPE_SIM_SCENARIO (or the built-in scenario), env GPUSCOPE_SIM_TIME and env
  // GPUSCOPE_SIM_COST_PROFILE (replaces the scenario's cost_profile).
  static std::expected<std::unique_ptr<Simulator>, InitFailure> create();

  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Scenario& scenario() const { return scenario_; }
  SimClock& clock() { return clock_; }
  // Scenario time now; a virtual clock set before the scenario's start reads as its start.
  double now() const { return std::max(0.0, clock_.t()); }

  unsigned device_count() const { return static_cast<unsigned>(devices_.size()); }
  SimDevice& device(unsigned index) { return *devices_.at(index); }
  SimDevice* find(nvmlDevice_t handle);
  static nvmlDevice_t handle(SimDevice& d) { return reinterpret_cast<nvmlDevice_t>(&d); }

  // MIG devices, live or stale (nullptr: not a MIG handle of this simulator).
  MigDevice* find_mig(nvmlDevice_t handle);
  MigDevice* find_gpu_instance(nvmlGpuInstance_t handle);
  static nvmlDevice_t handle(MigDevice& m) { return reinterpret_cast<nvmlDevice_t>(&m); }
  static nvmlGpuInstance_t gpu_instance_handle(MigDevice& m) {
    return reinterpret_cast<nvmlGpuInstance_t>(&m.gpu_instance_anchor);
  }
  // The MIG devices of `gpu` alive at t, by GPU instance id (the driver's MIG device index order here).
  std::vector<MigDevice*> mig_devices(unsigned gpu, double t);
  MigDevice* mig_device(unsigned gpu, unsigned gpu_instance_id, double t);

  FaultBook& faults() { return faults_; }
  // What each call costs the caller: the profile with the scenario's call_costs entries over it.
  const CallCostTable& costs() const { return costs_; }
  // The processes on a GPU at t, with those a fault added.
  std::vector<GpuProcess> processes(unsigned gpu, double t) const;
  std::optional<std::string_view> process_name(unsigned pid, double t) const;
  // The scenario's user of a process (nullopt: no such pid, or it names none).
  std::optional<std::string_view> process_user(unsigned pid) const;

  HealthCounts health(unsigned gpu, double t) const;

  nvmlEventSet_t create_event_set(double t);
  EventSet* find(nvmlEventSet_t handle);
  bool free_event_set(nvmlEventSet_t handle);
  std::span<const DeliverableEvent> events() const { return events_; }

  // The scenario's fabric as a sysfs tree (made on the first call, removed with the simulator), its
  // counters brought to scenario time `t`; its root. NOT_SUPPORTED-worthy (nullopt) without `fabric:`.
  std::optional<std::expected<std::string, std::string>> update_sysfs(double t);

  nvmlGpmSample_t alloc_gpm_sample();
  GpmSample* find(nvmlGpmSample_t handle);
  bool free_gpm_sample(nvmlGpmSample_t handle);

 private:
  Simulator(Scenario scenario, SimClock clock);

  Scenario scenario_;
  SimClock clock_;
  std::vector<std::unique_ptr<SimDevice>> devices_;
  std::vector<std::unique_ptr<MigDevice>> mig_devices_;
  FaultBook faults_;
  CallCostTable costs_;
  ProcessTable processes_;
  std::vector<DeliverableEvent> events_;
  std::unordered_map<nvmlEventSet_t, std::unique_ptr<EventSet>> event_sets_;
  std::unordered_map<nvmlGpmSample_t, std::unique_ptr<GpmSample>> gpm_samples_;
  std::unique_ptr<SysfsTree> sysfs_;
};

}  // namespace gpuscope::sim
