#include "trace/report_units.h"
#include "trace/trace_diff_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace gpuscope::trace {
namespace {

using diff_json = nlohmann::ordered_json;

constexpr std::size_t kDiffTextNameWidth = 70;

std::string diff_text_name(const std::string& name) {
  return name.size() <= kDiffTextNameWidth ? name : name.substr(0, kDiffTextNameWidth - 3) + "...";
}

std::string diff_text_relative(double before, double after) {
  if (before == 0) return after == 0 ? "" : " (new)";
  return fmt::format(" ({:+.1f}%)", 100 * (after - before) / std::abs(before));
}

std::string diff_metric_value(const MetricDelta& m, double v) {
  switch (m.unit) {
    case MetricDelta::Unit::kNanoseconds: return duration_text(v);
    case MetricDelta::Unit::kRatio: return fmt::format("{:.1f}%", 100 * v);
    case MetricDelta::Unit::kCount: return count_text(v);
  }
  return {};
}

std::string diff_metric_change(const MetricDelta& m) {
  if (m.delta() == 0) return "=";
  switch (m.unit) {
    case MetricDelta::Unit::kNanoseconds: return signed_duration_text(m.delta()) + diff_text_relative(m.before, m.after);
    case MetricDelta::Unit::kRatio: return fmt::format("{:+.1f} pts", 100 * m.delta());
    case MetricDelta::Unit::kCount:
      return (m.delta() > 0 ? "+" : "-") + count_text(std::abs(m.delta())) + diff_text_relative(m.before, m.after);
  }
  return {};
}

std::string diff_side_line(const DiffSide& s) {
  std::string what = fmt::format("{} rank{}", s.ranks, s.ranks == 1 ? "" : "s");
  if (s.world_size) what += fmt::format(" of {}", *s.world_size);
  what += fmt::format(", {} steps", s.steps);
  if (!s.device_names.empty()) what += fmt::format(", {}", fmt::join(s.device_names, " + "));
  return fmt::format("{} ({})", s.path, what);
}

void diff_text_table(std::string& out, const TableDiff& t, DiffUnit unit, std::size_t top) {
  auto o = std::back_inserter(out);
  fmt::format_to(o, "\n{}: {} added, {} removed, {} changed, {} unchanged\n", t.title, t.added, t.removed, t.changed,
                 t.unchanged);
  if (!t.note.empty()) fmt::format_to(o, "  ({})\n", t.note);
  const std::size_t moved = t.added + t.removed + t.changed;
  if (moved == 0) return;
  const std::string per = diff_unit_suffix(unit);
  fmt::format_to(o, "  {:>12} {:>12} {:>12} {:>21}  {:<9} {}\n", "change" + per, "BEFORE" + per, "AFTER" + per, "calls" + per,
                 "status", "name");
  const std::size_t shown = std::min(top, moved);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& r = t.rows[i];
    fmt::format_to(o, "  {:>12} {:>12} {:>12} {:>21}  {:<9} {}\n", signed_duration_text(r.delta_ns()),
                   duration_text(r.before_ns), duration_text(r.after_ns),
                   count_text(r.before_count) + " -> " + count_text(r.after_count), change_kind_key(r.change),
                   diff_text_name(r.name));
    for (const auto& [name, side] : r.members) {
      fmt::format_to(o, "  {:>12} {:>12} {:>12} {:>21}  {:<9}   {} {}\n", "", "", "", "", "",
                     side == "<"   ? "BEFORE only"
                     : side == ">" ? "AFTER only "
                                   : "both       ",
                     diff_text_name(name));
    }
  }
  if (shown < moved) fmt::format_to(o, "  ... {} more changed rows (--top N shows more)\n", moved - shown);
}

diff_json diff_side_json(const DiffSide& s) {
  diff_json j{{"path", s.path}, {"ranks", s.ranks}};
  j["world_size"] = s.world_size ? diff_json(*s.world_size) : diff_json(nullptr);
  j["devices"] = s.devices;
  j["device_names"] = s.device_names;
  j["steps"] = s.steps;
  j["step_median_seconds"] = static_cast<double>(s.step_median_ns) / 1e9;
  j["step_mean_seconds"] = static_cast<double>(s.step_mean_ns) / 1e9;
  j["span_seconds"] = static_cast<double>(s.span_ns) / 1e9;
  return j;
}

std::string diff_metric_json_key(const MetricDelta& m) {
  switch (m.unit) {
    case MetricDelta::Unit::kNanoseconds: return m.key + "_seconds";
    case MetricDelta::Unit::kRatio: return m.key + "_ratio";
    case MetricDelta::Unit::kCount: return m.key + "_count";
  }
  return m.key;
}

double diff_metric_json_value(const MetricDelta& m, double v) { return m.unit == MetricDelta::Unit::kNanoseconds ? v / 1e9 : v; }

