#include "analysis/cost_report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <span>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

#include "analysis/diagnosis_report.h"
#include "analysis/gpu_signals.h"
#include "analysis/mig_cost.h"
#include "analysis/window_stats.h"

namespace gpuscope::analysis {
namespace {

constexpr std::string_view kEnergySeries = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
constexpr std::string_view kPriceSeries = "gpuscope_gpu_hourly_price_dollars";
constexpr std::string_view kProcessMemorySeries = "gpuscope_process_memory_bytes";
constexpr std::string_view kProcessSmSeries = "gpuscope_process_sm_utilization_ratio";
constexpr std::string_view kMigSlicesSeries = "gpuscope_mig_instance_slices";
constexpr std::string_view kUnallocatedRow = "(unallocated MIG slices)";
// The series whose samples mark a reading, and so carry the labels a reading had (hpc_job changes
// with the job on the GPU): gpu_up is written at every reading, up or down; the others where it is not
// recorded (a Prometheus scraping dcgm-exporter).
constexpr std::array<std::string_view, 4> kReadingSeries{"gpuscope_gpu_up", "DCGM_FI_DEV_GPU_UTIL",
                                                         "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE"};
constexpr std::array<Signal, 12> kSignalsRead{
    Signal::kGrActive,    Signal::kSmActive,    Signal::kUtilization, Signal::kTensorActive,
    Signal::kDramActive,  Signal::kPcieRxBytes, Signal::kPcieTxBytes, Signal::kFbUsed,
    Signal::kFbFree,      Signal::kFbReserved,  Signal::kGpuUp,       Signal::kPower};
// Right-sizing weighs the 99th percentile of the activity ratios: a workload's sustained peak, not a
// single reading's spike (one reading in a hundred may exceed it).
constexpr double kPeakQuantile = 0.99;
constexpr double kMonthHours = 730;  // 365 × 24 / 12
constexpr std::string_view kNoProcess = "(no process)";
constexpr std::string_view kNoLabel = "(none)";
// A share of a GPU's time below this (idle, or SMs idle while busy) is not worth a word in the wasters.
constexpr double kWasteWorthNaming = 0.01;

// A quantile over a stream without keeping it: counts in fixed bins over [0, top].
class QuantileBins {
 public:
  explicit QuantileBins(double top, std::size_t bins = 2000) : top_(top), counts_(bins + 1, 0) {}
  void add(double v) {
    if (!std::isfinite(v)) return;
    const double x = std::clamp(v / top_, 0.0, 1.0);
    ++counts_[static_cast<std::size_t>(std::lround(x * static_cast<double>(counts_.size() - 1)))];
    ++n_;
  }
  std::optional<double> quantile(double q) const {
    if (n_ == 0) return std::nullopt;
    const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n_)));
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= std::max<std::uint64_t>(rank, 1)) return top_ * static_cast<double>(i) / static_cast<double>(counts_.size() - 1);
    }
    return top_;
  }

 private:
  double top_;
  std::vector<std::uint64_t> counts_;
  std::uint64_t n_ = 0;
};

// The value a series had at t: its latest point at or before t, no older than max_age. Walks forward
// only (readings come in time order).
class Cursor {
 public:
  Cursor() = default;
  explicit Cursor(std::span<const Point> points) : points_(points) {}
  std::optional<double> at(std::int64_t t, std::int64_t max_age) {
    while (i_ < points_.size() && points_[i_].t_ms <= t) ++i_;
    if (i_ == 0) return std::nullopt;
    const Point& p = points_[i_ - 1];
    if (t - p.t_ms > max_age) return std::nullopt;
    return p.value;
  }
  // The latest point in (after, t], if any.
  std::optional<double> within(std::int64_t after, std::int64_t t) {
    while (i_ < points_.size() && points_[i_].t_ms <= t) ++i_;
    if (i_ == 0 || points_[i_ - 1].t_ms <= after) return std::nullopt;
    return points_[i_ - 1].value;
  }

 private:
  std::span<const Point> points_;
  std::size_t i_ = 0;
};

std::vector<Point> points_of(const store::SeriesSamples& s) {
  std::vector<Point> out;
  out.reserve(s.samples.size());
  for (const auto& x : s.samples) {
    if (std::isfinite(x.value)) out.push_back({x.t_ms, x.value});
  }
  return out;
}

void merge_points(std::vector<Point>& into, std::vector<Point> more) {
  if (into.empty()) {
    into = std::move(more);
    return;
  }
  into.insert(into.end(), more.begin(), more.end());
  std::ranges::stable_sort(into, {}, &Point::t_ms);
}

