#include "analysis/health_report_format.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "model/printable_text.h"

namespace gpuscope::analysis {
namespace {

constexpr int kGpuIsLost = 15;  // NVML_ERROR_GPU_IS_LOST

std::string gpu_label(const GpuHealth& g) {
  return g.uuid.empty() ? fmt::format("GPU {}", g.index) : fmt::format("GPU {} ({})", g.index, g.uuid);
}

std::string down_text(const GpuHealth& g) {
  if (g.down_error_code == kGpuIsLost) return "not answering: the GPU is lost (fallen off the bus?)";
  return fmt::format("not answering: NVML error {}", g.down_error_code);
}

bool failed(const CheckResult& c) { return c.status == CheckStatus::kFail; }

// "ecc on GPU 1, 3 (reason)" or, when no GPU was checked, "ecc (reason)".
std::vector<std::string> not_checked_notes(const HealthReport& report) {
  std::vector<std::string> notes;
  std::size_t up = 0;
  for (const auto& g : report.gpus) up += g.up ? 1 : 0;
  for (HealthCheck check : all_health_checks()) {
    std::vector<std::string> where;
    std::string reason;
    for (const auto& g : report.gpus) {
      for (const auto& c : g.checks) {
        if (c.check != check || c.status != CheckStatus::kNotChecked) continue;
        where.push_back(fmt::format("{}", g.index));
        if (reason.empty()) reason = c.summary;
      }
    }
    for (const auto& c : report.node) {
      if (c.check == check && c.status == CheckStatus::kNotChecked && reason.empty()) reason = c.summary;
    }
    if (reason.empty()) continue;
    if (where.empty() || where.size() == up) {
      notes.push_back(fmt::format("{} ({})", health_check_id(check), reason));
    } else {
      notes.push_back(fmt::format("{} on GPU {} ({})", health_check_id(check), fmt::join(where, ", "), reason));
    }
  }
  return notes;
}

// Checks every reachable GPU (and the node, where it is a node check) passed.
std::vector<std::string_view> passed_everywhere(const HealthReport& report) {
  std::vector<std::string_view> passed;
  for (HealthCheck check : all_health_checks()) {
    bool seen = false, all_passed = true;
    auto visit = [&](const std::vector<CheckResult>& checks) {
      for (const auto& c : checks) {
        if (c.check != check) continue;
        seen = true;
        all_passed = all_passed && c.status == CheckStatus::kPass;
      }
    };
    for (const auto& g : report.gpus) visit(g.checks);
    visit(report.node);
    if (seen && all_passed) passed.push_back(health_check_id(check));
  }
  return passed;
}

nlohmann::ordered_json number(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 9.0e15) return static_cast<long long>(v);
  return v;
}

nlohmann::ordered_json check_json(const CheckResult& c) {
  nlohmann::ordered_json j;
  j["id"] = health_check_id(c.check);
  j["status"] = check_status_id(c.status);
  j["gating"] = c.gating;
  j["summary"] = c.summary;
  if (!c.pci_bus_id.empty()) j["pci_bus_id"] = c.pci_bus_id;
  nlohmann::ordered_json values = nlohmann::ordered_json::object();
  for (const auto& v : c.values) values[v.key] = number(v.value);
  j["values"] = std::move(values);
  if (c.check == HealthCheck::kXid) {
    nlohmann::ordered_json xids = nlohmann::ordered_json::array();
    for (const auto& s : c.xids) {
      xids.push_back({{"xid", s.xid}, {"count", s.count}, {"critical", s.critical}, {"source", s.source}, {"text", s.text}});
    }
    j["xids"] = std::move(xids);
  }
  return j;
}

}  // namespace

