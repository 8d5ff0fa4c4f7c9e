#include "analysis/right_sizing.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>

namespace gpuscope::analysis {
namespace {

using model::GpuSpecs;
using model::PriceEntry;

// Below 5 % tensor-core activity the tensor cores are idle but for stray kernels: a GPU without bf16
// costs the workload nothing then, and needs no change of precision.
constexpr double kTensorWorkActive = 0.05;
// A measured GPU whose memory peak reaches 90 % of its memory is full in practice (the allocator's
// fragmentation and the next batch need the rest): it is the memory that limits, not a cost question.
constexpr double kSaturatedMemoryShare = 0.90;
constexpr double kMibPerGib = 1024;
constexpr std::string_view kFp16Caveat = "needs fp16 (autocast) instead of bf16";

// PCIe line rates by generation (GT/s per lane) and their line coding: 8b/10b through gen 2,
// 128b/130b from gen 3.
constexpr std::array<double, 5> kPcieGigatransfersPerLane{2.5, 5, 8, 16, 32};

std::string hourly_text(double usd) {
  return fmt::format("${:.2f}/h", static_cast<double>(std::llround(usd * 100)) / 100);
}

// "$3,370": whole dollars with thousands separators (no locale: the text must not depend on one).
std::string dollars_text(double usd) {
  const long long whole = std::llround(std::abs(usd));
  std::string digits = fmt::format("{}", whole);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return (usd < 0 && whole != 0 ? "-$" : "$") + digits;
}

std::string gib_text(double mib) { return fmt::format("{:.1f} GiB", mib / kMibPerGib); }
std::string percent_text(double share) { return fmt::format("{:.0f}%", share * 100); }
std::string ratio_text(double ratio) { return std::isfinite(ratio) ? fmt::format("{:.1f}x", ratio) : "ample"; }

// "an H100", "an L4", "a T4", "an A100": product names are read letter by letter when they start with
// a letter and a digit or capital ("H100", "RTX"), as words otherwise ("Tesla").
std::string with_article(std::string_view name) {
  if (name.empty()) return std::string(name);
  const auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const char first = name[0];
  bool vowel_sound = false;
  if (upper(first) && (name.size() == 1 || digit(name[1]) || upper(name[1]) || name[1] == ' ' || name[1] == '-')) {
    vowel_sound = std::string_view("AEFHILMNORSX").find(first) != std::string_view::npos;
  } else {
    vowel_sound = std::string_view("AEIOUaeiou").find(first) != std::string_view::npos;
  }
  return fmt::format("{} {}", vowel_sound ? "an" : "a", name);
}

// The share of the GPU's compute the workload kept busy, and what it was read from.
struct ComputeShare {
  std::optional<double> share;
  std::string text;  // "SM active 12%", "utilization.gpu 40% (SM active not recorded)"
};

ComputeShare compute_share(const UsagePeaks& p) {
  if (p.peak_sm_active) return {p.peak_sm_active, "SM active " + percent_text(*p.peak_sm_active)};
  if (p.peak_utilization_percent) {
    // utilization.gpu counts time any kernel ran, however few SMs it used: it overstates the load,
    // which errs toward keeping a bigger GPU.
    const double share = *p.peak_utilization_percent / 100;
    return {share, "utilization.gpu " + percent_text(share) + " (SM active not recorded)"};
  }
  return {std::nullopt, "no SM activity recorded (compute not checked)"};
}

// The tensor figure work measured on `current` is scaled by: bf16 when the measured GPU has it (the
// workload is taken to use it), else fp16.
std::optional<double> current_tensor_tflops(const GpuSpecs& current) {
  return current.bf16_tflops ? current.bf16_tflops : current.fp16_tensor_tflops;
}

CandidateCheck check(const PriceEntry& entry, const GpuSpecs& current, const UsagePeaks& p, const ComputeShare& compute,
                     const RightSizingOptions& o, double peak_memory_mib) {
  const GpuSpecs& s = *entry.specs;
  CandidateCheck c;
  c.name = entry.name;
  c.usd_per_hour = entry.usd_per_hour[static_cast<std::size_t>(o.tier)];

  std::vector<std::string> problems;
  std::vector<std::string> loads;
  std::optional<std::string> caveat;
  double headroom = std::numeric_limits<double>::infinity();

  const double capacity_mib = s.memory_gib * kMibPerGib;
  const double needed_mib = peak_memory_mib * (1 + o.memory_margin);
  if (peak_memory_mib > 0) headroom = capacity_mib / peak_memory_mib;
  if (capacity_mib < needed_mib) {
    problems.push_back(fmt::format("memory {:g} GiB < {} needed (peak {} + {:.0f}%)", s.memory_gib,
                                   gib_text(needed_mib), gib_text(peak_memory_mib), o.memory_margin * 100));
  }

  const auto weigh = [&](std::string_view dimension, double load) {
    if (load > 0) headroom = std::min(headroom, 1 / load);
    if (load > o.target_load) {
      problems.push_back(
          fmt::format("{} would be {} (over {})", dimension, percent_text(load), percent_text(o.target_load)));
    } else {
      loads.push_back(fmt::format("{} {}", dimension, percent_text(load)));
    }
  };

  if (compute.share) weigh("SM", *compute.share * current.fp32_tflops / s.fp32_tflops);

  if (p.peak_tensor_active) {
    const double active = *p.peak_tensor_active;
    const auto from = current_tensor_tflops(current);
    std::optional<double> to;
    if (current.bf16_tflops) {
      to = s.bf16_tflops;
      if (!to && s.fp16_tensor_tflops) {
        to = s.fp16_tensor_tflops;
        if (active >= kTensorWorkActive) caveat = std::string(kFp16Caveat);
      }
    } else {
      to = s.fp16_tensor_tflops ? s.fp16_tensor_tflops : s.bf16_tflops;
    }
    if (from && to) {
      weigh("tensor", active * *from / *to);
    } else if (from && active >= kTensorWorkActive) {
      problems.push_back(fmt::format("no tensor cores for the tensor work ({} active)", percent_text(active)));
    }
    // No tensor figure for the measured GPU: its tensor activity cannot be scaled (and cannot be real).
  }

  if (p.peak_dram_active)
    weigh("DRAM", *p.peak_dram_active * current.memory_bandwidth_gb_per_s / s.memory_bandwidth_gb_per_s);

  if (p.peak_pcie_bytes_per_second) {
    const double link = pcie_bytes_per_second(s.pcie_gen, s.pcie_width);
    if (link > 0) weigh(fmt::format("PCIe gen{} x{}", s.pcie_gen, s.pcie_width), *p.peak_pcie_bytes_per_second / link);
  }

  c.fits = problems.empty();
  c.headroom = headroom;
  if (c.fits) {
    c.why = fmt::format("fits: {:g} GiB holds peak {} + {:.0f}%", s.memory_gib, gib_text(peak_memory_mib),
                        o.memory_margin * 100);
    if (!loads.empty()) c.why += fmt::format(", loads {}", fmt::join(loads, ", "));
    c.why += fmt::format("; headroom {}", ratio_text(headroom));
    if (caveat) c.why += "; " + *caveat;
  } else {
    c.why = fmt::format("does not fit: {}", fmt::join(problems, "; "));
  }
  return c;
}

bool saturated(const UsagePeaks& p, const GpuSpecs& current, const ComputeShare& compute, const RightSizingOptions& o,
               double peak_memory_mib) {
  const auto at_limit = [&](const std::optional<double>& share) { return share && *share >= o.target_load; };
  const double memory_mib = p.memory_total_mib.value_or(current.memory_gib * kMibPerGib);
  return at_limit(compute.share) || at_limit(p.peak_tensor_active) || at_limit(p.peak_dram_active) ||
         peak_memory_mib >= kSaturatedMemoryShare * memory_mib;
}

std::string too_short_text(double observed_s, double min_s) {
  const std::string limit = min_s == 3600 ? "an hour" : fmt::format("{:g} minutes", min_s / 60);
  return fmt::format("less than {} of readings ({:.0f} minutes): too short to judge", limit, observed_s / 60);
}

nlohmann::json number_or_null(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

double pcie_bytes_per_second(int gen, int width) {
  if (gen < 1 || gen > static_cast<int>(kPcieGigatransfersPerLane.size()) || width < 1) return 0;
  const double coding = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
  return kPcieGigatransfersPerLane[static_cast<std::size_t>(gen - 1)] * 1e9 * width * coding / 8;
}

std::string_view right_sizing_outcome_id(RightSizingOutcome outcome) {
  switch (outcome) {
    case RightSizingOutcome::kCheaper:
      return "cheaper";
    case RightSizingOutcome::kKeep:
      return "keep";
    case RightSizingOutcome::kSaturated:
      return "saturated";
    case RightSizingOutcome::kTooShort:
      return "too_short";
    case RightSizingOutcome::kNotInCatalog:
      return "not_in_catalog";
    case RightSizingOutcome::kNoMemoryPeak:
      return "no_memory_peak";
  }
  return "unknown";
}

RightSizing right_size(const UsagePeaks& peaks, const model::PriceCatalog& catalog, const RightSizingOptions& options) {
  RightSizing r;
  const PriceEntry* entry = catalog.find(peaks.model);
  if (entry != nullptr) r.current = entry->name;
  r.current_usd_per_hour =
      peaks.current_usd_per_hour ? peaks.current_usd_per_hour : catalog.hourly_price(peaks.model, options.tier);

  if (peaks.observed_seconds < options.min_observed_seconds) {
    r.outcome = RightSizingOutcome::kTooShort;
    r.reasoning = too_short_text(peaks.observed_seconds, options.min_observed_seconds);
    return r;
  }
  r.outcome = RightSizingOutcome::kNotInCatalog;
  if (entry == nullptr) {
    r.reasoning =
        fmt::format("'{}' is not in the price catalog ({}): nothing to compare it with", peaks.model, catalog.source());
    return r;
  }
  if (!entry->specs) {
    r.reasoning = fmt::format("the price catalog's entry '{}' has no specs: its work cannot be scaled to other GPUs",
                              entry->name);
    return r;
  }
  if (!r.current_usd_per_hour) {
    r.reasoning = fmt::format("the price catalog has no {} price for '{}': nothing to save against",
                              model::price_tier_name(options.tier), entry->name);
    return r;
  }
  if (!peaks.peak_memory_mib) {
    r.outcome = RightSizingOutcome::kNoMemoryPeak;
    r.reasoning = "no memory readings: the memory a workload needs is never guessed";
    return r;
  }

  const GpuSpecs& current = *entry->specs;
  const double peak_mib = *peaks.peak_memory_mib;
  const ComputeShare compute = compute_share(peaks);

  std::vector<std::pair<const PriceEntry*, CandidateCheck>> checks;
  for (const auto& e : catalog.entries()) {
    if (!e.specs || !e.usd_per_hour[static_cast<std::size_t>(options.tier)]) continue;
    checks.emplace_back(&e, check(e, current, peaks, compute, options, peak_mib));
  }
  // Cheapest first; equal prices keep the catalog's order.
  std::ranges::stable_sort(checks, {}, [](const auto& c) { return *c.second.usd_per_hour; });
  for (auto& [e, c] : checks) {
    if (e == entry) c.why = "the measured GPU; " + c.why;
  }

  const std::string measured = fmt::format("peak {} and {} on {} at {}", gib_text(peak_mib), compute.text,
                                           with_article(entry->name), hourly_text(*r.current_usd_per_hour));
  const auto best = std::ranges::find_if(checks, [](const auto& c) { return c.second.fits; });
  if (best != checks.end() && best->first != entry && *best->second.usd_per_hour < *r.current_usd_per_hour) {
    const auto& [e, c] = *best;
    r.outcome = RightSizingOutcome::kCheaper;
    r.candidate = e->name;
    r.candidate_usd_per_hour = c.usd_per_hour;
    r.candidate_memory_gib = e->specs->memory_gib;
    r.headroom = c.headroom;
    r.monthly_savings_usd = (*r.current_usd_per_hour - *c.usd_per_hour) * options.hours_per_month;
    r.reasoning = fmt::format("{}; {} ({:g} GiB, {}) fits with {} headroom: saves {}/month", measured,
                              with_article(e->name), e->specs->memory_gib, hourly_text(*c.usd_per_hour),
                              ratio_text(c.headroom), dollars_text(r.monthly_savings_usd));
    if (c.why.find(kFp16Caveat) != std::string::npos) r.reasoning += fmt::format("; {}", kFp16Caveat);
  } else if (saturated(peaks, current, compute, options, peak_mib)) {
    r.outcome = RightSizingOutcome::kSaturated;
    r.reasoning = fmt::format("{}; saturated: no smaller GPU will do; consider more of them", measured);
  } else {
    r.outcome = RightSizingOutcome::kKeep;
    r.reasoning =
        fmt::format("{}; no cheaper GPU in the {} tier fits: keep it", measured, model::price_tier_name(options.tier));
  }
  for (auto& [e, c] : checks) r.considered.push_back(std::move(c));
  return r;
}

nlohmann::json right_sizing_json(const RightSizing& s) {
  using nlohmann::json;
  json considered = json::array();
  for (const auto& c : s.considered) {
    considered.push_back({{"name", c.name},
                          {"usd_per_hour", number_or_null(c.usd_per_hour)},
                          {"fits", c.fits},
                          {"headroom_ratio", number_or_null(c.headroom)},
                          {"why", c.why}});
  }
  const bool cheaper = s.outcome == RightSizingOutcome::kCheaper;
  return {{"outcome", right_sizing_outcome_id(s.outcome)},
          {"current", s.current.empty() ? json(nullptr) : json(s.current)},
          {"current_usd_per_hour", number_or_null(s.current_usd_per_hour)},
          {"candidate", cheaper ? json(s.candidate) : json(nullptr)},
          {"candidate_usd_per_hour", number_or_null(s.candidate_usd_per_hour)},
          {"candidate_memory_gib", cheaper ? json(s.candidate_memory_gib) : json(nullptr)},
          {"headroom_ratio", cheaper ? number_or_null(s.headroom) : json(nullptr)},
          {"monthly_savings_usd", s.monthly_savings_usd},
          {"reasoning", s.reasoning},
          {"considered", std::move(considered)}};
}

}  // namespace gpuscope::analysis