struct ProcessSeries {
  std::string name;  // the row name
  std::vector<Point> memory;
  std::vector<Point> sm;
};

struct LabelPoint {
  std::int64_t t_ms;
  std::string value;
};

// What one read span holds for one GPU beyond its signals.
struct SpanExtras {
  std::vector<Point> energy;
  std::vector<Point> price;
  std::vector<Point> mig_slices;  // a MIG instance's gpuscope_mig_instance_slices
  std::map<std::string, ProcessSeries> processes;  // by row name
  std::vector<LabelPoint> label;                    // kLabel: the label's value at each reading
};

// A GPU's state carried from one read span to the next.
struct GpuState {
  GpuCost cost;
  std::optional<CostReading> prev;
  QuantileBins sm{1.0}, tensor{1.0}, dram{1.0}, utilization{100.0};
  QuantileBins pcie{128e9};  // bytes/s: twice a PCIe 5.0 x16 link
  std::optional<double> peak_memory_mib;
  std::optional<double> memory_total_mib;
  std::set<std::string> seen_label;  // kLabel: whether any reading series carried the label
};

std::string process_row_name(const store::Labels& l) {
  std::string name = fmt::format("pid {} {}", l.get("pid"), l.get("process_name"));
  const std::string_view container = l.get("container_id");
  if (!container.empty()) name += fmt::format(" [container {}]", container.substr(0, 12));
  return name;
}

std::string slices_text(unsigned lo, unsigned hi, unsigned total) {
  return lo == hi ? fmt::format("{}/{}", lo, total) : fmt::format("{}-{}/{}", lo, hi, total);
}

std::string gpu_row_name(const GpuCost& g, bool with_host) { return gpu_cost_name(g, with_host); }

std::string names_regex(const CostQuery& q) {
  std::vector<std::string_view> names;
  for (Signal s : kSignalsRead) {
    for (std::string_view n : signal_series(s)) names.push_back(n);
  }
  names.push_back(kEnergySeries);
  names.push_back(kPriceSeries);
  names.push_back(kMigSlicesSeries);
  if (q.by == CostGrouping::kProcess) {
    names.push_back(kProcessMemorySeries);
    names.push_back(kProcessSmSeries);
  }
  std::ranges::sort(names);
  const auto [first, last] = std::ranges::unique(names);
  names.erase(first, last);
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += '|';
    out += n;
  }
  return out;
}

class ReportBuilder {
 public:
  explicit ReportBuilder(const CostQuery& q) : q_(q), tier_name_(model::price_tier_name(q.tier)) {}

  std::expected<void, std::string> read(const ReadingSource& source) {
    const std::string regex = names_regex(q_);
    for (std::int64_t from = q_.from_ms; from < q_.to_ms; from += q_.read_span_ms) {
      const std::int64_t to = std::min(q_.to_ms, from + q_.read_span_ms);
      // Reach back one gap so the span's first reading sees the values of the span before it.
      auto series = source.select(regex, from - q_.rules.max_gap_ms, to);
      if (!series) return std::unexpected(series.error());
      take_span(std::move(*series), from, to);
    }
    return {};
  }