std::string health_report_text(const HealthReport& report) {
  std::string out;
  std::vector<std::string> warned;
  std::size_t failing_gpus = 0;
  for (const auto& g : report.gpus) {
    if (!g.up) out += fmt::format("FAIL {}: {}\n", gpu_label(g), down_text(g));
    bool gpu_failed = !g.up;
    for (const auto& c : g.checks) {
      if (!failed(c)) continue;
      out += fmt::format("{} {}: {}: {}\n", c.gating ? "FAIL" : "WARN", health_check_id(c.check), gpu_label(g),
                         model::printable_text(c.summary));
      gpu_failed = gpu_failed || c.gating;
      if (!c.gating) warned.emplace_back(health_check_id(c.check));
    }
    failing_gpus += gpu_failed ? 1 : 0;
  }
  std::vector<std::string> node_failures;
  for (const auto& c : report.node) {
    if (!failed(c)) continue;
    out += fmt::format("{} {}: {}\n", c.gating ? "FAIL" : "WARN", health_check_id(c.check), model::printable_text(c.summary));
    if (c.gating) {
      node_failures.emplace_back(health_check_id(c.check));
    } else {
      warned.emplace_back(health_check_id(c.check));
    }
  }
  std::sort(warned.begin(), warned.end());
  warned.erase(std::unique(warned.begin(), warned.end()), warned.end());

  std::string summary;
  const std::size_t problems = report.problem_count();
  if (problems == 0) {
    summary = fmt::format("healthy: all {} GPU{} passed {}", report.gpus.size(), report.gpus.size() == 1 ? "" : "s",
                          fmt::join(passed_everywhere(report), ", "));
  } else {
    summary = fmt::format("unhealthy: {} problem{}", problems, problems == 1 ? "" : "s");
    if (failing_gpus > 0) {
      summary += fmt::format(" on {} of {} GPU{}", failing_gpus, report.gpus.size(), report.gpus.size() == 1 ? "" : "s");
    }
    if (!node_failures.empty()) {
      summary += fmt::format("{} the node ({})", failing_gpus > 0 ? " and" : " on", fmt::join(node_failures, ", "));
    }
  }
  if (!warned.empty()) summary += fmt::format("; warnings: {}", fmt::join(warned, ", "));
  if (auto notes = not_checked_notes(report); !notes.empty()) {
    summary += fmt::format("; not checked: {}", fmt::join(notes, ", "));
  }
  // A log that could not be read is said, whatever else decided the xid check: it is not "no XIDs".
  if (!report.kernel_log_readable) {
    summary += report.kernel_log_source.empty()
                   ? fmt::format("; kernel log not read ({})", report.kernel_log_error)
                   : fmt::format("; kernel log {} unreadable ({})", report.kernel_log_source, report.kernel_log_error);
  }
  out += model::printable_text(summary) + "\n";
  return out;
}

nlohmann::ordered_json health_report_json(const HealthReport& report) {
  nlohmann::ordered_json doc;
  doc["healthy"] = report.healthy();
  doc["problem_count"] = report.problem_count();
  doc["gpu_count"] = report.gpus.size();
  nlohmann::ordered_json fail_on = nlohmann::ordered_json::array();
  for (HealthCheck c : all_health_checks()) {
    if (report.fail_on.contains(c)) fail_on.push_back(health_check_id(c));
  }
  doc["fail_on"] = std::move(fail_on);
  nlohmann::ordered_json log;
  if (!report.kernel_log_source.empty()) log["source"] = report.kernel_log_source;
  log["readable"] = report.kernel_log_readable;
  if (!report.kernel_log_error.empty()) log["error"] = report.kernel_log_error;
  doc["kernel_log"] = std::move(log);
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const auto& g : report.gpus) {
    nlohmann::ordered_json j;
    j["index"] = g.index;
    j["uuid"] = g.uuid;
    j["name"] = g.name;
    j["pci_bus_id"] = g.pci_bus_id;
    j["up"] = g.up;
    if (!g.up) j["nvml_error_code"] = g.down_error_code;
    j["healthy"] = g.healthy();
    nlohmann::ordered_json checks = nlohmann::ordered_json::array();
    for (const auto& c : g.checks) checks.push_back(check_json(c));
    j["checks"] = std::move(checks);
    gpus.push_back(std::move(j));
  }
  doc["gpus"] = std::move(gpus);
  nlohmann::ordered_json node = nlohmann::ordered_json::array();
  for (const auto& c : report.node) node.push_back(check_json(c));
  doc["node"] = {{"checks", std::move(node)}};
  return doc;
}

}  // namespace gpuscope::analysis
