#include "trace/report_units.h"
#include "trace/extras_report.h"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

using json = nlohmann::ordered_json;

std::string extras_pct(double r) { return fmt::format("{:.0f}%", 100 * r); }

double extras_seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string extras_step_name(const StepRow& s) {
  return s.number ? fmt::format("#{}", *s.number) : fmt::format("({})", s.index + 1);
}

std::string extras_gap_kind_text(GapKind kind) {
  switch (kind) {
    case GapKind::kHostWait: return "host wait";
    case GapKind::kKernelWait: return "kernel wait";
    case GapKind::kOther: return "other";
  }
  return "other";
}

void extras_distribution_text(std::string& out, std::string_view label, const GapDistribution& g) {
  auto o = std::back_inserter(out);
  if (g.count == 0) {
    fmt::format_to(o, "    {:<12} no idle gaps\n", label);
    return;
  }
  fmt::format_to(o, "    {:<12} {:>6} {:>10} {:>10} {:>10} {:>10}  at +{} ({})\n", label, g.count, duration_text(g.p50_ns),
                 duration_text(g.p90_ns), duration_text(g.p99_ns), duration_text(g.longest_ns),
                 duration_text(g.longest_start_ns), extras_gap_kind_text(g.longest_kind));
}

json extras_distribution_json(const GapDistribution& g) {
  return json{{"count", g.count},
              {"total_seconds", extras_seconds(g.total_ns)},
              {"p50_seconds", extras_seconds(g.p50_ns)},
              {"p90_seconds", extras_seconds(g.p90_ns)},
              {"p99_seconds", extras_seconds(g.p99_ns)},
              {"longest_seconds", extras_seconds(g.longest_ns)},
              {"longest_start_offset_seconds", extras_seconds(g.longest_start_ns)},
              {"longest_kind", gap_kind_key(g.longest_kind)}};
}

json extras_step_json(const StepRow& s) {
  return json{{"number", s.number ? json(*s.number) : json(nullptr)},
              {"index", s.index},
              {"start_offset_seconds", extras_seconds(s.start_offset_ns)},
              {"duration_seconds", extras_seconds(s.duration_ns)},
              {"gpu_busy_seconds", extras_seconds(s.busy_ns)},
              {"gpu_idle_seconds", extras_seconds(s.idle_ns)},
              {"gpu_busy_ratio", ratio_of(s.busy_ns, s.duration_ns)},
              {"host_wait_seconds", extras_seconds(s.host_wait_ns)},
              {"kernels", s.kernels},
              {"kernel_seconds", extras_seconds(s.kernel_ns)},
              {"top_kernel", s.top_kernel.empty() ? json(nullptr) : json(s.top_kernel)},
              {"top_kernel_seconds", extras_seconds(s.top_kernel_ns)},
              {"gpu_tail_seconds", extras_seconds(s.gpu_tail_ns)},
              {"incomplete", s.incomplete.empty() ? json(nullptr) : json(s.incomplete)}};
}

}  // namespace