  std::expected<CostReport, std::string> finish() {
    CostReport r;
    r.from_ms = q_.from_ms;
    r.to_ms = q_.to_ms;
    r.tier = q_.tier;
    r.by = q_.by;
    r.label = q_.label;
    r.projection_span_ms = std::min(q_.projection_span_ms, q_.to_ms - q_.from_ms);
    if (q_.by == CostGrouping::kLabel && !gpus_.empty() && !label_seen_) {
      std::string names;
      for (const auto& n : labels_seen_) names += (names.empty() ? "" : ", ") + n;
      return std::unexpected(fmt::format("unknown label '{}': no GPU series carries it (they carry {})", q_.label, names));
    }
    std::set<std::string> hosts;
    for (auto& [key, st] : gpus_) hosts.insert(st.cost.host);
    std::vector<GpuState*> ordered;
    for (auto& [key, st] : gpus_) ordered.push_back(&st);
    std::ranges::sort(ordered, [](const GpuState* a, const GpuState* b) {
      if (a->cost.host != b->cost.host) return a->cost.host < b->cost.host;
      if (a->cost.gpu.size() != b->cost.gpu.size()) return a->cost.gpu.size() < b->cost.gpu.size();
      if (a->cost.gpu != b->cost.gpu) return a->cost.gpu < b->cost.gpu;
      return a->cost.key < b->cost.key;  // a GPU, then its MIG instances, then its unallocated slices
    });
    bool any_price = false;
    double recent = 0;
    for (GpuState* st : ordered) {
      GpuCost g = st->cost;
      g.peaks.model = g.model;
      g.peaks.observed_seconds = g.held_seconds > 0 ? g.held_seconds : g.totals.seconds;
      g.peaks.memory_total_mib = st->memory_total_mib;
      g.peaks.peak_memory_mib = st->peak_memory_mib;
      g.peaks.peak_sm_active = st->sm.quantile(kPeakQuantile);
      g.peaks.peak_tensor_active = st->tensor.quantile(kPeakQuantile);
      g.peaks.peak_dram_active = st->dram.quantile(kPeakQuantile);
      g.peaks.peak_pcie_bytes_per_second = st->pcie.quantile(kPeakQuantile);
      g.peaks.peak_utilization_percent = st->utilization.quantile(kPeakQuantile);
      g.peaks.current_usd_per_hour = g.usd_per_hour;
      r.total += g.totals;
      if (g.totals.priced_seconds > 0) any_price = true;
      recent += g.recent_dollars;
      const bool mig_part = !g.mig_instance.empty() || g.mig_unallocated;
      if (g.price_source == PriceSource::kNone && !mig_part && (g.totals.seconds > 0 || g.mig_split)) {
        r.notes.push_back(fmt::format("{} ({}): no price in tier {} (none recorded, none in the catalog): its hours are "
                                      "counted, not its dollars",
                                      gpu_row_name(g, hosts.size() > 1), g.model.empty() ? "model unknown" : g.model,
                                      tier_name_));
      }
      // A GPU in MIG mode for the whole span is all in its instances' and unallocated rows.
      if (q_.by == CostGrouping::kGpu && !(g.mig_split && g.totals.seconds <= 0)) {
        CostRow row;
        row.name = gpu_row_name(g, hosts.size() > 1);
        row.gpus = {row.name};
        row.totals = g.totals;
        r.rows.push_back(std::move(row));
      }
      r.gpus.push_back(std::move(g));
    }
    if (q_.by != CostGrouping::kGpu) {
      for (auto& [name, acc] : rows_) {
        CostRow row;
        row.name = name;
        row.totals = acc.totals;
        row.gpus.assign(acc.gpus.begin(), acc.gpus.end());
        r.rows.push_back(std::move(row));
      }
      std::ranges::stable_sort(r.rows, [](const CostRow& a, const CostRow& b) {
        if (a.totals.dollars != b.totals.dollars) return a.totals.dollars > b.totals.dollars;
        return a.totals.seconds > b.totals.seconds;
      });
    }
    // The rate over the readings' part of the projection span: a history shorter than the span (an agent
    // installed yesterday, asked for 7 days) is not diluted by the days before its first reading.
    std::int64_t first = q_.to_ms;
    for (const auto& g : r.gpus) {
      if (g.first_ms != 0) first = std::min(first, g.first_ms);
    }
    r.projection_span_ms = std::min(r.projection_span_ms, q_.to_ms - first);
    if (any_price && r.projection_span_ms > 0) {
      r.monthly_projection_usd = recent / (static_cast<double>(r.projection_span_ms) / 3'600'000.0) * kMonthHours;
    }
    if (q_.tier == model::PriceTier::kCommit1y || q_.tier == model::PriceTier::kCommit3y) {
      r.notes.push_back(fmt::format(
          "tier {}: a committed GPU costs the same idle or busy; its idle and unused dollars are capacity already "
          "paid for, wasted unless the work moves onto it (or the next commitment is smaller), not saved by "
          "releasing the GPU",
          tier_name_));
    }
    if (r.total.working_from_utilization) {
      r.notes.push_back("some GPUs have no SM active recorded: their working share is utilization.gpu, which counts "
                        "any kernel or copy as work (an upper bound)");
    }
    if (r.total.unknown_seconds > 0) {
      r.notes.push_back(fmt::format("{:.1f} GPU-hours without GR engine active or utilization recorded: paid, split "
                                    "unknown",
                                    r.total.unknown_seconds / 3600.0));
    }
    return r;
  }

 private:
  struct RowAcc {
    CostTotals totals;
    std::set<std::string> gpus;
  };

