#include "sim/simulator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "sim/noise.h"
#include "sim/scenario_parser.h"

namespace gpuscope::sim {
namespace {

std::vector<PowerCapWindow> power_caps(const Scenario& s, unsigned gpu) {
  std::vector<PowerCapWindow> out;
  for (const ScenarioEvent& e : s.events) {
    if (e.kind == EventKind::kPowerCap && e.gpu == gpu) out.push_back({e.at_s, e.at_s + e.duration_s, e.limit_w});
  }
  return out;
}

std::vector<ContextWindow> contexts(const Scenario& s, unsigned gpu) {
  std::vector<ContextWindow> out;
  for (const ProcessSpec& p : s.processes) {
    if (std::find(p.gpus.begin(), p.gpus.end(), gpu) == p.gpus.end()) continue;
    if (!p.gpu_instance) {
      out.push_back({p.start_s, p.end_s});
      continue;
    }
    // A process in a MIG instance holds its context while both live.
    for (const MigInstanceSpec& inst : s.gpus.at(gpu).mig_instances) {
      const double from = std::max(p.start_s, inst.from_s);
      const double until = std::min(p.end_s, inst.until_s);
      if (inst.id == *p.gpu_instance && from < until) out.push_back({from, until});
    }
  }
  return out;
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

}  // namespace

std::expected<std::unique_ptr<Simulator>, Simulator::InitFailure> Simulator::create() {
  const std::optional<std::string> path = env("GPUSCOPE_SIM_SCENARIO");
  auto scenario = path ? load_scenario_file(*path) : parse_scenario(builtin_scenario_yaml(), kBuiltinScenarioSource);
  if (!scenario) return std::unexpected(InitFailure{NVML_ERROR_UNKNOWN, scenario.error(), InitFailure::Source::kScenario});
  if (const auto seed = env("GPUSCOPE_SIM_SEED")) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(seed->c_str(), &end, 10);
    if (errno != 0 || end != seed->c_str() + seed->size() || (*seed)[0] == '-') {
      return std::unexpected(InitFailure{NVML_ERROR_UNKNOWN, "GPUSCOPE_SIM_SEED: '" + *seed + "' is not a seed",
                                         InitFailure::Source::kEnvironment});
    }
    scenario->seed = v;
  }
  if (const auto profile = env("GPUSCOPE_SIM_COST_PROFILE")) {
    if (!cost_profile(*profile)) {
      return std::unexpected(InitFailure{NVML_ERROR_UNKNOWN,
                                         "GPUSCOPE_SIM_COST_PROFILE: '" + *profile + "' is not a cost profile (known: " +
                                             cost_profile_names() + ")",
                                         InitFailure::Source::kEnvironment});
    }
    scenario->cost_profile = *profile;
  }
  if (!scenario->node.driver_loaded) return std::unexpected(InitFailure{NVML_ERROR_DRIVER_NOT_LOADED, ""});