void device_extras_text(std::string& out, const DeviceReport& d) {
  auto o = std::back_inserter(out);
  const auto& ii = d.idle_intervals;
  fmt::format_to(o, "\n  idle gaps     {:>6} {:>10} {:>10} {:>10} {:>10}  longest starts\n", "count", "p50", "p90", "p99", "longest");
  extras_distribution_text(out, "device-wide", ii.device);
  for (const auto& s : ii.streams) extras_distribution_text(out, fmt::format("stream {}", s.stream), s.gaps);
  if (!ii.longest.empty()) {
    fmt::format_to(o, "  longest device-wide gaps, and what the CPU did meanwhile{}\n",
                   ii.cpu_events ? "" : " (no CPU ops or annotations in this trace: runtime calls and DataLoader only)");
    for (const auto& c : ii.longest) {
      fmt::format_to(o, "    {} at +{} ({}{}):", duration_text(c.gap.length()), duration_text(c.start_offset_ns),
                     extras_gap_kind_text(c.gap.kind), c.step ? fmt::format(", ProfilerStep#{}", *c.step) : "");
      bool any = false;
      if (!c.cpu_name.empty()) {
        fmt::format_to(o, " {} {} on thread {} ({} of the gap)", c.cpu_kind, shortened(c.cpu_name, 50), c.cpu_tid,
                       extras_pct(c.cpu_cover));
        any = true;
      }
      if (!c.runtime_name.empty()) {
        fmt::format_to(o, "{} {} ({})", any ? ";" : "", shortened(c.runtime_name, 40), extras_pct(c.runtime_cover));
        any = true;
      }
      if (c.data_loading_cover > 0) {
        fmt::format_to(o, "{} DataLoader {}", any ? ";" : "", extras_pct(c.data_loading_cover));
        any = true;
      }
      fmt::format_to(o, "{}\n", any ? "" : " nothing recorded on the CPU side");
    }
  }
  if (d.kernel_sequences.empty()) {
    fmt::format_to(o, "\n  repeated kernel sequences: none (no run of 2 or more kernels on a stream occurs twice)\n");
    return;
  }
  const std::size_t shown = std::min<std::size_t>(d.kernel_sequences.size(), 3);
  fmt::format_to(o, "\n  repeated kernel sequences (fusion or CUDA graph candidates), top {} by potential saving{}\n", shown,
                 shown < d.kernel_sequences.size() ? fmt::format(" ({} in --format json)", d.kernel_sequences.size()) : "");
  for (std::size_t i = 0; i < shown; ++i) {
    const KernelSequence& s = d.kernel_sequences[i];
    fmt::format_to(o, "    x{} on stream {}, {} kernels: GPU time {}, idle between them {}, {} launches saved (~{}): save ~{}\n",
                   s.repeats, s.stream, s.kernels.size(), duration_text(s.kernel_ns), duration_text(s.inner_idle_ns),
                   s.launches_saved, duration_text(s.launch_ns), duration_text(s.saving_ns()));
    for (std::size_t j = 0; j < s.kernels.size();) {  // a kernel repeated in a row is one line
      std::size_t same = 1;
      while (j + same < s.kernels.size() && s.kernels[j + same] == s.kernels[j]) ++same;
      fmt::format_to(o, "      {}{}\n", shortened(s.kernels[j], 100), same > 1 ? fmt::format("  (x{} in a row)", same) : "");
      j += same;
    }
  }
}

void per_step_text(std::string& out, const RankReport& r, std::size_t max_rows) {
  auto o = std::back_inserter(out);
  const StepsReport& p = r.per_step;
  if (r.steps.count == 0) {
    fmt::format_to(o, "\nper step: no ProfilerStep#N annotations in this trace (torch.profiler writes them at prof.step())\n");
    return;
  }
  fmt::format_to(o, "\nper step{}: busy and idle within each step's CPU interval; kernels the step launched\n",
                 p.device >= 0 ? fmt::format(" (GPU {})", p.device) : std::string(" (no GPU activity)"));
  std::vector<std::size_t> shown(p.rows.size());
  for (std::size_t i = 0; i < shown.size(); ++i) shown[i] = i;
  if (shown.size() > max_rows) {  // the longest steps, in step order
    std::partial_sort(shown.begin(), shown.begin() + static_cast<std::ptrdiff_t>(max_rows), shown.end(),
                      [&](std::size_t a, std::size_t b) { return p.rows[a].duration_ns > p.rows[b].duration_ns; });
    shown.resize(max_rows);
    std::sort(shown.begin(), shown.end());
  }
  fmt::format_to(o, "  {:>8} {:>10} {:>10} {:>10} {:>6} {:>10} {:>7} {:>10}  {}\n", "step", "start", "duration", "gpu busy", "busy",
                 "host wait", "kernels", "kernel t", "top kernel");
  for (const std::size_t i : shown) {
    const StepRow& s = p.rows[i];
    fmt::format_to(o, "  {:>8} {:>10} {:>10} {:>10} {:>6} {:>10} {:>7} {:>10}  {}{}\n", extras_step_name(s),
                   "+" + duration_text(s.start_offset_ns), duration_text(s.duration_ns), duration_text(s.busy_ns),
                   extras_pct(ratio_of(s.busy_ns, s.duration_ns)), duration_text(s.host_wait_ns), s.kernels,
                   duration_text(s.kernel_ns), s.top_kernel.empty() ? "-" : shortened(s.top_kernel, 40),
                   s.incomplete.empty() ? "" : "  [incomplete]");
  }
  if (shown.size() < p.rows.size()) {
    fmt::format_to(o, "  ({} longest of {} steps; --format json has them all)\n", shown.size(), p.rows.size());
  }
  bool any_work = false;
  for (const auto& s : p.rows) any_work = any_work || s.kernels > 0;
  if (!p.rows.empty() && !any_work) fmt::format_to(o, "  no step launched a kernel that the trace recorded\n");
  // The GPU running behind the CPU: what is busy within a step's interval is earlier steps' work.
  const StepRow* lag = nullptr;
  for (const auto& s : p.rows) {
    if (s.gpu_tail_ns > s.duration_ns && (lag == nullptr || s.gpu_tail_ns > lag->gpu_tail_ns)) lag = &s;
  }
  if (lag != nullptr) {
    fmt::format_to(o, "  the GPU runs behind the CPU: work step {} launched ran until {} after the step ended (busy within a step's "
                      "interval is other steps' work; the kernel time column is the step's own)\n",
                   extras_step_name(*lag), duration_text(lag->gpu_tail_ns));
  }
  for (std::size_t i = 0; i < p.rows.size(); ++i) {
    if (!p.rows[i].incomplete.empty()) {
      fmt::format_to(o, "  step {} looks incomplete: {} (--drop-incomplete leaves it out)\n", extras_step_name(p.rows[i]),
                     p.rows[i].incomplete);
    }
  }
  for (std::size_t i = 0; i < p.dropped.size(); ++i) {
    fmt::format_to(o, "  dropped step {}: {}\n", extras_step_name(p.dropped[i]), p.dropped[i].incomplete);
  }
  if (r.steps.last_excluded) {
    fmt::format_to(o, "  The last step{} is left out of the step statistics, these rows and the critical path, as HTA does "
                      "(--exclude-last-step).\n",
                   r.steps.excluded_number ? fmt::format(" (#{})", *r.steps.excluded_number) : std::string());
  } else {
    fmt::format_to(o, "  The step statistics above count all {} steps; HTA leaves out the last by default "
                      "(--exclude-last-step does too).\n",
                   r.steps.count);
  }
}