  void take_span(std::vector<store::SeriesSamples> series, std::int64_t from, std::int64_t to) {
    std::unordered_map<std::string, SpanExtras> extras;
    for (const auto& s : series) {
      const std::string_view name = s.labels.metric_name();
      const bool reading_series = std::ranges::find(kReadingSeries, name) != kReadingSeries.end();
      const bool extra = name == kEnergySeries || name == kPriceSeries || name == kProcessMemorySeries ||
                         name == kProcessSmSeries || name == kMigSlicesSeries;
      if (!extra && !(reading_series && q_.by == CostGrouping::kLabel)) continue;
      const std::string key = gpu_key(s.labels);
      if (key.empty()) continue;
      SpanExtras& x = extras[key];
      if (name == kEnergySeries) {
        merge_points(x.energy, points_of(s));
      } else if (name == kPriceSeries) {
        if (s.labels.get("tier") == tier_name_) merge_points(x.price, points_of(s));
      } else if (name == kMigSlicesSeries) {
        merge_points(x.mig_slices, points_of(s));
      } else if (name == kProcessMemorySeries || name == kProcessSmSeries) {
        ProcessSeries& p = x.processes[process_row_name(s.labels)];
        merge_points(name == kProcessMemorySeries ? p.memory : p.sm, points_of(s));
      }
      if (reading_series && q_.by == CostGrouping::kLabel) {
        for (const auto& l : s.labels) {
          if (l.name != store::kMetricNameLabel) labels_seen_.insert(std::string(l.name));
        }
        const std::string value(s.labels.get(q_.label));
        if (!value.empty()) label_seen_ = true;
        for (const auto& x2 : s.samples) {
          if (std::isfinite(x2.value)) x.label.push_back({x2.t_ms, value.empty() ? std::string(kNoLabel) : value});
        }
      }
    }
    for (auto& [key, x] : extras) std::ranges::stable_sort(x.label, {}, &LabelPoint::t_ms);
    // A MIG instance's series are its GPU's time, split: each GPU is read with its instances.
    auto histories = group_by_gpu(std::move(series));
    std::map<std::string, std::vector<MigInstance>> instances_of;
    std::set<std::string> parents;
    for (const auto& h : histories) {
      if (h.identity.mig_instance.empty()) parents.insert(h.identity.key);
    }
    for (const auto& h : histories) {
      if (h.identity.mig_instance.empty()) continue;
      const std::string parent = h.identity.key.substr(0, h.identity.key.rfind("/mig"));
      if (parents.contains(parent)) instances_of[parent].push_back(MigInstance(h, extras[h.identity.key]));
    }
    for (auto& h : histories) {
      if (!h.identity.mig_instance.empty() && instances_of.contains(h.identity.key.substr(0, h.identity.key.rfind("/mig")))) {
        continue;
      }
      take_gpu(h, extras[h.identity.key], instances_of[h.identity.key], from, to);
    }
  }

  // One MIG instance's history as its GPU's readings walk it.
  struct MigInstance {
    MigInstance(const GpuHistory& h, SpanExtras& x)
        : history(&h), extras(&x), gr(h.points(Signal::kGrActive)), sm(h.points(Signal::kSmActive)),
          tensor(h.points(Signal::kTensorActive)), dram(h.points(Signal::kDramActive)), used(h.points(Signal::kFbUsed)),
          free(h.points(Signal::kFbFree)), reserved(h.points(Signal::kFbReserved)), slices(x.mig_slices) {
      for (auto& [name, p] : x.processes) processes.emplace_back(name, std::pair(Cursor(p.memory), Cursor(p.sm)));
    }
    const GpuHistory* history;
    SpanExtras* extras;
    Cursor gr, sm, tensor, dram, used, free, reserved, slices;
    std::vector<std::pair<std::string, std::pair<Cursor, Cursor>>> processes;
    std::size_t label_i = 0;
    // Read in (after, t]: the exporter wrote its series at that reading.
    bool read_in(std::int64_t after, std::int64_t t) {
      const bool a = gr.within(after, t).has_value();
      const bool b = sm.within(after, t).has_value();
      const bool c = used.within(after, t).has_value();
      const bool d = slices.within(after, t).has_value();
      return a || b || c || d;
    }
  };

  std::optional<double> price_at(const GpuState& st, Cursor& recorded, std::int64_t t) {
    const auto from_catalog = [&]() -> std::optional<double> {
      if (q_.catalog == nullptr || st.cost.model.empty()) return std::nullopt;
      return q_.catalog->hourly_price(st.cost.model, q_.tier);
    };
    if (q_.catalog_first) {
      if (auto p = from_catalog()) return p;
    }
    // The price recorded with the reading (a reload changes it from then on); a lost GPU keeps its series.
    if (auto p = recorded.at(t, q_.rules.max_gap_ms)) return p;
    return from_catalog();
  }

