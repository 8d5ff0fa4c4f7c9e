#include "trace/report_units.h"
#include "trace/ops_report.h"

#include <iterator>

#include <fmt/format.h>

#include "trace/rank_comparison.h"

namespace gpuscope::trace {
namespace {

using ojson = nlohmann::ordered_json;

std::string ops_pct(double r) { return fmt::format("{:.1f}%", 100 * r); }

double ops_seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string rank_heading(const RankReport& r) {
  const std::int64_t rank = display_rank(r);
  return fmt::format("== {}{}\n", r.file, rank >= 0 ? fmt::format(" (rank {})", rank) : "");
}

// The one line that says how much of the GPU time the table can place.
std::string attribution_coverage(const OpAttribution& ops) {
  if (ops.activities == 0) return "no GPU activity in this trace";
  std::string line = fmt::format("{} GPU activities, {}", ops.activities, duration_text(ops.activity_ns));
  if (ops.without_launch > 0) {
    line += fmt::format("; {} ({}) without a runtime call of their correlation id", ops.without_launch,
                        duration_text(ops.without_launch_ns));
  }
  if (ops.outside_ops > 0) {
    line += fmt::format("; {} ({}) launched outside any cpu_op", ops.outside_ops, duration_text(ops.outside_ops_ns));
  }
  if (ops.misnested > 0) line += fmt::format("; {} CPU events overlap without nesting (taken as nested)", ops.misnested);
  return line;
}

void attribution_rows_text(std::string& out, const std::vector<AttributionRow>& rows, std::size_t limit, const char* what) {
  auto o = std::back_inserter(out);
  fmt::format_to(o, "  {:<56} {:>8} {:>8} {:>11} {:>6} {:>11} {:>11} {:>11}\n", what, what[0] == 'o' ? "calls" : "ranges",
                 "GPU work", "GPU time", "share", "delay mean", "delay max", "CPU time");
  std::size_t shown = 0;
  for (const auto& row : rows) {
    if (shown++ == limit) break;
    fmt::format_to(o, "  {:<56} {:>8} {:>8} {:>11} {:>6} {:>11} {:>11} {:>11}\n", shortened(row.name, 56), row.instances,
                   row.activities, duration_text(row.gpu_ns), ops_pct(row.gpu_share),
                   row.activities > 0 ? duration_text(row.launch_delay_mean_ns()) : std::string("-"),
                   row.activities > 0 ? duration_text(row.launch_delay_max_ns) : std::string("-"), duration_text(row.cpu_ns));
  }
  if (rows.size() > limit) fmt::format_to(o, "  ... {} more\n", rows.size() - limit);
}

ojson attribution_rows_json(const std::vector<AttributionRow>& rows, std::size_t limit) {
  ojson list = ojson::array();
  for (const auto& row : rows) {
    if (list.size() == limit) break;
    list.push_back(ojson{{"name", row.name},
                         {"count", row.instances},
                         {"cpu_seconds", ops_seconds(row.cpu_ns)},
                         {"launches", row.launches},
                         {"gpu_activities", row.activities},
                         {"gpu_seconds", ops_seconds(row.gpu_ns)},
                         {"gpu_share_ratio", row.gpu_share},
                         {"launch_delay_mean_seconds", ops_seconds(row.launch_delay_mean_ns())},
                         {"launch_delay_max_seconds", ops_seconds(row.launch_delay_max_ns)}});
  }
  return list;
}

ojson path_elements_json(const std::vector<PathElement>& elements) {
  ojson list = ojson::array();
  for (const auto& e : elements) {
    list.push_back(ojson{{"kind", std::string(path_element_kind_name(e.kind))},
                         {"name", e.name},
                         {"count", e.count},
                         {"seconds", ops_seconds(e.total_ns)},
                         {"share_ratio", e.share}});
  }
  return list;
}

std::string element_text(const PathElement& e) {
  return fmt::format("{} {} {}", path_element_kind_name(e.kind), shortened(e.name, 60), ops_pct(e.share));
}

double share_of(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

void ops_summary_text(std::string& out, const RankReport& r, std::size_t rows) {
  auto o = std::back_inserter(out);
  const OpAttribution& ops = r.ops;
  if (ops.cpu_ops == 0 && ops.annotations.empty()) {
    fmt::format_to(o, "\n  GPU time by op: no cpu_op or annotation events in this trace (record_shapes/with_stack are not needed, "
                      "but the profiler must record CPU activity)\n");
  } else if (ops.activities > 0) {
    fmt::format_to(o, "\n  GPU time by op, top {} of {} (--by op for all): {}\n", std::min(rows, ops.ops.size()), ops.ops.size(),
                   attribution_coverage(ops));
    attribution_rows_text(out, ops.ops, rows, "op");
    fmt::format_to(o, "\n  GPU time by annotation, top {} of {} (--by annotation for all; nested ranges each count it)\n",
                   std::min(rows, ops.annotations.size()), ops.annotations.size());
    attribution_rows_text(out, ops.annotations, rows, "annotation");
  }
  const CriticalPathReport& cp = r.critical_path;
  if (cp.steps.empty()) {
    if (!cp.note.empty()) fmt::format_to(o, "\n  Critical path: {}\n", cp.note);
    return;
  }
  const std::size_t n = cp.steps.size();
  fmt::format_to(o, "\n  Critical path{}: {} bound ({} of {} {} GPU bound); the path is GPU work {}, CPU work and CUDA calls {}",
                 cp.whole_trace ? " of the whole trace" : "", cp.gpu_ns > cp.cpu_ns ? "GPU" : "CPU", cp.gpu_bound_steps, n,
                 cp.whole_trace ? "window" : "steps", ops_pct(share_of(cp.gpu_ns, cp.cpu_ns + cp.gpu_ns)),
                 ops_pct(share_of(cp.cpu_ns, cp.cpu_ns + cp.gpu_ns)));
  fmt::format_to(o, " (--critical-path for each step)\n");
  std::size_t shown = 0;
  for (const auto& e : cp.top) {
    if (shown++ == 3) break;
    fmt::format_to(o, "    {}\n", element_text(e));
  }
  if (!cp.note.empty()) fmt::format_to(o, "    note: {}\n", cp.note);
}

ojson attribution_json(const OpAttribution& ops, std::size_t rows) {
  return ojson{{"gpu_activities", ops.activities},
               {"gpu_seconds", ops_seconds(ops.activity_ns)},
               {"without_launch_activities", ops.without_launch},
               {"without_launch_seconds", ops_seconds(ops.without_launch_ns)},
               {"outside_ops_activities", ops.outside_ops},
               {"outside_ops_seconds", ops_seconds(ops.outside_ops_ns)},
               {"cpu_ops", ops.cpu_ops},
               {"misnested_cpu_events", ops.misnested},
               {"threads", ops.threads},
               {"op_count", ops.ops.size()},
               {"ops", attribution_rows_json(ops.ops, rows)},
               {"annotation_count", ops.annotations.size()},
               {"annotations", attribution_rows_json(ops.annotations, rows)}};
}

ojson critical_path_json(const CriticalPathReport& path) {
  ojson steps = ojson::array();
  for (const auto& s : path.steps) {
    steps.push_back(ojson{{"step", s.step},
                          {"start_seconds", ops_seconds(s.start_ns)},
                          {"duration_seconds", ops_seconds(s.duration_ns())},
                          {"cpu_range_seconds", ops_seconds(s.cpu_end_ns - s.start_ns)},
                          {"path_seconds", ops_seconds(s.length_ns)},
                          {"cpu_seconds", ops_seconds(s.cpu_ns)},
                          {"gpu_seconds", ops_seconds(s.gpu_ns)},
                          {"cpu_share_ratio", share_of(s.cpu_ns, s.length_ns)},  // of the path
                          {"gpu_share_ratio", share_of(s.gpu_ns, s.length_ns)},
                          {"bound", s.gpu_bound() ? "gpu" : "cpu"},
                          {"path_elements", s.elements},
                          {"top", path_elements_json(s.top)}});
  }
  ojson out{{"whole_trace", path.whole_trace},
            {"steps_seconds", ops_seconds(path.steps_ns)},
            {"cpu_seconds", ops_seconds(path.cpu_ns)},
            {"gpu_seconds", ops_seconds(path.gpu_ns)},
            {"gpu_bound_steps", path.gpu_bound_steps},
            {"bound", path.steps.empty() ? "none" : path.gpu_ns > path.cpu_ns ? "gpu" : "cpu"},
            {"top", path_elements_json(path.top)},
            {"steps", std::move(steps)}};
  if (!path.note.empty()) out["note"] = path.note;
  return out;
}

std::string attribution_view_text(const TraceReport& report, AttributionView view) {
  std::string out;
  auto o = std::back_inserter(out);
  const bool ops_view = view == AttributionView::kOps;
  for (const auto& r : report.ranks) {
    out += rank_heading(r);
    const auto& rows = ops_view ? r.ops.ops : r.ops.annotations;
    if (rows.empty()) {
      fmt::format_to(o, "no {} in this trace\n", ops_view ? "cpu_op events" : "user annotations");
      continue;
    }
    fmt::format_to(o, "GPU time by {}: {}\n", ops_view ? "op (the innermost op around each launch)" : "annotation (every range around each launch)",
                   attribution_coverage(r.ops));
    attribution_rows_text(out, rows, rows.size(), ops_view ? "op" : "annotation");
  }
  return out;
}

ojson attribution_view_json(const TraceReport& report, AttributionView view) {
  ojson ranks = ojson::array();
  for (const auto& r : report.ranks) {
    ojson entry = attribution_json(r.ops, 0);
    const auto& rows = view == AttributionView::kOps ? r.ops.ops : r.ops.annotations;
    entry.erase("ops");
    entry.erase("annotations");
    entry[view == AttributionView::kOps ? "ops" : "annotations"] = attribution_rows_json(rows, rows.size());
    ranks.push_back(ojson{{"file", r.file}, {"rank", display_rank(r) >= 0 ? ojson(display_rank(r)) : ojson(nullptr)}, {"by", std::move(entry)}});
  }
  return ojson{{"by", view == AttributionView::kOps ? "op" : "annotation"}, {"ranks", std::move(ranks)}};
}

std::string critical_path_view_text(const TraceReport& report) {
  std::string out;
  auto o = std::back_inserter(out);
  for (const auto& r : report.ranks) {
    out += rank_heading(r);
    const CriticalPathReport& cp = r.critical_path;
    if (cp.steps.empty()) {
      fmt::format_to(o, "no critical path: {}\n", cp.note.empty() ? "nothing to follow" : cp.note);
      continue;
    }
    fmt::format_to(o, "Critical path {}: the longest chain of CPU work, CUDA calls and GPU work through the {} (from its start to the "
                      "end of the GPU work it launched); CPU, GPU and elements as shares of the path\n",
                   cp.whole_trace ? "of the whole trace (no ProfilerStep annotations)" : "per step", cp.whole_trace ? "window" : "step");
    fmt::format_to(o, "  {:<22} {:>10} {:>10} {:>10} {:>6} {:>6} {:>5}  {}\n", "step", "CPU range", "with GPU", "path", "CPU", "GPU",
                   "bound", "top element");
    for (const auto& s : cp.steps) {
      fmt::format_to(o, "  {:<22} {:>10} {:>10} {:>10} {:>6} {:>6} {:>5}  {}\n", shortened(s.step, 22),
                     duration_text(s.cpu_end_ns - s.start_ns), duration_text(s.duration_ns()),
                     duration_text(s.length_ns), ops_pct(share_of(s.cpu_ns, s.length_ns)),
                     ops_pct(share_of(s.gpu_ns, s.length_ns)), s.gpu_bound() ? "GPU" : "CPU",
                     s.top.empty() ? std::string("-") : element_text(s.top.front()));
    }
    fmt::format_to(o, "\n  On the path over all {} ({} of {} of steps with their GPU work; GPU bound in {} of {}):\n",
                   cp.whole_trace ? "the window" : "steps", duration_text(cp.cpu_ns + cp.gpu_ns), duration_text(cp.steps_ns),
                   cp.gpu_bound_steps, cp.steps.size());
    fmt::format_to(o, "  (\"X (outside ops)\": CPU time inside annotation X but in no op: Python, or waiting on another thread, such as "
                      "autograd's during backward)\n");
    fmt::format_to(o, "  {:<8} {:>6} {:>11} {:>7}  {}\n", "kind", "share", "time", "count", "name");
    for (const auto& e : cp.top) {
      fmt::format_to(o, "  {:<8} {:>6} {:>11} {:>7}  {}\n", path_element_kind_name(e.kind), ops_pct(e.share), duration_text(e.total_ns),
                     e.count, shortened(e.name, 80));
    }
    if (!cp.note.empty()) fmt::format_to(o, "  note: {}\n", cp.note);
  }
  return out;
}

ojson critical_path_view_json(const TraceReport& report) {
  ojson ranks = ojson::array();
  for (const auto& r : report.ranks) {
    ranks.push_back(ojson{{"file", r.file},
                          {"rank", display_rank(r) >= 0 ? ojson(display_rank(r)) : ojson(nullptr)},
                          {"critical_path", critical_path_json(r.critical_path)}});
  }
  return ojson{{"ranks", std::move(ranks)}};
}

}  // namespace gpuscope::trace
