#include "sim/scenario_parser.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <set>
#include <sstream>
#include <utility>

#include "model/file_text.h"
#include "model/yaml_error_text.h"
#include "sim/faults.h"
#include "sim/mig_layout.h"
#include "sim/return_codes.h"
#include "sim/scenario_yaml.h"
#include "sim/sim_clock.h"
#include "sim/units.h"

namespace gpuscope::sim {
namespace {

constexpr unsigned kMaxGpus = 64;
constexpr unsigned kMaxPid = 4194304;  // Linux pid_max limit

using namespace scenario_yaml;  // NOLINT(google-build-using-namespace): the parser is made of these

class Parser {
 public:
  Scenario parse(const YAML::Node& root) {
    if (!root.IsDefined() || root.IsNull()) throw ParseFailure{1, "empty scenario"};
    const Map top(root, "the scenario",
                  {"description", "seed", "start", "node", "gpus", "workload", "processes", "events", "faults",
                   "fabric", "cost_profile", "call_costs"});
    if (auto v = top.get("description")) s_.description = scalar(*v, "description");
    if (auto v = top.get("seed")) s_.seed = uinteger(*v, "seed", 0, UINT64_MAX);
    if (auto v = top.get("start")) {
      auto ns = parse_rfc3339(scalar(*v, "start"));
      if (!ns) fail(*v, "start: " + ns.error());
      if (*ns < 0 || *ns >= kLatestStartNs) fail(*v, "start: must lie between 1970 and 2200");
      s_.start_unix_ns = *ns;
    }
    if (auto v = top.get("node")) parse_node(*v);
    parse_gpus(top.require("gpus", "the scenario"));
    parse_workload(top.get("workload"));
    if (auto v = top.get("processes")) parse_processes(*v);
    if (auto v = top.get("events")) parse_events(*v);
    if (auto v = top.get("faults")) parse_faults(*v);
    if (auto v = top.get("fabric")) parse_fabric(*v);
    if (auto v = top.get("cost_profile")) {
      const std::string name = scalar(*v, "cost_profile");
      if (!cost_profile(name)) fail(*v, "unknown cost_profile '" + name + "' (known: " + cost_profile_names() + ")");
      s_.cost_profile = name;
    }
    if (auto v = top.get("call_costs")) parse_call_costs(*v);
    return std::move(s_);
  }

 private:
  unsigned gpu_count() const { return static_cast<unsigned>(s_.gpus.size()); }

  unsigned gpu_index(const YAML::Node& n) {
    const std::string text = scalar(n, "gpu");
    std::uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || ptr != text.data() + text.size() || text.empty()) {
      fail(n, "gpu must be a GPU index, not '" + text + "'");
    }
    if (v >= gpu_count()) {
      fail(n, "gpu " + text + " out of range (the node has " + std::to_string(gpu_count()) + " GPUs, 0-" +
                  std::to_string(gpu_count() - 1) + ")");
    }
    return static_cast<unsigned>(v);
  }

  std::vector<unsigned> all_gpus() const {
    std::vector<unsigned> out(gpu_count());
    for (unsigned i = 0; i < gpu_count(); ++i) out[i] = i;
    return out;
  }

  // `gpu: 3`, `gpus: [0, 1]`, `gpu: all` / `gpus: all`; neither key: every GPU.
  std::vector<unsigned> gpu_selection(const Map& m) {
    const auto one = m.get("gpu");
    const auto many = m.get("gpus");
    if (one && many) fail(*many, "give either 'gpu' or 'gpus', not both");
    if (!one && !many) return all_gpus();
    const YAML::Node& n = one ? *one : *many;
    if (n.IsScalar() && n.Scalar() == "all") return all_gpus();
    if (n.IsScalar()) return {gpu_index(n)};
    if (!n.IsSequence() || n.size() == 0) fail(n, "gpus must be a list of GPU indices, or 'all'");
    std::vector<unsigned> out;
    for (const auto& item : n) {
      const unsigned g = gpu_index(item);
      if (std::find(out.begin(), out.end(), g) != out.end()) fail(item, "gpu " + std::to_string(g) + " listed twice");
      out.push_back(g);
    }
    return out;
  }