  void take_gpu(const GpuHistory& h, SpanExtras& x, std::vector<MigInstance>& instances, std::int64_t from,
                std::int64_t to) {
    if (!q_.filter.matches(h.identity)) return;
    auto [it, fresh] = gpus_.try_emplace(h.identity.key);
    GpuState& st = it->second;
    if (fresh) {
      st.cost.key = h.identity.key;
      st.cost.gpu = h.identity.gpu;
      st.cost.uuid = h.identity.uuid;
      st.cost.host = h.identity.host;
      st.cost.model = h.identity.model;
    }
    // The reading times: gpu_up's, which is written at every reading; else the activity series'.
    // Readings up to one gap before the span are read too: the last of them is the span's first
    // interval's start (an interval belongs to the span its end is in).
    std::vector<std::int64_t> times;
    const auto add_times = [&](Signal s) {
      for (const Point& p : h.points(s)) {
        if (p.t_ms > from - q_.rules.max_gap_ms && p.t_ms <= to) times.push_back(p.t_ms);
      }
    };
    add_times(Signal::kGpuUp);
    if (times.empty()) {
      add_times(Signal::kUtilization);
      add_times(Signal::kGrActive);
      add_times(Signal::kSmActive);
      std::ranges::sort(times);
      const auto [first, last] = std::ranges::unique(times);
      times.erase(first, last);
    }
    if (times.empty()) return;

    const std::int64_t gap = q_.rules.max_gap_ms;
    Cursor up(h.points(Signal::kGpuUp)), gr(h.points(Signal::kGrActive)), sm(h.points(Signal::kSmActive)),
        util(h.points(Signal::kUtilization)), tensor(h.points(Signal::kTensorActive)),
        dram(h.points(Signal::kDramActive)), rx(h.points(Signal::kPcieRxBytes)), tx(h.points(Signal::kPcieTxBytes)),
        used(h.points(Signal::kFbUsed)), free(h.points(Signal::kFbFree)), reserved(h.points(Signal::kFbReserved)),
        power(h.points(Signal::kPower)), energy(x.energy), price(x.price);
    std::vector<std::pair<std::string, std::pair<Cursor, Cursor>>> processes;
    for (auto& [name, p] : x.processes) processes.emplace_back(name, std::pair(Cursor(p.memory), Cursor(p.sm)));
    std::size_t label_i = 0;
    // A MIG instance without its GPU's series (a Prometheus scraping dcgm-exporter alone, which writes
    // every field per instance): paid its slices' share of the GPU's price, as if its GPU's were there.
    const bool orphan = !h.identity.mig_instance.empty();
    Cursor orphan_slices(x.mig_slices);
    const unsigned total_slices = mig_total_slices(st.cost.model);
    if (orphan) {
      st.cost.mig_instance = h.identity.mig_instance;
      st.cost.mig_profile = h.identity.mig_profile;
      if (const auto n = mig_profile_slices(h.identity.mig_profile)) note_slices(st.cost, *n, total_slices);
    }
    const std::string gpu_name = gpu_row_name(st.cost, true);
    std::vector<ProcessUse> uses;
    std::vector<const std::string*> present;

    for (std::int64_t t : times) {
      CostReading cur;
      cur.t_ms = t;
      if (auto v = up.at(t, gap)) cur.up = *v > 0.5;
      cur.gr_active = gr.at(t, gap);
      cur.sm_active = sm.at(t, gap);
      cur.utilization_percent = util.at(t, gap);
      cur.energy_millijoules = energy.at(t, gap);
      cur.power_watts = power.at(t, gap);
      cur.usd_per_hour = price_at(st, price, t);
      if (t <= from) {
        st.prev = cur;
        if (st.cost.first_ms == 0) st.cost.first_ms = from;  // covered from the span's start
        continue;
      }
      if (cur.usd_per_hour) {
        st.cost.usd_per_hour = cur.usd_per_hour;
        if (st.cost.price_source == PriceSource::kNone || q_.catalog_first) {
          st.cost.price_source = price.at(t, gap) && !q_.catalog_first ? PriceSource::kRecorded : PriceSource::kCatalog;
        }
      }
      // Peaks, from readings of a GPU that answered.
      if (cur.up) {
        if (cur.sm_active) st.sm.add(*cur.sm_active);
        if (auto v = tensor.at(t, gap)) st.tensor.add(*v);
        if (auto v = dram.at(t, gap)) st.dram.add(*v);
        if (cur.utilization_percent) st.utilization.add(*cur.utilization_percent);
        const auto r = rx.at(t, gap);
        const auto w = tx.at(t, gap);
        if (r || w) st.pcie.add(std::max(r.value_or(0), w.value_or(0)));
        const auto u = used.at(t, gap);
        const auto res = reserved.at(t, gap);
        const auto fr = free.at(t, gap);
        if (u) {
          const double held = *u + res.value_or(0);
          st.peak_memory_mib = std::max(st.peak_memory_mib.value_or(0), held);
          if (fr) st.memory_total_mib = *u + *fr + res.value_or(0);
        }
      }
      if (st.cost.first_ms == 0) st.cost.first_ms = t;
      st.cost.last_ms = t;

      const std::optional<CostReading> prev = std::exchange(st.prev, cur);
      if (!prev) continue;
      const auto interval = cost_interval(*prev, cur, q_.rules);
      if (!interval) continue;
      if (!instances.empty() && take_mig(st, instances, *prev, cur, gap)) continue;
      double own = 1.0;
      if (orphan) {
        std::optional<unsigned> n = mig_profile_slices(h.identity.mig_profile);
        if (auto v = orphan_slices.at(t, gap); v && *v >= 0) n = static_cast<unsigned>(std::lround(*v));
        own = mig_share(n.value_or(0), total_slices);
      }
      st.cost.totals.add(*interval, q_.rules, own);
      st.cost.held_seconds += interval->seconds;
      if (t > q_.to_ms - q_.projection_span_ms) st.cost.recent_dollars += interval->dollars.value_or(0) * own;

      switch (q_.by) {
        case CostGrouping::kGpu: break;
        case CostGrouping::kLabel: {
          while (label_i + 1 < x.label.size() && x.label[label_i + 1].t_ms <= t) ++label_i;
          const bool have = label_i < x.label.size() && x.label[label_i].t_ms <= t;
          add_row(have ? x.label[label_i].value : std::string(kNoLabel), gpu_name, *interval, own);
          break;
        }
        case CostGrouping::kProcess: {
          uses.clear();
          present.clear();
          for (auto& [name, cursors] : processes) {
            auto mem = cursors.first.within(prev->t_ms, t);
            auto smu = cursors.second.within(prev->t_ms, t);
            if (!mem && !smu) continue;
            uses.push_back({smu ? std::optional<double>(*smu * 100.0) : std::nullopt, mem});
            present.push_back(&name);
          }
          if (uses.empty()) {
            add_row(std::string(kNoProcess), gpu_name, *interval, own);
            break;
          }
          const auto shares = process_shares(uses);
          for (std::size_t i = 0; i < present.size(); ++i) add_row(*present[i], gpu_name, *interval, own * shares[i]);
          break;
        }
      }
    }
  }

