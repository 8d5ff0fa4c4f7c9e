#include "analysis/cost_report_format.h"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "analysis/diagnosis_report.h"

namespace gpuscope::analysis {
namespace {

constexpr std::size_t kTopWasters = 5;
// A GPU idle at least this share of the span needs releasing, not a smaller GPU: its peaks are too few
// to size anything by (an idle H100's "fits on a T4" would send the wrong message).
constexpr double kMostlyIdle = 0.9;

std::string_view grouping_name(const CostReport& r) {
  switch (r.by) {
    case CostGrouping::kGpu: return "gpu";
    case CostGrouping::kProcess: return "process";
    case CostGrouping::kLabel: return r.label;
  }
  return "gpu";
}

std::string_view price_source_name(PriceSource s) {
  switch (s) {
    case PriceSource::kRecorded: return "recorded";
    case PriceSource::kCatalog: return "catalog";
    case PriceSource::kNone: return "none";
  }
  return "none";
}

std::string efficiency_text(const CostTotals& t) {
  const auto e = t.efficiency();
  return e ? fmt::format("{:.1f}%", *e * 100.0) : "-";
}

nlohmann::json totals_json(const CostTotals& t) {
  nlohmann::json j = {
      {"seconds", t.seconds},
      {"hours", t.seconds / 3600.0},
      {"priced_seconds", t.priced_seconds},
      {"idle_seconds", t.idle_seconds},
      {"busy_seconds", t.busy_seconds},
      {"down_seconds", t.down_seconds},
      {"unknown_seconds", t.unknown_seconds},
      {"working_seconds", t.working_seconds},
      {"cost_usd", t.dollars},
      {"idle_usd", t.idle_dollars},
      {"unused_usd", t.unused_dollars},
      {"busy_not_working_usd", t.busy_not_working_dollars()},
      {"working_usd", t.working_dollars},
      {"down_usd", t.down_dollars},
      {"energy_joules", t.energy_joules},
      {"energy_kwh", t.energy_joules / kJoulesPerKwh},
      {"energy_usd", t.energy_dollars},
      {"working_share_from_utilization", t.working_from_utilization},
  };
  if (auto e = t.efficiency()) j["efficiency_ratio"] = *e;
  return j;
}

void put(nlohmann::json& j, const char* key, const std::optional<double>& v) {
  if (v) j[key] = *v;
}

nlohmann::json peaks_json(const UsagePeaks& p) {
  nlohmann::json j = {{"observed_seconds", p.observed_seconds}};
  put(j, "memory_total_mib", p.memory_total_mib);
  put(j, "peak_memory_mib", p.peak_memory_mib);
  put(j, "peak_sm_active_ratio", p.peak_sm_active);
  put(j, "peak_tensor_active_ratio", p.peak_tensor_active);
  put(j, "peak_dram_active_ratio", p.peak_dram_active);
  put(j, "peak_pcie_bytes_per_second", p.peak_pcie_bytes_per_second);
  put(j, "peak_utilization_percent", p.peak_utilization_percent);
  return j;
}

// Columns padded to their widest cell; the first left-aligned, the rest right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()), 0);
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (i > 0) line += "  ";
      line += i == 0 ? fmt::format("{:<{}}", r[i], width[i]) : fmt::format("{:>{}}", r[i], width[i]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

std::vector<std::string> row_cells(const std::string& name, const CostTotals& t) {
  return {name,
          fmt::format("{:.1f}", t.seconds / 3600.0),
          dollars_text(t.dollars),
          dollars_text(t.idle_dollars),
          dollars_text(t.unused_dollars),
          fmt::format("{:.1f}", t.energy_joules / kJoulesPerKwh),
          dollars_text(t.energy_dollars),
          efficiency_text(t)};
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string gpu_name(const GpuCost& g) { return gpu_cost_name(g, false); }

// What right-sizing says of a GPU (or MIG instance) that was idle nearly all the time; none for the others.
std::optional<std::string> release_text(const GpuCost& g) {
  const CostTotals& t = g.totals;
  if (t.seconds <= 0 || t.idle_seconds / t.seconds < kMostlyIdle) return std::nullopt;
  const double held = g.held_seconds > 0 ? g.held_seconds : t.seconds;  // an instance's seconds are its share's
  const std::string span = span_text(static_cast<std::int64_t>(held * 1000.0));
  if (g.mig_unallocated) {
    return fmt::format("no instance on them for {}: create one for waiting work, or leave MIG mode", span);
  }
  return fmt::format("idle {:.0f}% of {}: release it (right-sizing sizes work, and it did almost none)",
                     t.idle_seconds / t.seconds * 100.0, span);
}

}  // namespace

bool over_budget(const CostReport& report, const CostPresentation& p) {
  return p.budget_usd_per_month && report.monthly_projection_usd && *report.monthly_projection_usd > *p.budget_usd_per_month;
}

std::string cost_text(const CostReport& r, const CostPresentation& p) {
  std::string out = fmt::format("GPU cost from {} to {} ({}), tier {}\n\n", rfc3339(r.from_ms), rfc3339(r.to_ms),
                                span_text(r.to_ms - r.from_ms), model::price_tier_name(r.tier));
  std::string first = r.by == CostGrouping::kGpu ? "GPU" : r.by == CostGrouping::kProcess ? "PROCESS" : r.label;
  std::vector<std::vector<std::string>> rows = {
      {first, "HOURS", "COST", "IDLE", "UNUSED", "ENERGY kWh", "ENERGY $", "EFFICIENCY"}};
  for (const auto& row : r.rows) rows.push_back(row_cells(row.name, row.totals));
  if (r.rows.size() > 1) rows.push_back(row_cells("TOTAL", r.total));
  out += table(rows);
  out += "\nIDLE: no kernels or copies ran. UNUSED: paid while the SMs were idle (idle, down, and the idle SMs of "
         "busy time).\nEFFICIENCY: the share of the GPU-hours the SMs worked (SM-active-weighted).\n";

  if (r.monthly_projection_usd) {
    out += fmt::format("\nProjected: {}/month at the rate of the last {}", dollars_text(*r.monthly_projection_usd),
                       span_text(r.projection_span_ms));
    if (p.budget_usd_per_month) {
      const double b = *p.budget_usd_per_month;
      out += over_budget(r, p) ? fmt::format("; OVER the budget of {}/month by {}", dollars_text(b),
                                             dollars_text(*r.monthly_projection_usd - b))
                               : fmt::format("; within the budget of {}/month", dollars_text(b));
    }
    out += '\n';
  } else if (p.budget_usd_per_month) {
    out += "\nNo projection: no GPU has a price in this tier, so the budget cannot be checked\n";
  }

  const auto wasters = top_wasters(r, kTopWasters);
  if (!wasters.empty()) {
    out += "\nTop wasters:\n";
    for (const auto& w : wasters) out += "  " + w + '\n';
  }
  bool any_sizing = false;
  for (std::size_t i = 0; i < r.gpus.size() && i < p.right_sizing.size(); ++i) {
    const auto release = release_text(r.gpus[i]);
    if (!p.right_sizing[i] && !release) continue;
    if (!any_sizing) out += "\nRight-sizing (the cheapest catalog GPU that carries the same peaks):\n";
    any_sizing = true;
    out += fmt::format("  {}: {}\n", gpu_name(r.gpus[i]), release ? *release : p.right_sizing[i]->reasoning);
  }
  std::vector<std::string> notes = r.notes;
  notes.insert(notes.end(), p.notes.begin(), p.notes.end());
  if (!notes.empty()) {
    out += "\nNotes:\n";
    for (const auto& n : notes) out += "  - " + n + '\n';
  }
  return out;
}

nlohmann::json cost_json(const CostReport& r, const CostPresentation& p) {
  nlohmann::json j;
  j["from"] = rfc3339(r.from_ms);
  j["to"] = rfc3339(r.to_ms);
  j["from_seconds"] = static_cast<double>(r.from_ms) / 1000.0;
  j["to_seconds"] = static_cast<double>(r.to_ms) / 1000.0;
  j["tier"] = model::price_tier_name(r.tier);
  j["by"] = grouping_name(r);
  j["rows"] = nlohmann::json::array();
  for (const auto& row : r.rows) {
    nlohmann::json x = totals_json(row.totals);
    x["name"] = row.name;
    x["gpus"] = row.gpus;
    j["rows"].push_back(std::move(x));
  }
  j["total"] = totals_json(r.total);
  j["gpus"] = nlohmann::json::array();
  for (std::size_t i = 0; i < r.gpus.size(); ++i) {
    const GpuCost& g = r.gpus[i];
    nlohmann::json x = {{"gpu", g.gpu},
                        {"uuid", g.uuid},
                        {"host", g.host},
                        {"model", g.model},
                        {"price_source", price_source_name(g.price_source)},
                        {"totals", totals_json(g.totals)},
                        {"peaks", peaks_json(g.peaks)}};
    put(x, "usd_per_hour", g.usd_per_hour);
    x["name"] = gpu_cost_name(g, false);
    if (!g.mig_instance.empty()) {
      x["gpu_instance_id"] = g.mig_instance;
      x["mig_profile"] = g.mig_profile;
    }
    if (!g.mig_instance.empty() || g.mig_unallocated) {
      x["mig_unallocated"] = g.mig_unallocated;
      x["mig_slices"] = g.mig_slices_max;
      x["mig_total_slices"] = g.mig_total_slices;
    }
    x["held_seconds"] = g.held_seconds;  // wall time (a MIG part's totals count its share of GPU-seconds)
    if (const auto release = release_text(g)) {
      x["right_sizing"] = {{"outcome", "release_idle"}, {"reasoning", *release}};
    } else if (i < p.right_sizing.size() && p.right_sizing[i]) {
      x["right_sizing"] = right_sizing_json(*p.right_sizing[i]);
    }
    j["gpus"].push_back(std::move(x));
  }
  put(j, "monthly_projection_usd", r.monthly_projection_usd);
  j["projection_span_seconds"] = static_cast<double>(r.projection_span_ms) / 1000.0;
  if (p.budget_usd_per_month) {
    j["budget_usd_per_month"] = *p.budget_usd_per_month;
    j["over_budget"] = over_budget(r, p);
  }
  j["top_wasters"] = top_wasters(r, kTopWasters);
  std::vector<std::string> notes = r.notes;
  notes.insert(notes.end(), p.notes.begin(), p.notes.end());
  j["notes"] = notes;
  return j;
}

std::string cost_csv(const CostReport& r) {
  std::string out =
      "name,gpus,hours,cost_usd,idle_usd,unused_usd,busy_not_working_usd,down_usd,energy_kwh,energy_usd,efficiency_ratio\n";
  const auto line = [&](const std::string& name, const std::vector<std::string>& gpus, const CostTotals& t) {
    std::string g;
    for (const auto& x : gpus) g += (g.empty() ? "" : ";") + x;
    const auto e = t.efficiency();
    out += fmt::format("{},{},{:.4f},{:.2f},{:.2f},{:.2f},{:.2f},{:.2f},{:.4f},{:.2f},{}\n", csv_field(name),
                       csv_field(g), t.seconds / 3600.0, t.dollars, t.idle_dollars, t.unused_dollars,
                       t.busy_not_working_dollars(), t.down_dollars, t.energy_joules / kJoulesPerKwh, t.energy_dollars,
                       e ? fmt::format("{:.4f}", *e) : std::string());
  };
  for (const auto& row : r.rows) line(row.name, row.gpus, row.totals);
  line("TOTAL", {}, r.total);
  return out;
}

}  // namespace gpuscope::analysis