  void parse_node(const YAML::Node& n) {
    const Map m(n, "node", {"hostname", "driver_version", "cuda_driver_version", "driver_profile", "driver_loaded",
                                  "virtualization"});
    if (auto v = m.get("hostname")) {
      s_.node.hostname = scalar(*v, "hostname");
      if (s_.node.hostname.empty() || s_.node.hostname.size() > 63) fail(*v, "hostname must be 1-63 characters");
    }
    if (auto v = m.get("driver_version")) {
      s_.node.driver_version = scalar(*v, "driver_version");
      if (s_.node.driver_version.empty() || s_.node.driver_version.size() > 70) {
        fail(*v, "driver_version must be like 550.54.15");
      }
    }
    if (auto v = m.get("cuda_driver_version")) {
      s_.node.cuda_driver_version = static_cast<int>(uinteger(*v, "cuda_driver_version", 1000, 99999));
    }
    if (auto v = m.get("driver_profile")) {
      const std::string p = scalar(*v, "driver_profile");
      if (p == "current") {
        s_.node.driver_profile = DriverProfile::kCurrent;
      } else if (p == "r535") {
        s_.node.driver_profile = DriverProfile::kR535;
      } else {
        fail(*v, "unknown driver_profile '" + p + "' (known: current, r535)");
      }
    }
    if (auto v = m.get("driver_loaded")) s_.node.driver_loaded = boolean(*v, "driver_loaded");
    if (auto v = m.get("virtualization")) {
      const std::string mode = scalar(*v, "virtualization");
      if (mode != "none" && mode != "passthrough") {
        fail(*v, "unknown virtualization '" + mode + "' (known: none, passthrough)");
      }
      s_.node.passthrough = mode == "passthrough";
    }
  }

  const GpuModel* model(const YAML::Node& n) {
    const std::string name = scalar(n, "model");
    const GpuModel* m = find_gpu_model(name);
    if (m == nullptr) fail(n, "unknown model '" + name + "' (known: " + gpu_model_names() + ")");
    return m;
  }

  double power_limit(const YAML::Node& n, const GpuModel& m, std::string_view what) {
    const double w = power(n, what);
    if (w < m.min_limit_w || w > m.tdp_w) {
      std::ostringstream msg;
      msg << what << " " << n.Scalar() << " outside what a " << m.name << " accepts (" << m.min_limit_w << "-"
          << m.tdp_w << " W)";
      fail(n, msg.str());
    }
    return w;
  }

  // A MIG layout from `at` on: `true`/`false` (MIG mode, no instances), or the GPU instances. An
  // instance of a layout before with the same profile (and id, when given) lives on: same handle,
  // UUID and counters; its workload changes only when the entry names one.
  void mig_layout(GpuSpec& g, const YAML::Node& v, double at) {
    const std::string model_name(g.model->name);
    bool enabled = false;
    std::vector<YAML::Node> entries;
    if (v.IsScalar()) {
      enabled = boolean(v, "mig");
    } else if (v.IsSequence()) {
      enabled = true;
      for (const auto& e : v) entries.push_back(e);
    } else {
      fail(v, "mig must be true, false or a list of GPU instances ({profile: 3g.40gb, workload: training})");
    }
    if (enabled && g.model->max_mig_devices == 0) fail(v, "a " + model_name + " has no MIG");
    if (!entries.empty() && mig_profiles(*g.model).empty()) {
      fail(v, "the simulator has no MIG profiles for a " + model_name +
                  " (it has them for NVIDIA H100 80GB HBM3, NVIDIA H200, NVIDIA A100-SXM4-80GB, NVIDIA A100-PCIE-40GB)");
    }
    if (entries.size() > g.model->max_mig_devices) {
      fail(v, "a " + model_name + " has at most " + std::to_string(g.model->max_mig_devices) + " GPU instances");
    }
    std::vector<MigLayoutEntry> layout;
    for (const YAML::Node& e : entries) {
      const Map m(e, "a MIG instance", {"profile", "id", "workload"});
      const YAML::Node pn = m.require("profile", "a MIG instance");
      const std::string name = scalar(pn, "profile");
      MigLayoutEntry entry;
      entry.profile = find_mig_profile(*g.model, name);
      if (entry.profile == nullptr) {
        fail(pn, "unknown MIG profile '" + name + "' for a " + model_name + " (known: " + mig_profile_names(*g.model) + ")");
      }
      if (auto idv = m.get("id")) entry.id = static_cast<unsigned>(uinteger(*idv, "id", 0, 14));
      if (auto w = m.get("workload")) entry.workload = workload_value(*w);
      layout.push_back(entry);
    }
    if (auto applied = apply_mig_layout(g, enabled, layout, at); !applied) {
      fail(entries[applied.error().request], applied.error().message);
    }
  }