  // The interval (prev, cur] of a GPU in MIG mode, split among the instances read in it by their slices and
  // the slices none holds; false when no instance was read (the GPU is paid as a whole).
  bool take_mig(GpuState& gpu, std::vector<MigInstance>& instances, const CostReading& prev, const CostReading& cur,
                std::int64_t gap) {
    const std::int64_t t = cur.t_ms;
    std::vector<MigInstance*> read;
    for (auto& in : instances) {
      if (in.read_in(prev.t_ms, t)) read.push_back(&in);
    }
    if (read.empty()) return false;
    gpu.cost.mig_split = true;
    const unsigned total = mig_total_slices(gpu.cost.model);
    gpu.cost.mig_total_slices = total;
    unsigned allocated = 0;
    for (MigInstance* in : read) {
      const GpuIdentity& id = in->history->identity;
      std::optional<unsigned> slices;
      if (auto v = in->slices.at(t, gap); v && *v >= 0) slices = static_cast<unsigned>(std::lround(*v));
      if (!slices) slices = mig_profile_slices(id.mig_profile);
      const unsigned n = slices.value_or(0);
      allocated += n;
      GpuState& st = part_state(gpu, id.key);
      st.cost.mig_instance = id.mig_instance;
      st.cost.mig_profile = id.mig_profile;
      note_slices(st.cost, n, total);
      const auto interval = cost_interval(prev, mig_instance_reading(cur, in->gr.at(t, gap), in->sm.at(t, gap)), q_.rules);
      if (!interval) continue;
      const double share = mig_share(n, total);
      add_part(st, *interval, share, t);
      if (cur.up) {
        if (auto v = in->sm.at(t, gap)) st.sm.add(*v);
        if (auto v = in->tensor.at(t, gap)) st.tensor.add(*v);
        if (auto v = in->dram.at(t, gap)) st.dram.add(*v);
        const auto u = in->used.at(t, gap);
        const auto res = in->reserved.at(t, gap);
        const auto fr = in->free.at(t, gap);
        if (u) {
          st.peak_memory_mib = std::max(st.peak_memory_mib.value_or(0), *u + res.value_or(0));
          if (fr) st.memory_total_mib = *u + *fr + res.value_or(0);
        }
      }
      const std::string name = gpu_row_name(st.cost, true);
      switch (q_.by) {
        case CostGrouping::kGpu: break;
        case CostGrouping::kLabel: {
          auto& labels = in->extras->label;
          while (in->label_i + 1 < labels.size() && labels[in->label_i + 1].t_ms <= t) ++in->label_i;
          const bool have = in->label_i < labels.size() && labels[in->label_i].t_ms <= t;
          add_row(have ? labels[in->label_i].value : std::string(kNoLabel), name, *interval, share);
          break;
        }
        case CostGrouping::kProcess: add_process_rows(in->processes, prev.t_ms, t, name, *interval, share); break;
      }
    }
    const double unallocated = mig_unallocated_share(allocated, total);
    if (unallocated > 0) {
      GpuState& st = part_state(gpu, gpu.cost.key + "/unallocated");
      st.cost.mig_unallocated = true;
      note_slices(st.cost, total - allocated, total);
      if (const auto interval = cost_interval(prev, mig_unallocated_reading(cur), q_.rules)) {
        add_part(st, *interval, unallocated, t);
        if (q_.by != CostGrouping::kGpu) add_row(std::string(kUnallocatedRow), gpu_row_name(st.cost, true), *interval, unallocated);
      }
    }
    return true;
  }

