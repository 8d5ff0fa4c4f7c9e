#include "top/remote_reader.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace gpuscope::top {
namespace {

using nlohmann::json;

std::optional<double> number(const json& values, const char* key, double scale = 1) {
  const auto it = values.find(key);
  if (it == values.end() || !it->is_number()) return std::nullopt;
  return it->get<double>() * scale;
}

void read_values(const json& values, GpuFrame& g) {
  g.value(Metric::kUtilization) = number(values, "gpu_util_percent");
  g.value(Metric::kSmActive) = number(values, "sm_active_ratio", 100);
  g.value(Metric::kTensorActive) = number(values, "pipe_tensor_active_ratio", 100);
  g.value(Metric::kDramActive) = number(values, "dram_active_ratio", 100);
  g.value(Metric::kMemoryUsedMiB) = number(values, "fb_used_mib");
  g.value(Metric::kMemoryTotalMiB) = number(values, "fb_total_mib");
  g.value(Metric::kPowerWatts) = number(values, "power_usage_watts");
  g.value(Metric::kPowerLimitWatts) = number(values, "enforced_power_limit_watts");
  if (!g.value(Metric::kPowerLimitWatts)) g.value(Metric::kPowerLimitWatts) = number(values, "power_limit_watts");
  g.value(Metric::kTemperatureC) = number(values, "gpu_temp_celsius");
  g.value(Metric::kSmClockMHz) = number(values, "sm_clock_mhz");
  g.value(Metric::kMemClockMHz) = number(values, "mem_clock_mhz");
  g.value(Metric::kMaxSmClockMHz) = number(values, "max_sm_clock_mhz");
  g.value(Metric::kSlowdownTempC) = number(values, "slowdown_temp_celsius");
  if (auto r = number(values, "clocks_event_reasons")) g.throttle_reasons = static_cast<std::uint64_t>(*r);
}

void read_processes(const json& procs, GpuFrame& g) {
  if (!procs.is_array()) return;
  for (const auto& p : procs) {
    if (!p.is_object()) continue;
    ProcessRow row;
    row.pid = p.value("pid", 0u);
    row.gpu = g.index;
    row.user = p.value("user", std::string());
    row.command = p.value("command_line", p.value("name", std::string()));
    if (const auto it = p.find("used_memory_bytes"); it != p.end() && it->is_number()) row.memory_bytes = it->get<std::uint64_t>();
    if (auto sm = number(p, "sm_utilization_ratio", 100)) row.sm_percent = sm;
    if (const auto it = p.find("gpu_instance_id"); it != p.end() && it->is_number_unsigned()) {
      row.gpu_instance_id = it->get<unsigned>();
    }
    g.processes.push_back(std::move(row));
  }
}

// The agent lists every MIG device; top shows one row per GPU instance, its first MIG device (memory and
// GPM are the GPU instance's, as exporter::gpu_instances_of picks them for the local top).
void read_mig_instances(const json& instances, GpuFrame& g) {
  if (!instances.is_array()) return;
  for (const auto& m : instances) {
    if (!m.is_object()) continue;
    const unsigned gi = m.value("gpu_instance_id", 0u);
    if (std::ranges::any_of(g.mig_instances, [&](const MigInstanceFrame& f) { return f.gpu_instance_id == gi; })) {
      continue;
    }
    MigInstanceFrame f;
    f.gpu_instance_id = gi;
    f.profile = m.value("profile", std::string());
    f.uuid = m.value("uuid", std::string());
    if (const auto it = m.find("values"); it != m.end() && it->is_object()) {
      f.memory_used_mib = number(*it, "fb_used_mib");
      f.memory_total_mib = number(*it, "fb_total_mib");
      f.sm_active = number(*it, "sm_active_ratio", 100);
      f.tensor_active = number(*it, "pipe_tensor_active_ratio", 100);
    }
    const std::string pod = m.value("pod", std::string());
    if (!pod.empty()) f.pod = m.value("namespace", std::string()) + "/" + pod;
    g.mig_instances.push_back(std::move(f));
  }
}

void read_verdicts(const json& doc, Frame& frame) {
  const json& data = doc.contains("data") ? doc["data"] : doc;
  if (!data.is_object() || !data.contains("gpus") || !data["gpus"].is_array()) return;
  for (const auto& d : data["gpus"]) {
    if (!d.is_object()) continue;
    const std::string gpu = d.value("gpu", std::string());
    const std::string uuid = d.value("uuid", std::string());
    for (auto& g : frame.gpus) {
      if (!(uuid.empty() ? gpu == std::to_string(g.index) : uuid == g.uuid)) continue;
      VerdictLine v{d.value("verdict", std::string("unknown")), d.value("verdict_title", std::string()),
                    d.value("summary", std::string()), {}};
      if (const auto it = d.find("findings"); it != d.end() && it->is_array()) {
        for (const auto& f : *it) {
          if (f.is_object()) v.findings.push_back(f.value("id", std::string()));
        }
      }
      // A MIG instance's verdict (its series carry GPU_I_ID) goes to its row, never to its GPU's.
      std::string instance;
      if (const auto labels = d.find("labels"); labels != d.end() && labels->is_object()) {
        instance = labels->value("GPU_I_ID", std::string());
      }
      if (instance.empty()) {
        g.verdict = std::move(v);
        continue;
      }
      for (auto& m : g.mig_instances) {
        if (std::to_string(m.gpu_instance_id) == instance) m.verdict = v;
      }
    }
  }
}

}  // namespace