  void parse_gpus(const YAML::Node& n) {
    const Map m(n, "gpus", {"count", "model", "power_limit", "overrides"});
    const auto count = static_cast<unsigned>(uinteger(m.require("count", "gpus"), "count", 1, kMaxGpus));
    const GpuModel* default_model = model(m.require("model", "gpus"));
    s_.gpus.resize(count);
    for (GpuSpec& g : s_.gpus) {
      g.model = default_model;
      g.power_limit_w = default_model->tdp_w;
    }
    if (auto v = m.get("power_limit")) {
      for (GpuSpec& g : s_.gpus) g.power_limit_w = power_limit(*v, *g.model, "power_limit");
    }
    if (auto v = m.get("overrides")) {
      if (!v->IsSequence()) fail(*v, "overrides must be a list");
      for (const auto& item : *v) {
        const Map o(item, "a gpu override",
                    {"gpu", "model", "power_limit", "pcie_gen", "pcie_width", "mig", "mig_timeline", "nvlink"});
        const unsigned idx = gpu_index(o.require("gpu", "a gpu override"));
        GpuSpec& g = s_.gpus[idx];
        if (auto mv = o.get("model")) {
          g.model = model(*mv);
          g.power_limit_w = std::min(g.power_limit_w, g.model->tdp_w);
          g.power_limit_w = std::max(g.power_limit_w, g.model->min_limit_w);
        }
        if (auto pv = o.get("power_limit")) g.power_limit_w = power_limit(*pv, *g.model, "power_limit");
        if (auto pv = o.get("pcie_gen")) g.pcie_gen = static_cast<unsigned>(uinteger(*pv, "pcie_gen", 1, g.model->pcie_gen));
        if (auto pv = o.get("pcie_width")) {
          g.pcie_width = static_cast<unsigned>(uinteger(*pv, "pcie_width", 1, g.model->pcie_width));
          if ((g.pcie_width & (g.pcie_width - 1)) != 0) fail(*pv, "pcie_width must be 1, 2, 4, 8 or 16");
        }
        if (auto pv = o.get("nvlink")) g.nvlink = boolean(*pv, "nvlink");
        if (auto pv = o.get("mig")) mig_layout(g, *pv, 0);
        if (auto pv = o.get("mig_timeline")) {
          if (!pv->IsSequence()) fail(*pv, "mig_timeline must be a list of {at: ..., mig: ...}");
          for (const auto& step : *pv) {
            const Map sm(step, "a mig_timeline entry", {"at", "mig"});
            const YAML::Node at_node = sm.require("at", "a mig_timeline entry");
            const double at = duration(at_node, "at");
            if (!g.mig_modes.empty() && at <= g.mig_modes.back().at_s) fail(at_node, "mig_timeline must go forward in time");
            mig_layout(g, sm.require("mig", "a mig_timeline entry"), at);
          }
        }
      }
    }
    for (GpuSpec& g : s_.gpus) {
      if (g.pcie_gen == 0) g.pcie_gen = g.model->pcie_gen;
      if (g.pcie_width == 0) g.pcie_width = g.model->pcie_width;
    }
  }

  Profile profile(const YAML::Node& n) {
    const std::string name = scalar(n, "profile");
    for (std::size_t i = 0; i < kProfileNames.size(); ++i) {
      if (kProfileNames[i] == name) return static_cast<Profile>(i);
    }
    fail(n, "unknown profile '" + name + "' (known: " + join(kProfileNames) + ")");
  }

  // The knobs of a workload map; `m` has been checked for keys already.
  WorkloadSpec workload_spec(const Map& m, std::string_view where) {
    WorkloadSpec w;
    w.profile = profile(m.require("profile", where));
    if (auto v = m.get("period")) {
      w.period_s = duration(*v, "period");
      if (w.period_s < 2 * kCellSeconds) fail(*v, "period must be at least 2s");
    }
    if (auto v = m.get("slowdown")) w.slowdown = number(*v, "slowdown", 0.05, 1.0);
    if (auto v = m.get("ramp")) {
      w.ramp_s = duration(*v, "ramp");
      if (w.ramp_s <= 0) fail(*v, "ramp must be longer than 0s");
    }
    if (auto v = m.get("level")) w.level = number(*v, "level", 0.05, 1.2);
    if (auto v = m.get("source")) {
      if (w.profile != Profile::kDataStarved) fail(*v, "source applies to the data_starved profile only");
      const std::string src = scalar(*v, "source");
      if (src == "pcie") {
        w.source = StarvedSource::kPcie;
      } else if (src == "cpu") {
        w.source = StarvedSource::kCpu;
      } else {
        fail(*v, "unknown source '" + src + "' (known: pcie, cpu)");
      }
    }
    return w;
  }

  static constexpr double kCellSeconds = 1.0;