  // The entry of a part of a MIG GPU (an instance, its unallocated slices), created with the GPU's identity.
  GpuState& part_state(const GpuState& gpu, const std::string& key) {
    auto [it, fresh] = gpus_.try_emplace(key);
    GpuState& st = it->second;
    if (fresh) {
      st.cost.key = key;
      st.cost.gpu = gpu.cost.gpu;
      st.cost.uuid = gpu.cost.uuid;
      st.cost.host = gpu.cost.host;
      st.cost.model = gpu.cost.model;
    }
    st.cost.price_source = gpu.cost.price_source;
    st.cost.usd_per_hour = gpu.cost.usd_per_hour;
    st.cost.mig_total_slices = gpu.cost.mig_total_slices;
    return st;
  }

  static void note_slices(GpuCost& g, unsigned n, unsigned total) {
    g.mig_total_slices = total;
    if (g.mig_slices_max == 0 && g.mig_slices_min == 0) {
      g.mig_slices_min = g.mig_slices_max = n;
    } else {
      g.mig_slices_min = std::min(g.mig_slices_min, n);
      g.mig_slices_max = std::max(g.mig_slices_max, n);
    }
  }

  void add_part(GpuState& st, const CostInterval& interval, double share, std::int64_t t) {
    st.cost.totals.add(interval, q_.rules, share);
    st.cost.held_seconds += interval.seconds;
    if (t > q_.to_ms - q_.projection_span_ms) st.cost.recent_dollars += interval.dollars.value_or(0) * share;
    if (st.cost.first_ms == 0) st.cost.first_ms = t;
    st.cost.last_ms = t;
  }

  void add_process_rows(std::vector<std::pair<std::string, std::pair<Cursor, Cursor>>>& processes, std::int64_t after,
                        std::int64_t t, const std::string& gpu_name, const CostInterval& interval, double share) {
    std::vector<ProcessUse> uses;
    std::vector<const std::string*> present;
    for (auto& [name, cursors] : processes) {
      auto mem = cursors.first.within(after, t);
      auto smu = cursors.second.within(after, t);
      if (!mem && !smu) continue;
      uses.push_back({smu ? std::optional<double>(*smu * 100.0) : std::nullopt, mem});
      present.push_back(&name);
    }
    if (uses.empty()) {
      add_row(std::string(kNoProcess), gpu_name, interval, share);
      return;
    }
    const auto shares = process_shares(uses);
    for (std::size_t i = 0; i < present.size(); ++i) add_row(*present[i], gpu_name, interval, share * shares[i]);
  }

  void add_row(const std::string& name, const std::string& gpu, const CostInterval& interval, double share) {
    RowAcc& acc = rows_[name];
    acc.totals.add(interval, q_.rules, share);
    acc.gpus.insert(gpu);
  }

  const CostQuery& q_;
  const std::string tier_name_;
  std::map<std::string, GpuState> gpus_;
  std::map<std::string, RowAcc> rows_;
  bool label_seen_ = false;
  std::set<std::string> labels_seen_;
};

