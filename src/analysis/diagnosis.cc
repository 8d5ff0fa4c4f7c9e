#include "analysis/diagnosis.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "analysis/evidence_text.h"
#include "analysis/findings.h"
#include "analysis/network_verdict.h"
#include "analysis/verdicts.h"
#include "analysis/window_stats.h"

namespace gpuscope::analysis {
namespace {

// A change of what the GPU does inside the window. Averaging a window across two phases describes
// neither (a 30-second window would hide a 20-second phase), so the verdict is drawn from the GPU's
// current regime: the longest steady run of readings at the window's end (every ratio within
// kSteadyTolerance), once it holds kMinRegimeReadings readings and differs from what came before. Until
// the new regime has that many, the one just left still speaks. A sawtooth or bursts are one regime.
constexpr double kSteadyTolerance = 0.15;
constexpr double kRegimeDifference = kSteadyTolerance / 2;
constexpr std::size_t kMinRegimeReadings = 3;
// Peers this little busy are no yardstick: comparing GPUs that mostly wait says nothing of who waits.
constexpr double kImbalanceMinPeerSmActive = 0.3;
// The readings health is judged on: faults stay until the GPU is reset, so the last value counts.
std::optional<Decision> unhealthy(const Segment& seg) {
  std::vector<std::string> causes;
  Decision d;
  d.verdict = Verdict::kUnhealthy;
  if (const auto up = seg.last(Signal::kGpuUp); up && *up < 0.5) {
    causes.push_back("the GPU stopped answering (lost)");
    d.evidence.push_back({"gpu_up", *up, "0: not answering"});
  }
  if (const auto xid = seg.last(Signal::kXid); xid && is_critical_xid(static_cast<int>(std::lround(*xid)))) {
    causes.push_back(fmt::format("XID {}", static_cast<int>(std::lround(*xid))));
    d.evidence.push_back({"last_xid", *xid, fmt::format("{:.0f}", *xid)});
  }
  if (const auto dbe = seg.last(Signal::kEccDbeVolatile); dbe && *dbe > 0) {
    causes.push_back(fmt::format("{:.0f} uncorrectable (double-bit) ECC errors since the driver loaded", *dbe));
    d.evidence.push_back({"ecc_dbe_volatile", *dbe, fmt::format("{:.0f}", *dbe)});
  }
  if (const auto fail = seg.last(Signal::kRowRemapFailure); fail && *fail > 0) {
    causes.push_back("a memory row could not be remapped");
    d.evidence.push_back({"row_remap_failure", *fail, "yes"});
  }
  if (causes.empty()) return std::nullopt;
  std::string summary;
  for (const auto& c : causes) summary += (summary.empty() ? "" : "; ") + c;
  d.summary = summary;
  d.fix = "Take the GPU out of service: drain it (no new jobs), then reset it (nvidia-smi -r) or reboot the node; "
          "if it recurs, or a row remap failed, have it replaced.";
  return d;
}

// The readings' times: GR engine active's, or utilization's where GR is not recorded.
const std::vector<Point>& reading_times(const GpuHistory& h) {
  return h.points(Signal::kGrActive).empty() ? h.points(Signal::kUtilization) : h.points(Signal::kGrActive);
}

// The segment the verdict is drawn from: the window, or the GPU's current (or just left) regime in it.
Segment choose_segment(const GpuHistory& h, std::int64_t at_ms, std::int64_t window_ms, const Thresholds& t) {
  const std::int64_t start = at_ms - window_ms;
  const Segment full(h, start, at_ms);
  const auto& all = reading_times(h);
  const auto first = std::upper_bound(all.begin(), all.end(), start,
                                      [](std::int64_t t0, const Point& p) { return t0 < p.t_ms; });
  const auto last = std::upper_bound(first, all.end(), at_ms, [](std::int64_t t0, const Point& p) { return t0 < p.t_ms; });
  const std::span<const Point> times(first, last);
  const std::size_t n = times.size();
  if (n < kMinRegimeReadings || full.steady(kSteadyTolerance) ||
      full.sawtooth(t.sawtooth_peak_sm_active, t.sawtooth_low_share)) {
    return full;
  }
  // The readings [begin, end) as a segment.
  auto segment = [&](std::size_t begin, std::size_t end) { return Segment(h, times[begin].t_ms - 1, times[end - 1].t_ms); };
  const std::size_t now = steady_run(h, times, n, kSteadyTolerance);
  if (now >= kMinRegimeReadings) {
    // One reading between two regimes straddles both: it belongs to neither.
    if (n - now < 2) return full;
    const Segment current = segment(n - now, n);
    const Segment before(h, start, times[n - now - 2].t_ms);
    if (!current.differs_from(before, kRegimeDifference)) return full;
    return Segment(h, times[n - now].t_ms - 1, at_ms);
  }
  // Just changed: the regime just left, if it was one.
  if (n < now + 1 + kMinRegimeReadings) return full;
  const std::size_t end = n - now - 1;
  const std::size_t left = steady_run(h, times, end, kSteadyTolerance);
  if (left < kMinRegimeReadings) return full;
  return segment(end - left, end);
}

// Idle since: the last reading with kernels (or copies) running before `at`.
void find_idle_since(const GpuHistory& h, std::int64_t at_ms, const Thresholds& t, GpuDiagnosis& out) {
  const bool by_gr = !h.points(Signal::kGrActive).empty();
  const auto& pts = by_gr ? h.points(Signal::kGrActive) : h.points(Signal::kUtilization);
  const double busy = by_gr ? t.idle_gr_active : t.idle_utilization_percent;
  const auto end = std::upper_bound(pts.begin(), pts.end(), at_ms, [](std::int64_t t0, const Point& p) { return t0 < p.t_ms; });
  for (auto it = end; it != pts.begin();) {
    --it;
    if (it->value >= busy) {
      out.since_ms = it->t_ms;
      return;
    }
  }
  if (pts.begin() != end) {
    out.since_ms = pts.front().t_ms;
    out.since_is_lower_bound = true;
  }
}

bool busy_verdict(Verdict v) {
  return v == Verdict::kLaunchBound || v == Verdict::kInputStarved || v == Verdict::kNoTensorCores ||
         v == Verdict::kMemoryBound || v == Verdict::kComputeBound;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A busy GPU of a job that is much less busy, or slower clocked, than the job's other busy GPUs on the
// host: the others wait for it at every collective.
void add_imbalance(std::vector<GpuDiagnosis>& gpus, std::span<const GpuHistory> histories, std::int64_t at_ms,
                   std::int64_t window_ms, const Thresholds& t) {
  struct Busy {
    std::size_t index;
    std::optional<double> sm, clock;
  };
  std::map<std::pair<std::string, std::string>, std::vector<Busy>> groups;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (!busy_verdict(gpus[i].verdict)) continue;
    // MIG instances are separate tenants of one GPU, not ranks of one job: no peers.
    if (!gpus[i].identity.mig_instance.empty()) continue;
    const Segment seg(histories[i], at_ms - window_ms, at_ms);
    groups[{gpus[i].identity.host, gpus[i].identity.job}].push_back(
        {i, seg.mean(Signal::kSmActive), seg.mean(Signal::kSmClock)});
  }
  for (auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    for (const Busy& me : members) {
      std::vector<double> sms, clocks;
      for (const Busy& other : members) {
        if (other.index == me.index) continue;
        if (other.sm) sms.push_back(*other.sm);
        if (other.clock) clocks.push_back(*other.clock);
      }
      GpuDiagnosis& g = gpus[me.index];
      if (me.sm && !sms.empty()) {
        const double peers = median(sms);
        if (peers >= kImbalanceMinPeerSmActive && *me.sm < t.imbalance_sm_share * peers) {
          // Without a job label the GPUs of a host may run different jobs: a comparison, not a claim
          // that the others wait.
          const bool job = !g.identity.job.empty();
          g.findings.push_back(
              {"imbalance_busy",
               fmt::format("less busy than its peers: SM active {} against a median {} on the {} other busy GPUs "
                           "of {}; {}",
                           text::ratio(*me.sm), text::ratio(peers), sms.size(),
                           job ? "its job" : "this host",
                           job ? "they wait for it at every collective"
                               : "if they run one job, they wait for it at every collective"),
               {{"sm_active", *me.sm, text::ratio(*me.sm)}, {"peers_sm_active", peers, text::ratio(peers)}},
               "Look at what differs on this GPU: its rank's input pipeline, its share of the batch, its PCIe/NUMA "
               "placement (nvidia-smi topo -m)."});
        }
      }
      if (me.clock && !clocks.empty()) {
        const double peers = median(clocks);
        if (*me.clock < t.clock_imbalance_share * peers) {
          g.findings.push_back(
              {"imbalance_clock",
               fmt::format("slower clocked than its peers: SM clock {} against a median {}; {}", text::mhz(*me.clock),
                           text::mhz(peers),
                           g.identity.job.empty() ? "a job across these GPUs runs at its pace" : "the job runs at its pace"),
               {{"sm_clock_mhz", *me.clock, text::mhz(*me.clock)}, {"peers_sm_clock_mhz", peers, text::mhz(peers)}},
               "Check why this board clocks lower: throttle reasons (power, thermal, hardware slowdown), its "
               "cooling, its power supply."});
        }
      }
    }
  }
}

// A GPU in MIG mode has no activity of its own to read (no utilization, its profiling ratios are its
// instances'): where its instances are diagnosed, its "unknown" says so rather than asking for fields
// that exist per instance.
void point_mig_gpus_at_their_instances(std::vector<GpuDiagnosis>& gpus) {
  std::map<std::pair<std::string, std::string>, std::size_t> instances;  // (host, UUID) -> how many
  for (const auto& g : gpus) {
    if (!g.identity.mig_instance.empty()) ++instances[{g.identity.host, g.identity.uuid}];
  }
  for (auto& g : gpus) {
    if (!g.identity.mig_instance.empty() || g.verdict != Verdict::kUnknown) continue;
    const auto it = instances.find({g.identity.host, g.identity.uuid});
    if (it == instances.end()) continue;
    g.summary = fmt::format("in MIG mode: its work is diagnosed per MIG instance ({} below)", it->second);
    g.fix.clear();
    g.undecided.clear();
  }
}

}  // namespace

Diagnosis diagnose(std::span<const GpuHistory> gpus, std::int64_t at_ms, std::int64_t window_ms,
                   const Thresholds& thresholds) {
  return diagnose(gpus, {}, at_ms, window_ms, thresholds);
}

Diagnosis diagnose(std::span<const GpuHistory> gpus, std::span<const PortHistory> ports, std::int64_t at_ms,
                   std::int64_t window_ms, const Thresholds& thresholds) {
  Diagnosis out;
  out.at_ms = at_ms;
  out.window_ms = window_ms;
  out.gpus.reserve(gpus.size());
  for (const GpuHistory& h : gpus) {
    GpuDiagnosis g;
    g.identity = h.identity;
    g.at_ms = at_ms;
    const Segment seg = choose_segment(h, at_ms, window_ms, thresholds);
    Decision decision = classify(seg, thresholds);
    g.segment_start_ms = seg.from_ms();
    g.segment_end_ms = seg.to_ms();
    g.readings = seg.readings();
    const Segment full(h, at_ms - window_ms, at_ms);
    if (auto sick = unhealthy(full)) {
      sick->undecided = std::move(decision.undecided);
      // What the GPU did beside the fault stays visible.
      sick->evidence.push_back({"activity", 0, std::string(verdict_id(decision.verdict))});
      decision = std::move(*sick);
    }
    g.verdict = decision.verdict;
    g.detail = std::move(decision.detail);
    g.summary = std::move(decision.summary);
    g.evidence = std::move(decision.evidence);
    g.fix = std::move(decision.fix);
    g.undecided = std::move(decision.undecided);
    g.findings = findings(seg, full, g.verdict, thresholds);
    if (g.verdict == Verdict::kIdle) find_idle_since(h, at_ms, thresholds, g);
    out.gpus.push_back(std::move(g));
  }
  add_imbalance(out.gpus, gpus, at_ms, window_ms, thresholds);
  point_mig_gpus_at_their_instances(out.gpus);
  apply_network_verdicts(out.gpus, gpus, ports, at_ms, window_ms);
  return out;
}

}  // namespace gpuscope::analysis