  // `training` or {profile: data_starved, period: 15s}.
  WorkloadSpec workload_value(const YAML::Node& n) {
    if (n.IsScalar()) {
      WorkloadSpec w;
      w.profile = profile(n);
      return w;
    }
    const Map m(n, "a workload", {"profile", "period", "slowdown", "ramp", "level", "source"});
    return workload_spec(m, "a workload");
  }

  void parse_workload(const std::optional<YAML::Node>& node) {
    WorkloadSpec fallback;  // idle
    std::vector<WorkloadSpec> initial(gpu_count(), fallback);
    std::optional<Map> m;
    if (node) {
      m.emplace(*node, "workload", std::initializer_list<std::string_view>{"profile", "gpus", "timeline"});
      if (auto v = m->get("profile")) std::fill(initial.begin(), initial.end(), workload_value(*v));
      if (auto v = m->get("gpus")) {
        if (!v->IsMap()) fail(*v, "workload.gpus must map GPU indices to profiles (3: data_starved)");
        for (auto it = v->begin(); it != v->end(); ++it) initial[gpu_index(it->first)] = workload_value(it->second);
      }
    }
    for (unsigned g = 0; g < gpu_count(); ++g) s_.gpus[g].phases.push_back(Phase{0, initial[g]});
    if (!m) return;
    const auto timeline = m->get("timeline");
    if (!timeline) return;
    if (!timeline->IsSequence()) fail(*timeline, "workload.timeline must be a list");
    struct Change {
      double at;
      std::vector<unsigned> gpus;
      WorkloadSpec spec;
    };
    std::vector<Change> changes;
    for (const auto& item : *timeline) {
      const Map e(item, "a timeline entry",
                  {"at", "gpu", "gpus", "profile", "period", "slowdown", "ramp", "level", "source"});
      Change c;
      c.at = duration(e.require("at", "a timeline entry"), "at");
      c.gpus = gpu_selection(e);
      c.spec = workload_spec(e, "a timeline entry");
      changes.push_back(std::move(c));
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.at < b.at; });
    for (const Change& c : changes) {
      for (unsigned g : c.gpus) {
        auto& phases = s_.gpus[g].phases;
        if (phases.back().at_s == c.at) {
          phases.back().spec = c.spec;
        } else {
          phases.push_back(Phase{c.at, c.spec});
        }
      }
    }
  }

  // `instance: <GPU instance id>`: the process runs in that MIG instance of its one GPU (and lives
  // only while the instance does); its memory must fit the instance.
  void process_instance(ProcessSpec& p, const YAML::Node& v) {
    if (p.gpus.size() != 1) fail(v, "a process in a MIG instance runs on one gpu (give 'gpu: N')");
    const auto id = static_cast<unsigned>(uinteger(v, "instance", 0, 14));
    const unsigned gpu = p.gpus.front();
    const GpuSpec& g = s_.gpus[gpu];
    std::string ids;
    const MigInstanceSpec* found = nullptr;
    for (const MigInstanceSpec& inst : g.mig_instances) {
      if (inst.id == id && (found == nullptr || inst.profile->memory_mib < found->profile->memory_mib)) found = &inst;
      if (ids.find(" " + std::to_string(inst.id) + ",") == std::string::npos) ids += " " + std::to_string(inst.id) + ",";
    }
    if (found == nullptr) {
      if (ids.empty()) fail(v, "gpu " + std::to_string(gpu) + " has no MIG instances (instance " + std::to_string(id) + ")");
      ids.pop_back();
      fail(v, "gpu " + std::to_string(gpu) + " has no GPU instance " + std::to_string(id) + " (its ids:" + ids + ")");
    }
    if (p.memory_bytes > static_cast<double>(found->profile->memory_mib) * 1048576.0) {
      fail(v, "the process's memory does not fit GPU instance " + std::to_string(id) + " (" +
                  std::string(found->profile->name) + ")");
    }
    p.gpu_instance = id;
  }

