#include "analysis/network_verdict.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/evidence_text.h"
#include "analysis/window_stats.h"

namespace gpuscope::analysis {
namespace {

// A port under half the median of its host's peers is the network straggler: collectives spread their
// traffic evenly over the rails, so one far behind is slow, not idle (the rule pack's
// FabricNetworkStraggler, same factor).
constexpr double kBehindPeersShare = 0.5;
// Peers that move less than this are no job's collectives (the same floor as the rule): nothing to fall
// behind of.
constexpr double kNetPeersMinBytesPerSecond = 1e6;
// A port that moves at least this much carries a job's traffic: the GPU behind it communicates through
// it. (A management NIC's chatter stays below; NCCL over one rail moves GB/s.)
constexpr double kNetCommunicatingBytesPerSecond = 1e6;
// NVLink traffic that says the GPU takes part in collectives without a busy NIC (a port that falls
// behind may move almost nothing): a GB/s, a sliver of one H100 link and far above idle chatter.
constexpr double kNetCommunicatingNvlinkBytes = 1e9;

double net_median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string per_second(double v) { return fmt::format("{:.3g}/s", v); }

// The port's state at the end of the range: up, down, or absent (no reading of it in the range, or none
// in the host's latest fabric reading: its series ended, so it vanished from what the agent reads).
enum class PortNow { kUp, kDown, kAbsent };

PortNow port_now(const PortHistory& p, std::int64_t from_ms, std::int64_t to_ms, std::int64_t host_latest_ms) {
  const auto it = std::upper_bound(p.up.begin(), p.up.end(), to_ms, [](std::int64_t t, const Point& x) { return t < x.t_ms; });
  if (it == p.up.begin()) return PortNow::kAbsent;
  const Point& last = *std::prev(it);
  if (last.t_ms <= from_ms || last.t_ms < host_latest_ms) return PortNow::kAbsent;
  return last.value >= 0.5 ? PortNow::kUp : PortNow::kDown;
}

std::string trouble_text(const PortTrouble& t) {
  std::vector<std::string> parts;
  parts.reserve(4);
  for (const auto& [kind, rate] : t.error_rates) parts.push_back(fmt::format("{} {} errors", per_second(rate), kind));
  for (const auto& [direction, rate] : t.discard_rates) {
    parts.push_back(fmt::format("{} {} drops", per_second(rate), direction));
  }
  if (t.link_downs > 0) {
    parts.push_back(fmt::format("{:.0f} link down{}", t.link_downs, t.link_downs == 1 ? "" : "s"));
  }
  if (t.behind_peers) {
    parts.push_back(fmt::format("sends {} against a median {} of the host's {} ports", text::rate(*t.transmit_bytes_per_second),
                                text::rate(*t.peers_median_bytes_per_second), t.port->identity.link_layer));
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  }
  return out;
}

std::string network_fix(const std::string& device) {
  return fmt::format(
      "Check the port's transceiver and cable: ibstat {0}, mlxlink -d {0} -m / -e (its BER, temperature, lanes), "
      "perfquery -x, the switch side's counters; clean or reseat the fibre, swap the optic or cable. Meanwhile move "
      "the job off this node (drain it from multi-node jobs): every rank waits for this rail at each collective.",
      device);
}

}  // namespace

std::vector<PortTrouble> port_troubles(std::span<const PortHistory> ports, std::int64_t at_ms, std::int64_t lookback_ms) {
  const std::int64_t from = at_ms - lookback_ms;
  // Each host's latest fabric reading up to at_ms: the time every port it still has was read at.
  std::map<std::string, std::int64_t> host_latest;
  for (const PortHistory& p : ports) {
    const auto it = std::upper_bound(p.up.begin(), p.up.end(), at_ms, [](std::int64_t t, const Point& x) { return t < x.t_ms; });
    if (it == p.up.begin()) continue;
    auto& latest = host_latest[p.identity.host];
    latest = std::max(latest, std::prev(it)->t_ms);
  }
  std::vector<PortTrouble> out;
  out.reserve(ports.size());
  for (const PortHistory& p : ports) {
    PortTrouble t;
    t.port = &p;
    const auto latest = host_latest.find(p.identity.host);
    const PortNow now = port_now(p, from, at_ms, latest == host_latest.end() ? 0 : latest->second);
    const auto downs = counter_increase(p.link_downed, from, at_ms);
    // Down now after a link down it counted in the lookback: a flap in progress, judged like an up port.
    // Down without one (disabled, gone from sysfs: its counters frozen) or absent: not judged.
    const bool flapping = now == PortNow::kDown && downs && downs->increase > 0;
    if (now != PortNow::kUp && !flapping) {
      out.push_back(std::move(t));
      continue;
    }
    for (const LabeledCounter& c : p.errors) {
      if (const auto inc = counter_increase(c.points, from, at_ms); inc && inc->increase > 0) {
        t.error_rates.emplace_back(c.label, inc->per_second());
      }
    }
    // Netdev drops are routine on Ethernet (a full socket buffer, an unknown protocol): only the RDMA
    // ports' drops are the fabric's, as in the rule pack's FabricPortDrops.
    if (p.identity.source == "rdma") {
      for (const LabeledCounter& c : p.discards) {
        if (const auto inc = counter_increase(c.points, from, at_ms); inc && inc->increase > 0) {
          t.discard_rates.emplace_back(c.label, inc->per_second());
        }
      }
    }
    if (downs) t.link_downs = downs->increase;
    if (const auto inc = counter_increase(p.transmit_bytes, from, at_ms); inc && inc->seconds > 0) {
      t.transmit_bytes_per_second = inc->per_second();
    }
    out.push_back(std::move(t));
  }
  // Behind its peers: the RDMA ports of one host and link layer that are up, two at least.
  std::map<std::tuple<std::string, std::string>, std::vector<PortTrouble*>> peers;
  for (PortTrouble& t : out) {
    if (t.port->identity.source != "rdma" || !t.transmit_bytes_per_second) continue;
    peers[{t.port->identity.host, t.port->identity.link_layer}].push_back(&t);
  }
  for (auto& [key, group] : peers) {
    if (group.size() < 2) continue;
    std::vector<double> rates;
    for (const PortTrouble* t : group) rates.push_back(*t->transmit_bytes_per_second);
    const double median = net_median(rates);
    if (median <= kNetPeersMinBytesPerSecond) continue;
    for (PortTrouble* t : group) {
      t->peers_median_bytes_per_second = median;
      t->behind_peers = *t->transmit_bytes_per_second < kBehindPeersShare * median;
    }
  }
  return out;
}

void apply_network_verdicts(std::vector<GpuDiagnosis>& gpus, std::span<const GpuHistory> histories,
                            std::span<const PortHistory> ports, std::int64_t at_ms, std::int64_t window_ms) {
  if (ports.empty()) return;
  const std::vector<PortTrouble> troubles = port_troubles(ports, at_ms, std::max(window_ms, kFabricLookbackMs));
  for (std::size_t i = 0; i < gpus.size() && i < histories.size(); ++i) {
    GpuDiagnosis& g = gpus[i];
    if (g.verdict != Verdict::kLaunchBound && g.verdict != Verdict::kInputStarved) continue;
    std::vector<const PortTrouble*> near;
    double port_traffic = 0;
    for (const PortTrouble& t : troubles) {
      if (t.port->identity.host != g.identity.host || !t.port->near_gpu(g.identity.gpu)) continue;
      port_traffic += t.transmit_bytes_per_second.value_or(0);
      if (!t.empty()) near.push_back(&t);
    }
    if (near.empty()) continue;
    const Segment window(histories[i], at_ms - window_ms, at_ms);
    const double nvlink =
        window.mean(Signal::kNvlinkRxBytes).value_or(0) + window.mean(Signal::kNvlinkTxBytes).value_or(0);
    if (port_traffic < kNetCommunicatingBytesPerSecond && nvlink < kNetCommunicatingNvlinkBytes) continue;

    const Verdict waited_as = g.verdict;
    std::string ports_text, troubles_text;
    std::vector<Evidence> evidence;
    for (const PortTrouble* t : near) {
      const std::string name = t->port->identity.name();
      ports_text += (ports_text.empty() ? "" : ", ") + name;
      troubles_text += fmt::format("{}NIC port {} ({}) counts, over the last {:.0f} min, {}",
                                   troubles_text.empty() ? "" : "; ", name, t->port->identity.link_layer,
                                   static_cast<double>(kFabricLookbackMs) / 60'000, trouble_text(*t));
      evidence.push_back({"port", 0, fmt::format("{} ({}, GPU {} behind its PCIe switch)", name,
                                                 t->port->identity.link_layer, fmt::join(t->port->identity.gpus, ","))});
      for (const auto& [kind, rate] : t->error_rates) {
        evidence.push_back({fmt::format("errors_{}_per_second", kind), rate, fmt::format("{} on {}", per_second(rate), name)});
      }
      for (const auto& [direction, rate] : t->discard_rates) {
        evidence.push_back(
            {fmt::format("discards_{}_per_second", direction), rate, fmt::format("{} on {}", per_second(rate), name)});
      }
      if (t->link_downs > 0) {
        evidence.push_back({"link_downs", t->link_downs,
                            fmt::format("{:.0f} on {} in the last {:.0f} min", t->link_downs, name,
                                        static_cast<double>(kFabricLookbackMs) / 60'000)});
      }
      if (t->transmit_bytes_per_second) {
        evidence.push_back({"transmit_bytes_per_second", *t->transmit_bytes_per_second,
                            fmt::format("{} on {}", text::rate(*t->transmit_bytes_per_second), name)});
      }
      if (t->peers_median_bytes_per_second) {
        evidence.push_back({"peers_median_transmit_bytes_per_second", *t->peers_median_bytes_per_second,
                            text::rate(*t->peers_median_bytes_per_second)});
      }
    }
    const auto sm = window.mean(Signal::kSmActive);
    const auto gr = window.mean(Signal::kGrActive);
    std::string waits = "the GPU waits on communication";
    if (sm && gr) {
      waits += fmt::format(" (SM active {} while its kernels hold the GR engine {} of the time", text::ratio(*sm),
                           text::share(*gr));
      waits += nvlink >= kNetCommunicatingNvlinkBytes ? fmt::format(", NVLink {})", text::rate(nvlink)) : ")";
    }
    g.summary = fmt::format("{} while {}", waits, troubles_text);
    g.verdict = Verdict::kNetworkBound;
    g.detail = ports_text;
    g.fix = network_fix(near.front()->port->identity.device);
    if (sm) evidence.push_back({"sm_active", *sm, text::ratio(*sm)});
    if (gr) evidence.push_back({"gr_engine_active", *gr, text::ratio(*gr)});
    if (nvlink > 0) evidence.push_back({"nvlink_bytes_per_second", nvlink, text::rate(nvlink)});
    // What the GPU looked like without the fabric, as the unhealthy verdict keeps it.
    evidence.push_back({"activity", 0, std::string(verdict_id(waited_as))});
    g.evidence = std::move(evidence);
  }
}

}  // namespace gpuscope::analysis