json idle_intervals_json(const IdleIntervalsReport& r) {
  json streams = json::array();
  for (const auto& s : r.streams) {
    json g{{"stream", s.stream}};
    g.update(extras_distribution_json(s.gaps));
    streams.push_back(std::move(g));
  }
  json longest = json::array();
  for (const auto& c : r.longest) {
    json cpu = c.cpu_name.empty() ? json(nullptr)
                                  : json{{"name", c.cpu_name}, {"kind", c.cpu_kind}, {"tid", c.cpu_tid}, {"cover_ratio", c.cpu_cover}};
    json runtime = c.runtime_name.empty() ? json(nullptr) : json{{"name", c.runtime_name}, {"cover_ratio", c.runtime_cover}};
    longest.push_back(json{{"start_offset_seconds", extras_seconds(c.start_offset_ns)},
                           {"seconds", extras_seconds(c.gap.length())},
                           {"kind", gap_kind_key(c.gap.kind)},
                           {"step", c.step ? json(*c.step) : json(nullptr)},
                           {"cpu", cpu},
                           {"runtime_call", runtime},
                           {"data_loading_ratio", c.data_loading_cover}});
  }
  return json{{"device_wide", extras_distribution_json(r.device)},
              {"streams", streams},
              {"longest_device_wide", longest},
              {"cpu_events_in_trace", r.cpu_events}};
}

json kernel_sequences_json(const std::vector<KernelSequence>& sequences) {
  json list = json::array();
  for (const auto& s : sequences) {
    list.push_back(json{{"stream", s.stream},
                        {"kernels", s.kernels},
                        {"length", s.kernels.size()},
                        {"repeats", s.repeats},
                        {"kernel_seconds", extras_seconds(s.kernel_ns)},
                        {"inner_idle_seconds", extras_seconds(s.inner_idle_ns)},
                        {"launches_saved", s.launches_saved},
                        {"launch_seconds", extras_seconds(s.launch_ns)},
                        {"saving_seconds", extras_seconds(s.saving_ns())}});
  }
  return list;
}

json per_step_json(const RankReport& r) {
  const StepsReport& p = r.per_step;
  json rows = json::array(), dropped = json::array();
  for (const auto& s : p.rows) rows.push_back(extras_step_json(s));
  for (const auto& s : p.dropped) dropped.push_back(extras_step_json(s));
  return json{{"device", p.device >= 0 ? json(p.device) : json(nullptr)},
              {"steps", rows},
              {"drop_incomplete", p.drop_incomplete},
              {"dropped", dropped},
              {"unattributed_activities", p.unattributed},
              // The rank's "steps" statistics count every ProfilerStep, or all but the last as HTA does.
              {"step_statistics_convention", r.steps.last_excluded ? "last_step_excluded" : "all_steps"},
              {"excluded_step", r.steps.excluded_number ? json(*r.steps.excluded_number) : json(nullptr)}};
}

}  // namespace gpuscope::trace