  void parse_processes(const YAML::Node& n) {
    if (!n.IsSequence()) fail(n, "processes must be a list");
    std::set<unsigned> pids;
    for (const auto& item : n) {
      const Map m(item, "a process",
                  {"pid", "name", "user", "gpu", "gpus", "per_gpu", "memory", "type", "start", "end", "leak", "instance"});
      const YAML::Node pid_node = m.require("pid", "a process");
      ProcessSpec p;
      p.pid = static_cast<unsigned>(uinteger(pid_node, "pid", 1, kMaxPid));
      p.name = m.has("name") ? scalar(*m.get("name"), "name") : "python";
      if (p.name.empty() || p.name.size() > 255) fail(item, "a process name must be 1-255 characters");
      if (auto v = m.get("user")) {
        p.user = scalar(*v, "user");
        // A POSIX user name: what a real host's /etc/passwd could hold.
        const bool ok = !p.user.empty() && p.user.size() <= 32 && p.user.front() != '-' &&
                        p.user.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                            std::string::npos;
        if (!ok) fail(*v, "a process user must be 1-32 characters of letters, digits, '.', '_' or '-' (not first)");
      }
      p.gpus = gpu_selection(m);
      p.memory_bytes = size(m.require("memory", "a process"), "memory");
      if (auto v = m.get("instance")) process_instance(p, *v);
      if (auto v = m.get("type")) {
        const std::string t = scalar(*v, "type");
        if (t == "compute") {
          p.type = ProcessType::kCompute;
        } else if (t == "graphics") {
          p.type = ProcessType::kGraphics;
        } else {
          fail(*v, "unknown process type '" + t + "' (known: compute, graphics)");
        }
      }
      if (auto v = m.get("start")) p.start_s = duration(*v, "start");
      if (auto v = m.get("end")) {
        p.end_s = duration(*v, "end");
        if (p.end_s <= p.start_s) fail(*v, "a process must end after it starts");
      }
      if (auto v = m.get("leak")) p.leak_bytes_per_s = rate(*v, "leak");
      const bool per_gpu = m.has("per_gpu") && boolean(*m.get("per_gpu"), "per_gpu");
      std::vector<ProcessSpec> expanded;
      if (per_gpu) {
        // One rank per GPU, as a DDP job starts them: pids pid, pid+1, ...
        for (std::size_t i = 0; i < p.gpus.size(); ++i) {
          ProcessSpec one = p;
          one.pid = p.pid + static_cast<unsigned>(i);
          one.gpus = {p.gpus[i]};
          expanded.push_back(std::move(one));
        }
      } else {
        expanded.push_back(std::move(p));
      }
      for (ProcessSpec& one : expanded) {
        if (one.pid > kMaxPid) fail(pid_node, "pid " + std::to_string(one.pid) + " out of range");
        if (!pids.insert(one.pid).second) fail(pid_node, "pid " + std::to_string(one.pid) + " used twice");
        for (unsigned g : one.gpus) {
          const double capacity = static_cast<double>(s_.gpus[g].model->memory_mib - s_.gpus[g].model->reserved_mib) * 1048576.0;
          if (one.memory_bytes > capacity) {
            fail(m.require("memory", "a process"), "memory " + m.get("memory")->Scalar() + " does not fit gpu " +
                                                       std::to_string(g) + " (" + std::string(s_.gpus[g].model->name) + ")");
          }
        }
        s_.processes.push_back(std::move(one));
      }
    }
  }

  void parse_events(const YAML::Node& n) {
    if (!n.IsSequence()) fail(n, "events must be a list");
    for (const auto& item : n) {
      const Map m(item, "an event", {"at", "gpu", "gpus", "xid", "ecc", "count", "row_remap", "power_cap", "for"});
      ScenarioEvent e;
      e.at_s = duration(m.require("at", "an event"), "at");
      const std::vector<unsigned> gpus = gpu_selection(m);
      int kinds = 0;
      if (auto v = m.get("xid")) {
        ++kinds;
        e.kind = EventKind::kXid;
        e.xid = uinteger(*v, "xid", 1, 1000000);
      }
      if (auto v = m.get("ecc")) {
        ++kinds;
        const std::string k = scalar(*v, "ecc");
        if (k == "single_bit" || k == "sbe") {
          e.kind = EventKind::kSingleBitEcc;
        } else if (k == "double_bit" || k == "dbe") {
          e.kind = EventKind::kDoubleBitEcc;
        } else {
          fail(*v, "unknown ecc kind '" + k + "' (known: single_bit, double_bit)");
        }
        if (auto c = m.get("count")) e.count = static_cast<unsigned>(uinteger(*c, "count", 1, 1000000));
      } else if (auto c = m.get("count")) {
        fail(*c, "count belongs to an ecc event");
      }
      if (auto v = m.get("row_remap")) {
        ++kinds;
        e.kind = EventKind::kRowRemap;
        const std::string k = scalar(*v, "row_remap");
        if (k == "correctable") {
          e.remap = RowRemapKind::kCorrectable;
        } else if (k == "uncorrectable") {
          e.remap = RowRemapKind::kUncorrectable;
        } else if (k == "pending") {
          e.remap = RowRemapKind::kPending;
        } else if (k == "failure") {
          e.remap = RowRemapKind::kFailure;
        } else {
          fail(*v, "unknown row_remap kind '" + k + "' (known: correctable, uncorrectable, pending, failure)");
        }
        for (unsigned g : gpus) {
          if (!s_.gpus[g].model->has_row_remapping()) {
            fail(*v, "gpu " + std::to_string(g) + " (" + std::string(s_.gpus[g].model->name) +
                         ") has no row remapping (Ampere and newer)");
          }
        }
      }
      if (auto v = m.get("power_cap")) {
        ++kinds;
        e.kind = EventKind::kPowerCap;
        e.limit_w = power(*v, "power_cap");
        for (unsigned g : gpus) {
          const GpuModel& model = *s_.gpus[g].model;
          if (e.limit_w < model.min_limit_w || e.limit_w > model.tdp_w) {
            std::ostringstream msg;
            msg << "power_cap " << v->Scalar() << " outside what gpu " << g << " (" << model.name << ") accepts ("
                << model.min_limit_w << "-" << model.tdp_w << " W)";
            fail(*v, msg.str());
          }
        }
      }
      if (auto v = m.get("for")) {
        if (e.kind != EventKind::kPowerCap || kinds != 1) fail(*v, "'for' belongs to a power_cap event");
        e.duration_s = duration(*v, "for");
      }
      if (kinds != 1) fail(item, "an event needs exactly one of xid, ecc, row_remap, power_cap");
      for (unsigned g : gpus) {
        e.gpu = g;
        s_.events.push_back(e);
      }
    }
    std::stable_sort(s_.events.begin(), s_.events.end(),
                     [](const ScenarioEvent& a, const ScenarioEvent& b) { return a.at_s < b.at_s; });
  }