diff_json diff_row_json(const NamedDelta& r) {
  diff_json j{{"name", r.name},
              {"status", change_kind_key(r.change)},
              {"change_seconds", r.delta_ns() / 1e9},
              {"before_seconds", r.before_ns / 1e9},
              {"after_seconds", r.after_ns / 1e9},
              {"before_count", r.before_count},
              {"after_count", r.after_count},
              {"before_total_count", r.before_total_count},
              {"after_total_count", r.after_total_count},
              {"before_total_seconds", static_cast<double>(r.before_total_ns) / 1e9},
              {"after_total_seconds", static_cast<double>(r.after_total_ns) / 1e9}};
  if (r.before_kernels_per_call > 0 || r.after_kernels_per_call > 0) {
    j["before_kernels_per_call"] = r.before_kernels_per_call;
    j["after_kernels_per_call"] = r.after_kernels_per_call;
  }
  if (!r.members.empty()) {
    diff_json members = diff_json::array();
    for (const auto& [name, side] : r.members) {
      members.push_back({{"name", name}, {"side", side == "<" ? "before" : side == ">" ? "after" : "both"}});
    }
    j["members"] = std::move(members);
  }
  j["explanation"] = r.explanation;
  return j;
}

}  // namespace

std::string trace_diff_text(const TraceDiff& diff, std::size_t top) {
  std::string out;
  auto o = std::back_inserter(out);
  fmt::format_to(o, "trace diff\n  BEFORE {}\n  AFTER  {}\nfigures {}\n", diff_side_line(diff.before), diff_side_line(diff.after),
                 diff.unit_description);
  for (const auto& w : diff.warnings) fmt::format_to(o, "warning: {}\n", w);

  const std::string per = diff_unit_suffix(diff.unit);
  fmt::format_to(o, "\n  {:<28} {:>12} {:>12}  {}\n", "", "BEFORE", "AFTER", "change");
  for (const auto& m : diff.metrics) {
    fmt::format_to(o, "  {:<28} {:>12} {:>12}  {}\n", m.per_unit ? m.label + per : m.label, diff_metric_value(m, m.before),
                   diff_metric_value(m, m.after), diff_metric_change(m));
  }

  if (diff.no_changes()) {
    fmt::format_to(o, "\nNo changes: every figure above and every {} is the same on both sides.\n",
                   diff.tables.empty() ? std::string("table row") : "kernel, transfer and named row");
    return out;
  }
  if (!diff.biggest.empty()) {
    fmt::format_to(o, "\nBiggest changes (per {}):\n", diff_unit_key(diff.unit));
    for (std::size_t i = 0; i < std::min(top, diff.biggest.size()); ++i) fmt::format_to(o, "  {}\n", diff.change(i).explanation);
  }
  for (const auto& t : diff.tables) {
    if (!t.rows.empty()) diff_text_table(out, t, diff.unit, top);  // a kind neither side has (no transfers)
  }
  return out;
}

diff_json trace_diff_json(const TraceDiff& diff, std::size_t top) {
  diff_json j;
  j["before"] = diff_side_json(diff.before);
  j["after"] = diff_side_json(diff.after);
  j["per"] = diff_unit_key(diff.unit);
  j["per_description"] = diff.unit_description;
  j["before_divisor"] = diff.before_divisor;
  j["after_divisor"] = diff.after_divisor;
  j["warnings"] = diff.warnings;
  j["no_changes"] = diff.no_changes();
  diff_json metrics = diff_json::object();
  for (const auto& m : diff.metrics) {
    diff_json v{{"before", diff_metric_json_value(m, m.before)},
                {"after", diff_metric_json_value(m, m.after)},
                {"change", diff_metric_json_value(m, m.delta())},
                {"per_unit", m.per_unit}};
    v["change_ratio"] = m.before != 0 ? diff_json(m.delta() / std::abs(m.before)) : diff_json(nullptr);
    metrics[diff_metric_json_key(m)] = std::move(v);
  }
  j["metrics"] = std::move(metrics);
  diff_json biggest = diff_json::array();
  for (std::size_t i = 0; i < std::min(top, diff.biggest.size()); ++i) {
    const auto& r = diff.change(i);
    biggest.push_back({{"table", diff.tables[diff.biggest[i].first].kind},
                       {"name", r.name},
                       {"status", change_kind_key(r.change)},
                       {"change_seconds", r.delta_ns() / 1e9},
                       {"explanation", r.explanation}});
  }
  j["biggest_changes"] = std::move(biggest);
  diff_json tables = diff_json::array();
  for (const auto& t : diff.tables) {
    diff_json rows = diff_json::array();
    const std::size_t moved = t.added + t.removed + t.changed;
    for (std::size_t i = 0; i < std::min(top, moved); ++i) rows.push_back(diff_row_json(t.rows[i]));
    diff_json table{{"kind", t.kind},       {"title", t.title},     {"added", t.added},
                    {"removed", t.removed}, {"changed", t.changed}, {"unchanged", t.unchanged}};
    if (!t.note.empty()) table["note"] = t.note;
    table["rows"] = std::move(rows);
    tables.push_back(std::move(table));
  }
  j["tables"] = std::move(tables);
  return j;
}

}  // namespace gpuscope::trace
