// The scenario a simulated node plays: its GPUs, what runs on them over time, health events and
// injected driver faults. Parsed from YAML (scenario_parser.h); everything else reads only this.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/call_costs.h"
#include "sim/gpu_catalog.h"
#include "sim/mig_profiles.h"

namespace gpuscope::sim {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

enum class Profile {
  kIdle,
  kTraining,
  kDataStarved,
  kMemoryBound,
  kNoTensor,
  kSmallKernels,
  kInferenceBursty,
  kThermalRunaway,
  kMemoryLeak,
  kStalled,
  kStraggler,
  kGemm,
  kH2dCopy,
  kCollectiveWait,
};
inline constexpr std::array<std::string_view, 14> kProfileNames{
    "idle",        "training",    "data_starved", "memory_bound", "no_tensor", "small_kernels", "inference_bursty",
    "thermal_runaway", "memory_leak", "stalled",   "straggler",    "gemm",      "h2d_copy", "collective_wait"};
inline std::string_view profile_name(Profile p) { return kProfileNames[static_cast<std::size_t>(p)]; }

// data_starved: what the GPU waits for between compute bursts.
enum class StarvedSource {
  kPcie,  // data loading: the next batch streams in over PCIe while the SMs idle
  kCpu,   // CPU-side preprocessing: nothing moves while the SMs idle
};

// A profile and its knobs; 0 means "the profile's default".
struct WorkloadSpec {
  Profile profile = Profile::kIdle;
  double period_s = 0;  // data_starved: load/compute cycle; inference_bursty: mean gap between bursts
  double slowdown = 0;  // straggler: clock factor in (0, 1]
  double ramp_s = 0;    // thermal_runaway: time for the cooling to lose half its capacity
  double level = 1.0;   // scales the activity of busy profiles, in (0, 1.2]
  StarvedSource source = StarvedSource::kPcie;  // data_starved only
};

// From `at_s` on (scenario seconds) the GPU runs `spec`, until the next phase.
struct Phase {
  double at_s = 0;
  WorkloadSpec spec;
};

// One GPU instance of a MIG layout, with the one compute instance (id 0) that covers it, over its
// life: from the layout that creates it until one that destroys it (or turns MIG off).
struct MigInstanceSpec {
  const MigProfile* profile = nullptr;
  unsigned id = 0;     // GPU instance id
  unsigned start = 0;  // placement: its first memory slice
  double from_s = 0;
  double until_s = kForever;
  std::vector<Phase> phases;  // what runs inside it, scenario time; phases[0].at_s == from_s

  bool alive(double t) const { return t >= from_s && t < until_s; }
};

// MIG mode from `at_s` on, until the next change.
struct MigModeChange {
  double at_s = 0;
  bool enabled = false;
};

struct GpuSpec {
  const GpuModel* model = nullptr;
  double power_limit_w = 0;  // configured limit (nvmlDeviceGetPowerManagementLimit)
  unsigned pcie_gen = 0;     // current link generation while busy
  unsigned pcie_width = 0;
  std::vector<MigModeChange> mig_modes;         // sorted by at_s; empty: MIG off throughout
  std::vector<MigInstanceSpec> mig_instances;  // every GPU instance the scenario creates, by creation time
  bool nvlink = true;  // false: the model's NVLink is absent (an SXM board passed through to a VM alone)
  std::vector<Phase> phases;  // sorted by at_s; phases[0].at_s == 0 (while MIG is off)