  void parse_faults(const YAML::Node& n) {
    if (!n.IsSequence()) fail(n, "faults must be a list");
    for (const auto& item : n) {
      const Map m(item, "a fault", {"type", "function", "gpu", "error", "delay", "at", "for", "extra", "times"});
      FaultSpec f;
      const YAML::Node type = m.require("type", "a fault");
      const std::string t = scalar(type, "type");
      if (t == "error") {
        f.type = FaultType::kError;
      } else if (t == "slow") {
        f.type = FaultType::kSlow;
      } else if (t == "gpu_lost") {
        f.type = FaultType::kGpuLost;
      } else if (t == "process_list_grows") {
        f.type = FaultType::kProcessListGrows;
      } else {
        fail(type, "unknown fault type '" + t + "' (known: error, slow, gpu_lost, process_list_grows)");
      }
      const auto only_for = [&](std::string_view key, bool allowed, std::string_view types) {
        if (auto v = m.get(key); v && !allowed) {
          fail(*v, "'" + std::string(key) + "' belongs to " + std::string(types) + " faults");
        }
      };
      const bool calls = f.type == FaultType::kError || f.type == FaultType::kSlow;
      only_for("function", calls, "error and slow");
      only_for("error", f.type == FaultType::kError, "error");
      only_for("delay", f.type == FaultType::kSlow, "slow");
      only_for("extra", f.type == FaultType::kProcessListGrows, "process_list_grows");
      only_for("times", f.type == FaultType::kProcessListGrows, "process_list_grows");
      if (auto v = m.get("function")) {
        f.function = scalar(*v, "function");
        if (f.function != "*" && !is_nvml_function(f.function)) {
          fail(*v, "unknown function '" + f.function + "' (an NVML symbol this library exports, or \"*\")");
        }
      }
      if (auto v = m.get("gpu")) {
        if (v->IsScalar() && v->Scalar() == "all") {
          f.gpu.reset();
        } else {
          f.gpu = gpu_index(*v);
        }
      }
      if (f.type == FaultType::kGpuLost && !f.gpu) fail(item, "a gpu_lost fault needs 'gpu'");
      if (f.type == FaultType::kError) {
        const YAML::Node e = m.require("error", "an error fault");
        const std::string name = scalar(e, "error");
        const auto code = nvml_return_from_name(name);
        if (!code || *code == 0) fail(e, "unknown error '" + name + "' (known: " + nvml_error_names() + ", or a number)");
        f.error = *code;
      }
      if (f.type == FaultType::kSlow) {
        f.delay_s = duration(m.require("delay", "a slow fault"), "delay");
        if (f.delay_s > 600) fail(*m.get("delay"), "delay longer than 10m");
      }
      if (auto v = m.get("extra")) f.extra = static_cast<unsigned>(uinteger(*v, "extra", 1, 1000));
      if (auto v = m.get("times")) f.times = static_cast<unsigned>(uinteger(*v, "times", 1, 1000000));
      if (auto v = m.get("at")) f.at_s = duration(*v, "at");
      if (auto v = m.get("for")) f.end_s = f.at_s + duration(*v, "for");
      s_.faults.push_back(std::move(f));
    }
  }

