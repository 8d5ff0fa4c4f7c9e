#include "analysis/fabric_ports.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gpuscope::analysis {
namespace {

using namespace std::string_view_literals;

// The fabric collector's names (src/fabric/fabric_metrics.cc): what a port did, not how it is configured.
constexpr std::string_view kPortUp = "gpuscope_fabric_port_up";
constexpr std::string_view kTransmitBytes = "gpuscope_fabric_transmit_bytes_total";
constexpr std::string_view kLinkDowned = "gpuscope_fabric_link_downed_total";
constexpr std::string_view kErrors = "gpuscope_fabric_errors_total";
constexpr std::string_view kDiscards = "gpuscope_fabric_discards_total";

std::string fabric_host_of(const store::Labels& l) {
  for (std::string_view name : {"Hostname"sv, "hostname"sv, "instance"sv}) {
    if (auto v = l.get(name); !v.empty()) return std::string(v);
  }
  return {};
}

std::vector<std::string> split_gpus(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view one = text.substr(0, comma);
    if (!one.empty()) out.emplace_back(one);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<Point> finite_points(const std::vector<store::Sample>& samples) {
  std::vector<Point> out;
  out.reserve(samples.size());
  for (const auto& s : samples) {
    if (std::isfinite(s.value)) out.push_back({s.t_ms, s.value});
  }
  return out;
}

void add_labeled(std::vector<LabeledCounter>& counters, std::string_view label, std::vector<Point> points) {
  auto it = std::find_if(counters.begin(), counters.end(), [&](const LabeledCounter& c) { return c.label == label; });
  if (it == counters.end()) {
    counters.push_back({std::string(label), std::move(points)});
  } else {
    it->points.insert(it->points.end(), points.begin(), points.end());
    std::sort(it->points.begin(), it->points.end(), [](const Point& a, const Point& b) { return a.t_ms < b.t_ms; });
  }
}

}  // namespace

bool PortHistory::near_gpu(std::string_view gpu) const {
  return std::find(identity.gpus.begin(), identity.gpus.end(), gpu) != identity.gpus.end();
}

std::span<const std::string_view> fabric_series_names() {
  static constexpr std::string_view kNames[] = {kPortUp, kTransmitBytes, kLinkDowned, kErrors, kDiscards};
  return kNames;
}

const std::string& fabric_series_regex() {
  static const std::string regex = std::string(kPortUp) + "|" + std::string(kTransmitBytes) + "|" +
                                   std::string(kLinkDowned) + "|" + std::string(kErrors) + "|" + std::string(kDiscards);
  return regex;
}

std::vector<PortHistory> group_by_port(std::vector<store::SeriesSamples> series) {
  std::map<std::string, PortHistory> by_key;
  for (auto& s : series) {
    const std::string_view name = s.labels.metric_name();
    if (name != kPortUp && name != kTransmitBytes && name != kLinkDowned && name != kErrors && name != kDiscards) {
      continue;
    }
    const std::string_view device = s.labels.get("device");
    if (device.empty()) continue;
    const std::string host = fabric_host_of(s.labels);
    const std::string source(s.labels.get("source"));
    const std::string port(s.labels.get("port"));
    const std::string key = host + "/" + source + ":" + std::string(device) + (port.empty() ? "" : "/" + port);
    auto [it, fresh] = by_key.try_emplace(key);
    PortHistory& h = it->second;
    if (fresh) {
      h.identity.key = key;
      h.identity.host = host;
      h.identity.source = source;
      h.identity.device = std::string(device);
      h.identity.port = port;
      h.identity.link_layer = std::string(s.labels.get("link_layer"));
      h.identity.gpus = split_gpus(s.labels.get("gpu"));
    }
    std::vector<Point> points = finite_points(s.samples);
    if (name == kPortUp) {
      h.up = std::move(points);
    } else if (name == kTransmitBytes) {
      h.transmit_bytes = std::move(points);
    } else if (name == kLinkDowned) {
      h.link_downed = std::move(points);
    } else if (name == kErrors) {
      add_labeled(h.errors, s.labels.get("kind"), std::move(points));
    } else {
      add_labeled(h.discards, s.labels.get("direction"), std::move(points));
    }
  }
  std::vector<PortHistory> out;
  out.reserve(by_key.size());
  for (auto& [key, h] : by_key) out.push_back(std::move(h));
  return out;
}

std::optional<CounterIncrease> counter_increase(const std::vector<Point>& points, std::int64_t from_ms,
                                                std::int64_t to_ms) {
  const auto lo = std::upper_bound(points.begin(), points.end(), from_ms,
                                   [](std::int64_t t, const Point& p) { return t < p.t_ms; });
  const auto hi = std::upper_bound(lo, points.end(), to_ms, [](std::int64_t t, const Point& p) { return t < p.t_ms; });
  if (hi - lo < 2) return std::nullopt;
  const Point& first = *lo;
  const Point& last = *(hi - 1);
  return CounterIncrease{std::max(0.0, last.value - first.value), static_cast<double>(last.t_ms - first.t_ms) / 1000.0};
}

}  // namespace gpuscope::analysis