  bool mig_enabled_at(double t) const {
    bool on = false;
    for (const MigModeChange& m : mig_modes) {
      if (m.at_s > t) break;
      on = m.enabled;
    }
    return on;
  }
};

enum class ProcessType { kCompute, kGraphics };

struct ProcessSpec {
  unsigned pid = 0;
  std::string name;
  std::string user;  // its owner as /proc would say (the simulated pids have no /proc entry); empty: none
  std::vector<unsigned> gpus;
  std::optional<unsigned> gpu_instance;  // MIG: the GPU instance (id) of its one GPU it runs in
  double memory_bytes = 0;  // on each of its GPUs
  ProcessType type = ProcessType::kCompute;
  double start_s = 0;
  double end_s = kForever;
  double leak_bytes_per_s = 0;
};

enum class EventKind { kXid, kSingleBitEcc, kDoubleBitEcc, kRowRemap, kPowerCap };
enum class RowRemapKind { kCorrectable, kUncorrectable, kPending, kFailure };

struct ScenarioEvent {
  double at_s = 0;
  unsigned gpu = 0;
  EventKind kind = EventKind::kXid;
  unsigned long long xid = 0;
  unsigned count = 1;  // ECC errors in this event
  RowRemapKind remap = RowRemapKind::kCorrectable;
  double limit_w = 0;  // power cap
  double duration_s = kForever;
};

enum class FaultType { kError, kSlow, kGpuLost, kProcessListGrows };

struct FaultSpec {
  FaultType type = FaultType::kError;
  std::string function = "*";  // an exported symbol, or "*" for every function but init/shutdown/errorString
  std::optional<unsigned> gpu;  // empty: every GPU (and calls that name no GPU)
  int error = 999;              // nvmlReturn_t
  double delay_s = 0;
  double at_s = 0;
  double end_s = kForever;
  unsigned extra = 1;  // process_list_grows: processes that appear after each count probe
  unsigned times = 1;  // process_list_grows: how many probes see the list grow
};

// The node's fabric (`fabric:`): RDMA ports the simulator lays out as a sysfs tree (sim/sysfs_tree.h)
// whose counters follow the scenario's time, read by the agent's unchanged fabric collector.
// What a port does from `at_s` on, until its next phase: rates per second.
struct FabricPhase {
  double at_s = 0;
  double transmit_bytes = 0;  // bytes/s sent (and, unless `receive` says otherwise, received)
  double receive_bytes = 0;
  double symbol_errors = 0;   // counters/symbol_error
  double link_error_recovery = 0;
  double receive_errors = 0;     // counters/port_rcv_errors
  double transmit_discards = 0;  // counters/port_xmit_discards
  double receive_drops = 0;      // hw_counters/out_of_buffer
};

struct FabricPortSpec {
  std::string device;  // mlx5_0
  unsigned port = 1;
  std::vector<unsigned> gpus;  // behind the same PCIe switch
  std::vector<FabricPhase> phases;   // sorted by at_s; phases[0].at_s == 0
  std::vector<double> link_downs_s;  // each: link_downed + 1, the port down for kSimLinkDownSeconds
};

struct FabricSpec {
  std::string link_layer = "InfiniBand";  // or Ethernet (RoCE)
  std::string rate = "400 Gb/sec (4X NDR)";
  std::vector<FabricPortSpec> ports;
};

enum class DriverProfile { kCurrent, kR535 };

struct NodeSpec {
  std::string hostname = "sim-node";
  std::string driver_version = "580.159.04";
  int cuda_driver_version = 13000;
  DriverProfile driver_profile = DriverProfile::kCurrent;
  bool driver_loaded = true;
  bool passthrough = false;  // the GPUs are passed through to a VM (nvmlDeviceGetVirtualizationMode)
};

struct Scenario {
  std::string source;  // file path, or "<built-in>"
  std::string description;
  std::uint64_t seed = 42;
  std::optional<std::int64_t> start_unix_ns;
  NodeSpec node;
  std::vector<GpuSpec> gpus;
  std::vector<ProcessSpec> processes;
  std::vector<ScenarioEvent> events;  // sorted by time (stable)
  std::vector<FaultSpec> faults;
  std::optional<FabricSpec> fabric;
  // What each call costs: a built-in profile (`cost_profile:`, env GPUSCOPE_SIM_COST_PROFILE wins),
  // then `call_costs:` entries replacing the profile's.
  std::string cost_profile = "none";
  CallCostTable call_cost_overrides;
};

}  // namespace gpuscope::sim