  // What a fabric phase sets; keys not given keep the previous phase's value.
  void fabric_rates(const Map& m, FabricPhase& p) {
    if (auto v = m.get("transmit")) p.transmit_bytes = p.receive_bytes = rate(*v, "transmit");
    if (auto v = m.get("receive")) p.receive_bytes = rate(*v, "receive");
    const auto per_second = [&](std::string_view key, double& out) {
      if (auto v = m.get(key)) out = number(*v, key, 0, 1e9);
    };
    per_second("symbol_errors", p.symbol_errors);
    per_second("link_error_recovery", p.link_error_recovery);
    per_second("receive_errors", p.receive_errors);
    per_second("transmit_discards", p.transmit_discards);
    per_second("receive_drops", p.receive_drops);
  }

  void parse_fabric(const YAML::Node& n) {
    const Map m(n, "fabric", {"link_layer", "rate", "transmit", "receive", "ports"});
    FabricSpec f;
    if (auto v = m.get("link_layer")) {
      f.link_layer = scalar(*v, "link_layer");
      if (f.link_layer != "InfiniBand" && f.link_layer != "Ethernet") {
        fail(*v, "unknown link_layer '" + f.link_layer + "' (known: InfiniBand, Ethernet)");
      }
    }
    if (auto v = m.get("rate")) {
      f.rate = scalar(*v, "rate");
      double gbps = 0;
      const auto [ptr, ec] = std::from_chars(f.rate.data(), f.rate.data() + f.rate.size(), gbps);
      if (ec != std::errc{} || gbps <= 0 || !std::string_view(ptr).starts_with(" Gb/sec")) {
        fail(*v, "rate must read as sysfs writes it, e.g. '400 Gb/sec (4X NDR)', not '" + f.rate + "'");
      }
    }
    FabricPhase base;
    fabric_rates(m, base);
    const YAML::Node ports = m.require("ports", "fabric");
    if (!ports.IsSequence() || ports.size() == 0 || ports.size() > 32) fail(ports, "fabric.ports must list 1-32 ports");
    std::vector<int> switch_of(gpu_count(), -1);  // the port (its first) whose switch each GPU is behind
    for (const auto& item : ports) {
      const Map pm(item, "a fabric port",
                   {"device", "port", "gpus", "transmit", "receive", "symbol_errors", "link_error_recovery",
                    "receive_errors", "transmit_discards", "receive_drops", "timeline", "link_downs"});
      FabricPortSpec p;
      const YAML::Node device = pm.require("device", "a fabric port");
      p.device = scalar(device, "device");
      if (p.device.empty() || p.device.size() > 32 ||
          p.device.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
        fail(device, "a fabric port's device must be 1-32 lowercase letters, digits or '_' (mlx5_0)");
      }
      if (auto v = pm.get("port")) p.port = static_cast<unsigned>(uinteger(*v, "port", 1, 255));
      for (const FabricPortSpec& other : f.ports) {
        if (other.device == p.device && other.port == p.port) fail(device, "port " + p.device + "/" + std::to_string(p.port) + " listed twice");
      }
      if (pm.has("gpus")) p.gpus = gpu_selection(pm);
      std::sort(p.gpus.begin(), p.gpus.end());
      // One PCIe switch per set of GPUs: ports naming the same GPUs share it; a GPU behind two is a typo.
      const int me = static_cast<int>(f.ports.size());
      for (unsigned g : p.gpus) {
        if (g / 8 != p.gpus.front() / 8) fail(*pm.get("gpus"), "the GPUs behind one PCIe switch must be in one PCI domain (0-7, 8-15, ...)");
        const int other = switch_of[g];
        if (other >= 0 && f.ports[static_cast<std::size_t>(other)].gpus != p.gpus) {
          fail(*pm.get("gpus"), "gpu " + std::to_string(g) + " is behind two PCIe switches (ports with other GPU lists)");
        }
        if (other < 0) switch_of[g] = me;
      }
      FabricPhase first = base;
      fabric_rates(pm, first);
      p.phases.push_back(first);
      if (auto v = pm.get("timeline")) {
        if (!v->IsSequence()) fail(*v, "a fabric port's timeline must be a list of {at: ..., ...}");
        for (const auto& step : *v) {
          const Map sm(step, "a fabric port's timeline entry",
                       {"at", "transmit", "receive", "symbol_errors", "link_error_recovery", "receive_errors",
                        "transmit_discards", "receive_drops"});
          FabricPhase ph = p.phases.back();
          ph.at_s = duration(sm.require("at", "a fabric port's timeline entry"), "at");
          if (ph.at_s <= p.phases.back().at_s) fail(step, "a fabric port's timeline must go forward in time");
          fabric_rates(sm, ph);
          p.phases.push_back(ph);
        }
      }
      if (auto v = pm.get("link_downs")) {
        if (!v->IsSequence()) fail(*v, "link_downs must be a list of times (14m)");
        for (const auto& t : *v) p.link_downs_s.push_back(duration(t, "link_downs"));
        std::sort(p.link_downs_s.begin(), p.link_downs_s.end());
      }
      f.ports.push_back(std::move(p));
    }
    s_.fabric = std::move(f);
  }