  SimClock clock = SimClock::real();
  if (const auto t = env("GPUSCOPE_SIM_TIME")) {
    char* end = nullptr;
    errno = 0;
    const double seconds = std::strtod(t->c_str(), &end);
    if (errno != 0 || end != t->c_str() + t->size() || !std::isfinite(seconds)) {
      return std::unexpected(InitFailure{NVML_ERROR_UNKNOWN, "GPUSCOPE_SIM_TIME: '" + *t + "' is not a number of seconds",
                                         InitFailure::Source::kEnvironment});
    }
    if (seconds < 0 || seconds > kMaxScenarioSeconds) {
      return std::unexpected(InitFailure{NVML_ERROR_UNKNOWN,
                                         "GPUSCOPE_SIM_TIME: '" + *t + "' is outside 0 to 31622400 seconds (366 days)",
                                         InitFailure::Source::kEnvironment});
    }
    clock = SimClock::frozen(scenario->start_unix_ns.value_or(kDefaultVirtualEpochNs), seconds);
  }
  return std::unique_ptr<Simulator>(new Simulator(std::move(*scenario), clock));
}

Simulator::Simulator(Scenario scenario, SimClock clock)
    : scenario_(std::move(scenario)),
      clock_(clock),
      faults_(scenario_.faults),
      costs_(cost_profile(scenario_.cost_profile).value_or(CallCostTable{})),
      processes_(scenario_),
      events_(deliverable_events(scenario_)) {
  for (const auto& [function, cost] : scenario_.call_cost_overrides.functions) costs_.functions[function] = cost;
  for (const auto& [id, cost] : scenario_.call_cost_overrides.fields) costs_.fields[id] = cost;
  for (unsigned i = 0; i < scenario_.gpus.size(); ++i) {
    const GpuSpec& spec = scenario_.gpus[i];
    devices_.push_back(std::unique_ptr<SimDevice>(new SimDevice{
        i, spec, *spec.model, make_identity(scenario_.seed, i, *spec.model),
        GpuPhysics(spec, power_caps(scenario_, i), contexts(scenario_, i), scenario_.seed, i)}));
    const double link = pcie_link_mibps(spec.pcie_gen, spec.pcie_width);
    for (const MigInstanceSpec& inst : spec.mig_instances) {
      mig_devices_.push_back(std::unique_ptr<MigDevice>(new MigDevice{
          i, inst, mig_uuid(devices_.back()->identity.uuid, inst),
          std::string(spec.model->name) + " MIG " + std::string(inst.profile->name),
          MigMeter(inst, *spec.model, link, scenario_.seed, i)}));
    }
  }
}

MigDevice* Simulator::find_mig(nvmlDevice_t handle) {
  for (auto& m : mig_devices_) {
    if (Simulator::handle(*m) == handle) return m.get();
  }
  return nullptr;
}

MigDevice* Simulator::find_gpu_instance(nvmlGpuInstance_t handle) {
  for (auto& m : mig_devices_) {
    if (gpu_instance_handle(*m) == handle) return m.get();
  }
  return nullptr;
}

std::vector<MigDevice*> Simulator::mig_devices(unsigned gpu, double t) {
  std::vector<MigDevice*> out;
  for (auto& m : mig_devices_) {
    if (m->gpu == gpu && m->spec.alive(t)) out.push_back(m.get());
  }
  std::sort(out.begin(), out.end(), [](const MigDevice* a, const MigDevice* b) { return a->spec.id < b->spec.id; });
  return out;
}

MigDevice* Simulator::mig_device(unsigned gpu, unsigned gpu_instance_id, double t) {
  for (auto& m : mig_devices_) {
    if (m->gpu == gpu && m->spec.id == gpu_instance_id && m->spec.alive(t)) return m.get();
  }
  return nullptr;
}

SimDevice* Simulator::find(nvmlDevice_t handle) {
  for (auto& d : devices_) {
    if (Simulator::handle(*d) == handle) return d.get();
  }
  return nullptr;
}

std::vector<GpuProcess> Simulator::processes(unsigned gpu, double t) const {
  return processes_.on_gpu(gpu, std::max(0.0, t), faults_.extra_processes(gpu, t));
}

std::optional<std::string_view> Simulator::process_name(unsigned pid, double t) const {
  if (auto name = processes_.name_of(pid)) return name;
  for (unsigned gpu = 0; gpu < device_count(); ++gpu) {
    const unsigned extra = faults_.extra_processes(gpu, t);
    for (unsigned i = 0; i < extra; ++i) {
      if (ProcessTable::extra_pid(gpu, i) == pid) return ProcessTable::kExtraName;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> Simulator::process_user(unsigned pid) const {
  auto user = processes_.user_of(pid);
  if (!user || user->empty()) return std::nullopt;
  return user;
}

HealthCounts Simulator::health(unsigned gpu, double t) const {
  HealthCounts h;
  const GpuModel& model = *scenario_.gpus.at(gpu).model;
  const Noise noise(scenario_.seed, gpu);
  std::uint64_t page = 0;
  const auto retire = [&](int cause, double at_s) {
    // 4 KiB pages somewhere in the frame buffer; the address only has to be stable.
    const std::uint64_t pages = model.memory_mib * 256;
    h.retired_pages.push_back({cause, (noise.bits(Signal::kRetiredPage, page++) % pages) * 4096, at_s});
  };
  for (const ScenarioEvent& e : scenario_.events) {
    if (e.gpu != gpu || e.at_s > t) continue;
    switch (e.kind) {
      case EventKind::kSingleBitEcc:
        h.sbe += e.count;
        if (model.has_page_retirement() && e.count >= 2) retire(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, e.at_s);
        break;
      case EventKind::kDoubleBitEcc:
        h.dbe += e.count;
        if (model.has_page_retirement()) retire(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, e.at_s);
        break;
      case EventKind::kRowRemap:
        switch (e.remap) {
          case RowRemapKind::kCorrectable:
            ++h.remapped_correctable;
            break;
          case RowRemapKind::kUncorrectable:
            ++h.remapped_uncorrectable;
            break;
          case RowRemapKind::kPending:
            h.remap_pending = true;
            break;
          case RowRemapKind::kFailure:
            h.remap_failure = true;
            break;
        }
        break;
      case EventKind::kXid:
      case EventKind::kPowerCap:
        break;
    }
  }
  return h;
}

nvmlEventSet_t Simulator::create_event_set(double t) {
  auto set = std::make_unique<EventSet>(events_, t, devices_.size());
  const auto handle = reinterpret_cast<nvmlEventSet_t>(set.get());
  event_sets_.emplace(handle, std::move(set));
  return handle;
}

EventSet* Simulator::find(nvmlEventSet_t handle) {
  const auto it = event_sets_.find(handle);
  return it == event_sets_.end() ? nullptr : it->second.get();
}

bool Simulator::free_event_set(nvmlEventSet_t handle) { return event_sets_.erase(handle) == 1; }

std::optional<std::expected<std::string, std::string>> Simulator::update_sysfs(double t) {
  if (!scenario_.fabric) return std::nullopt;
  if (!sysfs_) {
    std::vector<GpuIdentity> ids;
    for (const auto& d : devices_) ids.push_back(d->identity);
    auto made = SysfsTree::create(scenario_, ids);
    if (!made) return std::unexpected(made.error());
    sysfs_ = std::move(*made);
  }
  if (auto written = sysfs_->write_at(t); !written) return std::unexpected(written.error());
  return sysfs_->root();
}

nvmlGpmSample_t Simulator::alloc_gpm_sample() {
  auto sample = std::make_unique<GpmSample>();
  const auto handle = reinterpret_cast<nvmlGpmSample_t>(sample.get());
  gpm_samples_.emplace(handle, std::move(sample));
  return handle;
}

GpmSample* Simulator::find(nvmlGpmSample_t handle) {
  const auto it = gpm_samples_.find(handle);
  return it == gpm_samples_.end() ? nullptr : it->second.get();
}

bool Simulator::free_gpm_sample(nvmlGpmSample_t handle) { return gpm_samples_.erase(handle) == 1; }

}  // namespace gpuscope::sim