RemoteReader::RemoteReader(Get get, std::set<std::string> gpus) : get_(std::move(get)), only_(std::move(gpus)) {}

std::expected<Frame, std::string> RemoteReader::frame_of(std::string_view gpus_json, std::string_view diagnosis_json,
                                                         const std::set<std::string>& only) {
  const json doc = json::parse(gpus_json, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("gpus") || !doc["gpus"].is_array()) {
    return std::unexpected("/api/v1/gpus: not the agent's GPU list (is the URL a gpuscope agent?)");
  }
  Frame frame;
  if (const auto it = doc.find("system"); it != doc.end() && it->is_object()) frame.host = it->value("hostname", "");
  frame.time = std::chrono::system_clock::now();
  if (const auto it = doc.find("sample"); it != doc.end() && it->is_object()) {
    if (auto t = number(*it, "time_seconds")) {
      frame.time = std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(*t)));
    }
  }
  for (const auto& gj : doc["gpus"]) {
    if (!gj.is_object()) continue;
    GpuFrame g;
    g.index = gj.value("index", 0u);
    g.name = gj.value("name", std::string());
    g.uuid = gj.value("uuid", std::string());
    if (!only.empty() && !only.contains(std::to_string(g.index)) && !only.contains(g.uuid)) continue;
    g.up = gj.value("up", false);
    if (!g.up) {
      g.down_reason = "not answering the agent";
    } else {
      if (const auto it = gj.find("values"); it != gj.end() && it->is_object()) read_values(*it, g);
      if (const auto it = gj.find("processes"); it != gj.end()) read_processes(*it, g);
      if (const auto it = gj.find("mig_instances"); it != gj.end() && gj.value("mig_enabled", false)) {
        read_mig_instances(*it, g);
      }
    }
    frame.gpus.push_back(std::move(g));
  }
  if (!diagnosis_json.empty()) {
    const json d = json::parse(diagnosis_json, nullptr, false);
    if (!d.is_discarded()) read_verdicts(d, frame);
  }
  return frame;
}

std::expected<Frame, std::string> RemoteReader::read() {
  auto gpus = get_("/api/v1/gpus");
  if (!gpus) return std::unexpected(gpus.error());
  // A diagnosis that fails (an agent run with --no-diagnosis answers 404) only leaves the verdicts out.
  auto diagnosis = get_("/api/v1/diagnosis");
  return frame_of(*gpus, diagnosis ? *diagnosis : std::string(), only_);
}

}  // namespace gpuscope::top