std::string with_commas(long long whole) {
  std::string digits = std::to_string(whole < 0 ? -whole : whole);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (whole < 0 ? "-" : "") + out;
}

}  // namespace

std::string gpu_cost_name(const GpuCost& g, bool with_host) {
  std::string name = g.gpu.empty() ? g.uuid : "GPU " + g.gpu;
  if (g.mig_unallocated) {
    name += " unallocated MIG slices " + slices_text(g.mig_slices_min, g.mig_slices_max, g.mig_total_slices);
  } else if (!g.mig_instance.empty()) {
    name += fmt::format(" MIG {} (GI {}", g.mig_profile.empty() ? "instance" : g.mig_profile, g.mig_instance);
    if (g.mig_total_slices > 0) name += ", " + slices_text(g.mig_slices_min, g.mig_slices_max, g.mig_total_slices);
    name += ")";
  }
  return with_host && !g.host.empty() ? g.host + " " + name : name;
}

std::string span_text(std::int64_t ms) {
  const double s = static_cast<double>(std::max<std::int64_t>(ms, 0)) / 1000.0;
  const auto tenths = [](double v) { return std::round(v * 10.0) / 10.0; };
  if (s >= 86400) {
    const double d = tenths(s / 86400);
    return fmt::format("{:g} day{}", d, d == 1 ? "" : "s");
  }
  if (s >= 3600) return fmt::format("{:g}h", tenths(s / 3600));
  if (s >= 60) return fmt::format("{:g}m", tenths(s / 60));
  return fmt::format("{:g}s", std::round(s));
}

std::string dollars_text(double usd) {
  const double cents = std::round(usd * 100.0);
  const auto whole = static_cast<long long>(std::trunc(cents / 100.0));
  const auto frac = static_cast<long long>(std::llabs(static_cast<long long>(cents) % 100));
  return fmt::format("{}${}.{:02}", cents < 0 ? "-" : "", with_commas(whole < 0 ? -whole : whole), frac);
}

std::expected<CostReport, std::string> cost_report(const ReadingSource& source, const CostQuery& query) {
  ReportBuilder builder(query);
  if (auto read = builder.read(source); !read) return std::unexpected(read.error());
  return builder.finish();
}

std::vector<std::string> top_wasters(const CostReport& report, std::size_t limit) {
  std::vector<const GpuCost*> by_waste;
  for (const auto& g : report.gpus) {
    if (g.totals.unused_dollars > 0 || (g.totals.priced_seconds == 0 && g.totals.idle_seconds > 0)) by_waste.push_back(&g);
  }
  std::ranges::stable_sort(by_waste, [](const GpuCost* a, const GpuCost* b) {
    if (a->totals.unused_dollars != b->totals.unused_dollars) return a->totals.unused_dollars > b->totals.unused_dollars;
    return a->totals.idle_seconds > b->totals.idle_seconds;
  });
  std::set<std::string> hosts;
  for (const auto& g : report.gpus) hosts.insert(g.host);
  std::vector<std::string> out;
  for (const GpuCost* g : by_waste) {
    if (out.size() >= limit) break;
    const CostTotals& t = g->totals;
    if (t.seconds <= 0) continue;
    const double idle_share = t.idle_seconds / t.seconds;
    // A MIG instance's seconds are its share of the GPU's: the span it was held is its wall time.
    const double held = g->held_seconds > 0 ? g->held_seconds : t.seconds;
    const std::string span = span_text(static_cast<std::int64_t>(held * 1000.0));
    std::vector<std::string> parts;
    if (idle_share >= kWasteWorthNaming) parts.push_back(fmt::format("idle {:.0f}% of {}", idle_share * 100.0, span));
    const double busy_sm_idle = t.busy_seconds > 0 ? 1.0 - t.working_seconds / t.busy_seconds : 0.0;
    if (busy_sm_idle >= kWasteWorthNaming) {
      parts.push_back(fmt::format("SMs idle {:.0f}% of its busy time{}", busy_sm_idle * 100.0,
                                  parts.empty() ? " over " + span : std::string()));
    }
    if (t.down_seconds > 0) {
      parts.push_back(fmt::format("down {}", span_text(static_cast<std::int64_t>(t.down_seconds / t.seconds * held * 1000.0))));
    }
    if (parts.empty()) continue;
    std::string what;
    for (const auto& part : parts) what += (what.empty() ? "" : ", ") + part;
    std::string line = fmt::format("{} ({}): {}", gpu_cost_name(*g, hosts.size() > 1), g->model, what);
    if (t.priced_seconds > 0) line += fmt::format(", {} wasted", dollars_text(t.unused_dollars));
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace gpuscope::analysis
