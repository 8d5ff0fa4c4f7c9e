#include "analysis/diagnosis_report.h"

#include <ctime>

#include <fmt/format.h>

namespace gpuscope::analysis {
namespace {

using nlohmann::json;

json identity_json(const GpuIdentity& id) {
  json out = json::object();
  out["gpu"] = id.gpu;
  out["uuid"] = id.uuid;
  out["host"] = id.host;
  out["model"] = id.model;
  if (!id.job.empty()) out["job"] = id.job;
  json labels = json::object();
  for (const auto& l : id.labels) labels[l.name] = l.value;
  out["labels"] = std::move(labels);
  return out;
}

json evidence_json(const std::vector<Evidence>& evidence) {
  json out = json::array();
  for (const auto& e : evidence) out.push_back({{"name", e.name}, {"value", e.value}, {"text", e.text}});
  return out;
}

std::string gpu_heading(const GpuIdentity& id) {
  std::string out = id.gpu.empty() ? id.uuid : fmt::format("GPU {}", id.gpu);
  if (!id.mig_instance.empty()) {
    out += id.mig_profile.empty() ? fmt::format(" MIG instance {}", id.mig_instance)
                                  : fmt::format(" MIG {} instance {}", id.mig_profile, id.mig_instance);
  }
  if (!id.model.empty()) out += "  " + id.model;
  if (!id.host.empty()) out += "  " + id.host;
  if (!id.job.empty()) out += "  job " + id.job;
  return out;
}

std::string verdict_text(Verdict v, const std::string& detail) {
  std::string out(verdict_title(v));
  if (!detail.empty()) out += " (" + detail + ")";
  return out;
}

}  // namespace

std::string rfc3339(std::int64_t t_ms) {
  const std::time_t secs = static_cast<std::time_t>(t_ms >= 0 ? t_ms / 1000 : (t_ms - 999) / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  const std::int64_t ms = t_ms - static_cast<std::int64_t>(secs) * 1000;
  if (ms == 0) {
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                       tm.tm_min, tm.tm_sec);
  }
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

std::string duration_text(std::int64_t ms) {
  const std::int64_t s = (ms < 0 ? 0 : ms) / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

json diagnosis_json(const Diagnosis& d) {
  json gpus = json::array();
  for (const auto& g : d.gpus) {
    json j = identity_json(g.identity);
    j["verdict"] = verdict_id(g.verdict);
    j["verdict_title"] = verdict_title(g.verdict);
    if (!g.detail.empty()) j["detail"] = g.detail;
    j["summary"] = g.summary;
    j["evidence"] = evidence_json(g.evidence);
    j["fix"] = g.fix;
    json findings = json::array();
    for (const auto& f : g.findings) {
      findings.push_back({{"id", f.id}, {"summary", f.summary}, {"evidence", evidence_json(f.evidence)}, {"fix", f.fix}});
    }
    j["findings"] = std::move(findings);
    j["undecided"] = g.undecided;
    j["readings"] = g.readings;
    j["from"] = static_cast<double>(g.segment_start_ms) / 1000.0;
    j["to"] = static_cast<double>(g.segment_end_ms) / 1000.0;
    if (g.since_ms) {
      j["since"] = static_cast<double>(*g.since_ms) / 1000.0;
      j["since_is_lower_bound"] = g.since_is_lower_bound;
    }
    gpus.push_back(std::move(j));
  }
  return {{"at", static_cast<double>(d.at_ms) / 1000.0},
          {"window_seconds", static_cast<double>(d.window_ms) / 1000.0},
          {"gpus", std::move(gpus)}};
}

std::string diagnosis_text(const Diagnosis& d) {
  std::string out = fmt::format("diagnosis at {}, window {}\n", rfc3339(d.at_ms), duration_text(d.window_ms));
  if (d.gpus.empty()) out += "no GPU readings in the window\n";
  for (const auto& g : d.gpus) {
    out += fmt::format("\n{}\n", gpu_heading(g.identity));
    out += fmt::format("  verdict   {}\n", verdict_text(g.verdict, g.detail));
    out += fmt::format("  why       {}\n", g.summary);
    if (g.since_ms) {
      out += fmt::format("  since     {}{} ({}{})\n", g.since_is_lower_bound ? "at least " : "", rfc3339(*g.since_ms),
                         g.since_is_lower_bound ? "over " : "", duration_text(d.at_ms - *g.since_ms));
    }
    if (g.segment_end_ms < d.at_ms) {
      out += fmt::format("  readings  {} from {} to {}: the GPU changed what it does {} ago, too few readings yet to "
                         "judge the new regime\n",
                         g.readings, rfc3339(g.segment_start_ms), rfc3339(g.segment_end_ms),
                         duration_text(d.at_ms - g.segment_end_ms));
    } else if (g.segment_start_ms > d.at_ms - d.window_ms) {
      out += fmt::format("  readings  the last {} ({} readings): the GPU changed what it does inside the window\n",
                         duration_text(d.at_ms - g.segment_start_ms), g.readings);
    } else {
      out += fmt::format("  readings  {}\n", g.readings);
    }
    if (!g.evidence.empty()) {
      out += "  evidence ";
      for (const auto& e : g.evidence) out += fmt::format(" {} {};", e.name, e.text);
      out.pop_back();
      out += '\n';
    }
    if (!g.fix.empty()) out += fmt::format("  fix       {}\n", g.fix);
    for (const auto& f : g.findings) {
      out += fmt::format("  also      {}\n", f.summary);
      out += fmt::format("            fix: {}\n", f.fix);
    }
    for (const auto& u : g.undecided) out += fmt::format("  undecided {}\n", u);
  }
  return out;
}

json timeline_json(const std::vector<VerdictChange>& changes, std::int64_t from_ms, std::int64_t to_ms,
                   std::int64_t window_ms) {
  json rows = json::array();
  for (const auto& c : changes) {
    json j = identity_json(c.identity);
    j["at"] = static_cast<double>(c.at_ms) / 1000.0;
    j["from_verdict"] = c.from ? json(verdict_id(*c.from)) : json(nullptr);
    j["verdict"] = verdict_id(c.to);
    if (!c.detail.empty()) j["detail"] = c.detail;
    j["summary"] = c.summary;
    j["findings"] = c.findings;
    rows.push_back(std::move(j));
  }
  return {{"from", static_cast<double>(from_ms) / 1000.0},
          {"to", static_cast<double>(to_ms) / 1000.0},
          {"window_seconds", static_cast<double>(window_ms) / 1000.0},
          {"changes", std::move(rows)}};
}

std::string timeline_text(const std::vector<VerdictChange>& changes) {
  std::string out;
  if (changes.empty()) out = "no GPU readings in the range\n";
  for (const auto& c : changes) {
    std::string findings;
    for (const auto& f : c.findings) findings += (findings.empty() ? " [" : ", ") + f;
    if (!findings.empty()) findings += "]";
    out += fmt::format("{}  {}  {}{}: {}\n", rfc3339(c.at_ms), gpu_heading(c.identity), verdict_text(c.to, c.detail),
                       findings, c.summary);
  }
  return out;
}

}  // namespace gpuscope::analysis