  // `4ms` (CPU only) or {cpu: 0.8ms, blocked: 20ms}; a field adds `shared: NAME`.
  CallCost call_cost(const YAML::Node& n, std::string_view what, std::string* shared) {
    const auto cost_duration = [&](const YAML::Node& d, std::string_view key) {
      auto ns = parse_cost_duration(scalar(d, key));
      if (!ns) fail(d, std::string(what) + " " + std::string(key) + ": " + ns.error());
      return *ns;
    };
    if (n.IsScalar()) return CallCost{cost_duration(n, "cpu"), {}};
    const Map m(n, what, {"cpu", "blocked", "shared"});
    CallCost c;
    if (auto v = m.get("cpu")) c.cpu = cost_duration(*v, "cpu");
    if (auto v = m.get("blocked")) c.blocked = cost_duration(*v, "blocked");
    if (!m.has("cpu") && !m.has("blocked")) fail(n, std::string(what) + " needs 'cpu' or 'blocked'");
    if (auto v = m.get("shared")) {
      if (shared == nullptr) fail(*v, "'shared' belongs to a field's cost");
      *shared = scalar(*v, "shared");
    }
    return c;
  }

  void parse_call_costs(const YAML::Node& n) {
    if (!n.IsMap()) fail(n, "call_costs must map NVML functions (and 'fields') to costs");
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string key = scalar(it->first, "a call_costs key");
      if (key == "fields") {
        if (!it->second.IsMap()) fail(it->second, "call_costs.fields must map field ids to costs (83: 4ms)");
        for (auto f = it->second.begin(); f != it->second.end(); ++f) {
          const auto id = static_cast<unsigned>(uinteger(f->first, "field id", 1, 1023));
          FieldCost fc;
          fc.cost = call_cost(f->second, "field " + std::to_string(id), &fc.shared);
          s_.call_cost_overrides.fields[id] = std::move(fc);
        }
        continue;
      }
      if (!is_nvml_function(key) || key.starts_with("gpuscopeSim")) {
        fail(it->first, "unknown function '" + key + "' in call_costs (an NVML symbol this library exports, or 'fields')");
      }
      s_.call_cost_overrides.functions[key] = call_cost(it->second, key, nullptr);
    }
  }

  Scenario s_;
};

}  // namespace

std::expected<Scenario, std::string> parse_scenario(std::string_view yaml, std::string_view source) {
  const auto where = [&](int line) {
    return line > 0 ? std::string(source) + ":" + std::to_string(line) + ": " : std::string(source) + ": ";
  };
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    Scenario s = Parser{}.parse(root);
    s.source = std::string(source);
    return s;
  } catch (const ParseFailure& f) {
    return std::unexpected(where(f.line) + f.message);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    return std::unexpected(where(line) + "YAML: " + model::yaml_error_text(e));
  } catch (const std::exception& e) {
    return std::unexpected(where(0) + e.what());
  }
}

std::expected<Scenario, std::string> load_scenario_file(const std::string& path) {
  auto text = model::read_file_text(path);
  if (!text) return std::unexpected(path + ": cannot open (" + text.error() + ")");
  return parse_scenario(*text, path);
}

std::string_view builtin_scenario_yaml() {
  return R"(# gpuscope's built-in scenario: one 8x H100 node in a training job, one rank per GPU.
description: 8x H100 80GB HBM3, data-parallel training
seed: 42
node:
  hostname: dgx-h100-sim-01
  driver_version: "580.159.04"
  cuda_driver_version: 13000
gpus:
  count: 8
  model: NVIDIA H100 80GB HBM3
workload:
  profile: training
processes:
  - pid: 4242
    name: python train.py
    per_gpu: true
    memory: 71GiB
)";
}

}  // namespace gpuscope::sim
