// CostMeter: the agent's running cost counters, per GPU and per process, added up reading by reading
// with the same arithmetic (cost_interval.h) the offline report (gpuscope cost) applies to the recorded
// history, so a fleet summing the live counters and a report over the history see the same dollars.
// Pure: it is fed readings and recorded values, and holds no store, no NVML and no clock.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "analysis/cost_interval.h"

namespace gpuscope::analysis {

// Who a process is, as its counter series names it: the same pid under another name or in another
// container is another process (pids are reused).
struct ProcessKey {
  unsigned pid = 0;
  std::string name;
  std::string container_id;
  auto operator<=>(const ProcessKey&) const = default;
};

// One process on a GPU at a reading: who it is and what it used (its share of the GPU's interval).
struct MeteredProcess {
  ProcessKey key;
  ProcessUse use;
  std::optional<unsigned> gpu_instance_id{};  // MIG: the GPU instance it runs in (its share is that instance's)
};

// A MIG GPU instance as its cost counters name it: another holder (pod) or another profile under the
// same ID is another instance, whose counters start at 0.
struct MigInstanceKey {
  unsigned gpu_instance_id = 0;
  std::string profile;  // "3g.40gb"
  std::string pod, namespace_name, container;  // --kubernetes: who holds it (empty: nobody)
  auto operator<=>(const MigInstanceKey&) const = default;
};

// One GPU instance of a GPU in MIG mode at a reading (one per GPU instance, whatever its compute instances).
struct MeteredMigInstance {
  MigInstanceKey key;
  unsigned slices = 0;                 // its compute slices, of the GPU's mig_total_slices
  std::optional<double> gr_active;     // its own DCGM_FI_PROF_GR_ENGINE_ACTIVE, 0-1
  std::optional<double> sm_active;     // its own DCGM_FI_PROF_SM_ACTIVE, 0-1
};

// One GPU at one reading, as the meter takes it.
struct MeteredGpu {
  std::string uuid;
  CostReading reading;  // its t_ms is set by update()
  std::vector<MeteredProcess> processes;  // one per pid
  // False when the process list could not be read: the interval is the GPU's alone, and the processes'
  // counters wait (they are forgotten only after a gap longer than the rules' max_gap_ms).
  bool processes_read = true;
  // MIG mode with GPU instances: the GPU's interval is split among them by slices (mig_cost.h), the
  // slices none holds stay the GPU's own as unallocated capacity. Empty: the GPU is paid as a whole.
  std::vector<MeteredMigInstance> mig_instances;
  unsigned mig_total_slices = 7;
};

// What an earlier run recorded for one GPU, to continue its counters from. Absent values were not
// recorded (that counter starts at 0).
struct CostSeed {
  std::string uuid;
  // The last recorded reading, given only when it is recent enough for the next reading to bill the
  // time since it (within max_gap_ms of the start); the meter checks the gap again at the next reading.
  std::optional<CostReading> last_reading;
  std::optional<double> dollars;
  std::optional<double> idle_dollars;
  std::optional<double> unused_dollars;
  std::optional<double> energy_joules;
  std::optional<double> energy_dollars;
  struct Process {
    ProcessKey key;
    double dollars = 0;
    std::int64_t last_seen_ms = 0;  // its last recorded sample
  };
  std::vector<Process> processes;
  // MIG instances' dollar counters as last recorded (within max_gap_ms: an instance gone longer is gone).
  struct Instance {
    MigInstanceKey key;
    std::optional<double> dollars, idle_dollars, unused_dollars;
    std::int64_t last_seen_ms = 0;  // its last recorded sample
  };
  std::vector<Instance> mig_instances;
};

// One process's running total, as rendered.
struct ProcessCostTotals {
  ProcessKey key;
  CostTotals totals;
  std::optional<double> memory_bytes;  // at the last reading (the exporter keeps the largest, as for its gauges)
  std::optional<unsigned> gpu_instance_id{};  // MIG: charged from this GPU instance's share
};

// One MIG GPU instance's running totals: its slices' share of the GPU's time.
struct MigInstanceCostTotals {
  MigInstanceKey key;
  unsigned slices = 0;
  CostTotals totals;
};

// One GPU's running totals, as rendered.
struct GpuCostTotals {
  std::string uuid;
  CostTotals totals;
  bool priced = false;           // a price at the last reading, or dollars carried over from the history
  bool energy_measured = false;  // an energy counter or power reading seen, or energy carried over
  std::optional<std::int64_t> last_t_ms;  // the last reading the totals include
  std::vector<ProcessCostTotals> processes;     // the processes of the last reading, in its order
  // MIG: the GPU instances of the last reading. `totals` is then what none of them holds (unallocated
  // slices; the whole GPU at readings outside MIG mode) plus the GPU's whole energy (energy is the GPU's).
  std::vector<MigInstanceCostTotals> mig_instances;
  unsigned mig_unallocated_slices = 0;  // at the last reading
};

class CostMeter {
 public:
  explicit CostMeter(CostRules rules = {});

  // Continues a GPU's counters from recorded values; called before its first update (a later call
  // replaces what the GPU counted so far).
  void seed(const CostSeed& seed);
  // Adds each GPU's interval since its previous reading (none for its first reading, or after a gap
  // longer than max_gap_ms), split among the processes of this reading. Called on one thread.
  void update(std::int64_t t_ms, std::span<const MeteredGpu> gpus);
  // The energy price from the next update on (a reloaded catalog); energy already counted keeps its price.
  void set_energy_usd_per_kwh(std::optional<double> usd_per_kwh);

  // The totals after the latest update or seed, by UUID: an immutable copy, cheap to take on any
  // thread (a scrape), never waiting for an update.
  std::shared_ptr<const std::vector<GpuCostTotals>> totals() const { return published_.load(std::memory_order_acquire); }

 private:
  struct ProcessState {
    CostTotals totals;
    std::int64_t last_seen_ms = 0;
    std::optional<double> memory_bytes;
    std::optional<unsigned> gpu_instance_id;
  };
  struct InstanceState {
    CostTotals totals;
    unsigned slices = 0;
    std::int64_t last_seen_ms = 0;
  };
  struct GpuState {
    CostTotals totals;
    bool priced = false;
    bool energy_measured = false;
    std::optional<CostReading> last;
    std::optional<std::int64_t> last_t_ms;
    std::map<ProcessKey, ProcessState> processes;
    std::vector<ProcessKey> current;  // the processes of the last reading
    std::map<MigInstanceKey, InstanceState> instances;
    std::vector<MigInstanceKey> current_instances;  // the GPU instances of the last reading
    unsigned unallocated_slices = 0;
  };
  void update_gpu(GpuState& state, const MeteredGpu& gpu, std::int64_t t_ms);
  void publish();  // with mu_ held

  mutable std::mutex mu_;  // update, seed and a reload's energy price
  CostRules rules_;
  std::map<std::string, GpuState> gpus_;
  std::atomic<std::shared_ptr<const std::vector<GpuCostTotals>>> published_;
};

}  // namespace gpuscope::analysis
