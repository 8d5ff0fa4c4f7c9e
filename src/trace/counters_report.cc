#include "trace/counters_report.h"

#include <iterator>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

using json = nlohmann::ordered_json;

std::string counters_duration(std::int64_t ns) {
  const double v = static_cast<double>(ns);
  if (v >= 1e9) return fmt::format("{:.3f} s", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} ms", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} us", v / 1e3);
  return fmt::format("{} ns", ns);
}

std::string counters_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.1f} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

// GB/s in a column: two decimals, or three significant digits for the trickle of a small memset.
std::string counters_gbps(double v) {
  if (v == 0 || v >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.3g}", v);
}

}  // namespace

void device_counters_text(std::string& out, const DeviceReport& d) {
  auto o = std::back_inserter(out);
  const auto& q = d.queue_length;
  if (!q.streams.empty()) {
    fmt::format_to(o,
                   "\n  launch queue per stream: launched, not started (mean/p50/p95/max over its changes, as HTA; at {} "
                   "a launch blocks)\n",
                   q.max_queue_length);
    fmt::format_to(o, "  {:>8} {:>9} {:>7} {:>6} {:>6} {:>6} {:>14} {:>10}\n", "stream", "launches", "mean", "p50", "p95", "max",
                   "mean over time", fmt::format("at {}", q.max_queue_length));
    for (const auto& s : q.streams) {
      fmt::format_to(o, "  {:>8} {:>9} {:>7.2f} {:>6.1f} {:>6.1f} {:>6} {:>14.2f} {:>10}\n", s.stream, s.launches, s.mean, s.p50,
                     s.p95, s.max, s.time_weighted_mean, counters_duration(s.full_ns));
    }
    if (q.full_ns > 0) {
      fmt::format_to(o, "  the CPU was blocked on a full launch queue for {} in all\n", counters_duration(q.full_ns));
    }
  }
  const auto& b = d.memory_bandwidth;
  if (!b.directions.empty()) {
    fmt::format_to(o, "\n  memory bandwidth over time, GB/s (mean/p50/p95/max over its changes, as HTA)\n");
    fmt::format_to(o, "  {:<9} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>13} {:>10}\n", "direction", "copies", "bytes", "mean", "p50",
                   "p95", "max", "while copying", "copying");
    for (const auto& t : b.directions) {
      fmt::format_to(o, "  {:<9} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>13} {:>10}\n", t.direction, t.copies,
                     counters_bytes(static_cast<double>(t.bytes)), counters_gbps(t.mean_gbps), counters_gbps(t.p50_gbps),
                     counters_gbps(t.p95_gbps), counters_gbps(t.max_gbps), counters_gbps(t.active_gbps()),
                     counters_duration(t.active_ns));
    }
  }
}

std::vector<OverlayEvent> counter_overlay_events(const RankReport& rank) {
  std::vector<OverlayEvent> events;
  for (const auto& d : rank.devices) {
    append_queue_length_counters(d.queue_length, d.device, events);
    append_memory_bandwidth_counters(d.memory_bandwidth, d.device, events);
  }
  return events;
}

json queue_length_json(const QueueLengthReport& report) {
  json streams = json::array();
  for (const auto& s : report.streams) {
    streams.push_back(json{{"stream", s.stream},
                           {"launches", s.launches},
                           {"samples", s.samples},
                           {"mean", s.mean},
                           {"p50", s.p50},
                           {"p95", s.p95},
                           {"max", s.max},
                           {"time_weighted_mean", s.time_weighted_mean},
                           {"at_max_queue_length_seconds", static_cast<double>(s.full_ns) / 1e9}});
  }
  return json{{"max_queue_length", report.max_queue_length},
              {"blocked_on_full_queue_seconds", static_cast<double>(report.full_ns) / 1e9},
              {"streams", streams}};
}

json memory_bandwidth_json(const MemoryBandwidthReport& report) {
  json list = json::array();
  for (const auto& t : report.directions) {
    list.push_back(json{{"direction", t.direction},
                        {"copies", t.copies},
                        {"bytes", t.bytes},
                        {"samples", t.samples},
                        {"mean_bytes_per_second", t.mean_gbps * 1e9},
                        {"p50_bytes_per_second", t.p50_gbps * 1e9},
                        {"p95_bytes_per_second", t.p95_gbps * 1e9},
                        {"max_bytes_per_second", t.max_gbps * 1e9},
                        {"active_seconds", static_cast<double>(t.active_ns) / 1e9},
                        {"active_bytes_per_second", t.active_gbps() * 1e9}});
  }
  return list;
}

}  // namespace gpuscope::trace
