#include "trace/report_units.h"
#include "trace/trace_report_text.h"

#include <iterator>

#include <fmt/format.h>

#include "trace/counters_report.h"
#include "trace/extras_report.h"
#include "trace/ops_report.h"
#include "trace/rank_comparison.h"

namespace gpuscope::trace {
namespace {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string pct(double r) { return fmt::format("{:.1f}%", 100 * r); }

void device_section(std::string& out, const DeviceReport& d) {
  auto o = std::back_inserter(out);
  fmt::format_to(o, "\nGPU {}{}: active window {}\n", d.device, d.name.empty() ? "" : fmt::format(" ({})", d.name),
                 duration_text(d.window_ns()));
  fmt::format_to(o, "  busy            {:>10}  {:>6}   (union of kernels, memcpy, memset)\n", duration_text(d.busy_ns),
                 pct(ratio(d.busy_ns, d.window_ns())));
  fmt::format_to(o, "  idle            {:>10}  {:>6}   device-wide: host wait {}, kernel wait {}, other {}\n", duration_text(d.idle_ns()),
                 pct(ratio(d.idle_ns(), d.window_ns())), pct(ratio(d.idle.host_wait_ns, d.idle_ns())),
                 pct(ratio(d.idle.kernel_wait_ns, d.idle_ns())), pct(ratio(d.idle.other_ns, d.idle_ns())));
  const std::int64_t all = d.computation_ns + d.communication_ns + d.memory_ns;
  fmt::format_to(o, "  computation     {:>10}  {:>6}   of GPU activity time\n", duration_text(d.computation_ns), pct(ratio(d.computation_ns, all)));
  fmt::format_to(o, "  communication   {:>10}  {:>6}   NCCL; {} of it overlaps computation\n", duration_text(d.communication_ns),
                 pct(ratio(d.communication_ns, all)), pct(ratio(d.overlap_ns, d.communication_union_ns)));
  fmt::format_to(o, "  memory          {:>10}  {:>6}   memcpy + memset\n", duration_text(d.memory_ns), pct(ratio(d.memory_ns, all)));
  const auto& l = d.launch;
  fmt::format_to(o, "  launches        {} runtime calls, mean {} (max {}); launch delay mean {}, p50 {}, p95 {}, max {}\n",
                 l.calls, duration_text(l.calls > 0 ? l.call_total_ns / static_cast<std::int64_t>(l.calls) : 0),
                 duration_text(l.call_max_ns), duration_text(l.delay_mean_ns), duration_text(l.delay_p50_ns), duration_text(l.delay_p95_ns),
                 duration_text(l.delay_max_ns));
  fmt::format_to(o, "  short kernels   {} of {} kernels under 10 us ({}), {} of kernel time\n", l.short_kernels, l.kernels,
                 pct(l.kernels > 0 ? static_cast<double>(l.short_kernels) / static_cast<double>(l.kernels) : 0),
                 pct(ratio(l.short_kernel_ns, d.kernel_total_ns)));
  fmt::format_to(o, "  data loading    {} of GPU idle time inside DataLoader annotations ({} of idle)\n",
                 duration_text(d.data_loading_idle_ns), pct(ratio(d.data_loading_idle_ns, d.idle_ns())));

  fmt::format_to(o, "\n  per stream (HTA's split: a stream's gap counts even while another stream is busy)\n");
  fmt::format_to(o, "  {:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>10}\n", "stream", "busy", "idle", "host wait", "kernel wait",
                 "other", "activities");
  for (const auto& s : d.streams) {
    fmt::format_to(o, "  {:>8} {:>11} {:>11} {:>11} {:>11} {:>11} {:>10}\n", s.stream, duration_text(s.busy_ns),
                   duration_text(s.window_ns - s.busy_ns), duration_text(s.idle.host_wait_ns), duration_text(s.idle.kernel_wait_ns),
                   duration_text(s.idle.other_ns), s.activities);
  }

  if (!d.top_kernels.empty()) {
    fmt::format_to(o, "\n  top {} kernels by total time\n  {:<60} {:>7} {:>11} {:>10} {:>10} {:>6}\n", d.top_kernels.size(), "kernel",
                   "count", "total", "mean", "max", "share");
    for (const auto& k : d.top_kernels) {
      fmt::format_to(o, "  {:<60} {:>7} {:>11} {:>10} {:>10} {:>6}\n", shortened(k.name, 60), k.count, duration_text(k.total_ns),
                     duration_text(k.count > 0 ? k.total_ns / static_cast<std::int64_t>(k.count) : 0), duration_text(k.max_ns), pct(k.share));
    }
  }
  if (!d.transfers.empty()) {
    fmt::format_to(o, "\n  {:<9} {:>7} {:>11} {:>11} {:>12}\n", "transfer", "count", "bytes", "time", "bandwidth");
    for (const auto& t : d.transfers) {
      fmt::format_to(o, "  {:<9} {:>7} {:>11} {:>11} {:>12}\n", t.direction, t.count, bytes_text(static_cast<double>(t.bytes)),
                     duration_text(t.duration_ns), bytes_text(t.bytes_per_second()) + "/s");
    }
  }
  device_extras_text(out, d);
  device_counters_text(out, d);
  fmt::format_to(o, "\n  Verdict: {}: {}.\n  Fix: {}.\n", verdict_name(d.verdict.kind), d.verdict.evidence, d.verdict.fix);
}

void rank_section(std::string& out, const RankReport& r) {
  auto o = std::back_inserter(out);
  const std::int64_t rank = display_rank(r);
  fmt::format_to(o, "== {}{}\n", r.file,
                 rank >= 0 ? fmt::format(" (rank {}{})", rank, r.world_size ? fmt::format(" of {}", *r.world_size) : "") : "");
  fmt::format_to(o, "read {} of {}, {} events ({} analysed, {} unused and skipped unparsed) in {:.2f} s",
                 bytes_text(static_cast<double>(r.parse.json_bytes)), r.parse.input, r.parse.event_objects, r.parse.complete_events,
                 r.parse.unparsed_events, r.parse_seconds);
  if (r.parse_seconds > 0) fmt::format_to(o, " ({}/s)", bytes_text(static_cast<double>(r.parse.json_bytes) / r.parse_seconds));
  fmt::format_to(o, "\n");
  if (r.parse.skipped_events > 0 || r.parse.skipped_bytes > 0 || r.parse.truncated) {
    fmt::format_to(o, "lenient: skipped {} events, {} bytes{}\n", r.parse.skipped_events, r.parse.skipped_bytes,
                   r.parse.truncated ? " (the file is truncated)" : "");
    for (const auto& p : r.parse.problems) fmt::format_to(o, "  {}\n", p);
  }
  fmt::format_to(o, "trace span {}", duration_text(r.span_ns()));
  if (r.steps.count > 0) {
    fmt::format_to(o, ", {} profiler steps, mean {}, median {} (max {})", r.steps.count, duration_text(r.steps.mean_ns),
                   duration_text(r.steps.median_ns), duration_text(r.steps.max_ns));
  }
  fmt::format_to(o, ", DataLoader annotations {}\n", duration_text(r.data_loading_ns));
  if (r.devices.empty()) fmt::format_to(o, "no GPU activity (kernels, memcpy, memset) in this trace\n");
  for (const auto& d : r.devices) device_section(out, d);
  per_step_text(out, r, 10);
  ops_summary_text(out, r, 5);
  if (!r.python_functions.empty()) {
    fmt::format_to(o, "\n  top {} python functions by inclusive time\n", r.python_functions.size());
    for (const auto& f : r.python_functions) {
      fmt::format_to(o, "  {:<60} {:>7} {:>11} {:>6} of span\n", shortened(f.name, 60), f.count, duration_text(f.total_ns), pct(f.share));
    }
  }
}

void comparison_table(std::string& out, const TraceReport& report) {
  auto o = std::back_inserter(out);
  const std::size_t n = report.ranks.size();
  const auto world = report.comparison.world_size;
  fmt::format_to(o, "{} ranks", n);
  // The comparison covers only the ranks here: say so when the job had more.
  if (world && *world > static_cast<std::int64_t>(n)) {
    fmt::format_to(o, " of {} (the other {} are not in the directory)", *world, *world - static_cast<std::int64_t>(n));
  }
  fmt::format_to(o, "\n\n{:>5} {:>11} {:>11} {:>7} {:>8} {:>8} {:>6} {:>11}  {}\n", "rank", "span", "gpu busy", "idle", "host wt",
                 "comm", "steps", "median step", "verdict");
  for (const auto& r : report.ranks) {
    const DeviceReport* d = r.main_device();
    std::int64_t busy = 0, window = 0, comm = 0, host = 0;
    for (const auto& dev : r.devices) {
      busy += dev.busy_ns;
      window += dev.window_ns();
      comm += dev.communication_union_ns;
      host += dev.idle.host_wait_ns;
    }
    const std::int64_t rank = display_rank(r);
    fmt::format_to(o, "{:>5} {:>11} {:>11} {:>7} {:>8} {:>8} {:>6} {:>11}  {}\n", rank >= 0 ? fmt::format("{}", rank) : "?",
                   duration_text(r.span_ns()), duration_text(busy), pct(ratio(window - busy, window)), pct(ratio(host, window - busy)),
                   pct(ratio(comm, window)), r.steps.count, r.steps.count > 0 ? duration_text(r.steps.median_ns) : std::string("-"),
                   d != nullptr ? verdict_name(d->verdict.kind) : std::string("no GPU work"));
  }
  if (report.comparison.straggler) fmt::format_to(o, "\nStraggler: {}.\n", report.comparison.straggler->evidence);
  if (report.comparison.no_straggler) fmt::format_to(o, "\nNo straggler: {}.\n", report.comparison.no_straggler->evidence);
}

}  // namespace

std::string trace_report_text(const TraceReport& report, const TextReportOptions& options) {
  std::string out;
  for (const auto& s : report.skipped_files) out += fmt::format("skipped (unreadable): {}\n", s);
  if (report.ranks.size() == 1) {
    rank_section(out, report.ranks.front());
    return out;
  }
  comparison_table(out, report);
  if (options.all_ranks_in_detail) {
    for (const auto& r : report.ranks) {
      out += "\n";
      rank_section(out, r);
    }
  } else {
    out += "\n";
    for (const auto& r : report.ranks) {
      const DeviceReport* d = r.main_device();
      if (d == nullptr) continue;
      const std::int64_t rank = display_rank(r);
      out += fmt::format("{}: {}: {}.\n", rank >= 0 ? fmt::format("rank {}", rank) : r.file, verdict_name(d->verdict.kind),
                         d->verdict.evidence);
    }
    out += "\n(--rank R shows one rank in full, --detail all of them)\n";
  }
  return out;
}

}  // namespace gpuscope::trace
