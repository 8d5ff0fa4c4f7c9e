#include "analysis/mig_right_sizing.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "analysis/mig_cost.h"
#include "model/mig_profile_table.h"

namespace gpuscope::analysis {
namespace {

constexpr double kMigSizingMibPerGib = 1024;

struct MigModel {
  std::vector<MigProfileSpec> profiles;  // smallest first
  unsigned gpu_sms;                      // the whole GPU's: an A100's 7g profile has 98 of its 108
};

// The board's profiles from the profile table (model/mig_profile_table.h), the "+me" variants left out
// (the same size), smallest first: by compute slices, then memory.
MigModel mig_model_of(std::string_view table_name, unsigned gpu_sms) {
  MigModel m{{}, gpu_sms};
  for (const model::MigProfileFacts& p : model::mig_profile_table(table_name)) {
    if (p.name.ends_with("+me")) continue;
    m.profiles.push_back({p.name, p.slices, p.sm_count, static_cast<double>(p.memory_mib)});
  }
  std::ranges::sort(m.profiles, [](const MigProfileSpec& a, const MigProfileSpec& b) {
    return std::tie(a.slices, a.memory_mib) < std::tie(b.slices, b.memory_mib);
  });
  return m;
}

// A GPU model name as reported (any H100 or A100 variant) to the table of the board it is sized as.
std::optional<MigModel> mig_model(std::string_view model) {
  if (model.find("H200") != std::string_view::npos) return mig_model_of("NVIDIA H200", 132);
  if (model.find("H100") != std::string_view::npos) return mig_model_of("NVIDIA H100 80GB HBM3", 132);
  if (model.find("A100") != std::string_view::npos) {
    if (model.find("40GB") != std::string_view::npos) return mig_model_of("NVIDIA A100-PCIE-40GB", 108);
    return mig_model_of("NVIDIA A100-SXM4-80GB", 108);
  }
  return std::nullopt;
}

// The SMs the work keeps busy at its peak (SM or tensor activity, whichever is higher) on `measured_sms`.
std::optional<double> sm_need(const UsagePeaks& peaks, double measured_sms) {
  std::optional<double> load = peaks.peak_sm_active;
  if (peaks.peak_tensor_active) load = std::max(load.value_or(0), *peaks.peak_tensor_active);
  if (!load) return std::nullopt;
  return *load * measured_sms;
}

// The smallest profile with fewer than `below` slices that carries the work.
std::optional<MigFit> smallest_fit(const UsagePeaks& peaks, const MigModel& m, double measured_sms, unsigned below,
                                   std::string_view what, const RightSizingOptions& o) {
  if (!peaks.peak_memory_mib) return std::nullopt;
  const auto sms = sm_need(peaks, measured_sms);
  if (!sms) return std::nullopt;
  const double memory = *peaks.peak_memory_mib * (1 + o.memory_margin);
  const unsigned total = mig_total_slices(peaks.model);
  for (const MigProfileSpec& p : m.profiles) {
    if (p.slices >= below) break;
    if (memory > p.memory_mib || *sms > p.sms * o.target_load) continue;
    MigFit fit;
    fit.profile = std::string(p.name);
    fit.slices = p.slices;
    fit.total_slices = total;
    fit.reasoning = fmt::format(
        "fits a {}: {}/{} of the GPU ({:.1f} GiB holds peak {:.1f} GiB + {:.0f}%; {:.0f} of its {} SMs busy at "
        "peak, {:.0f}%){}",
        p.name, p.slices, total, p.memory_mib / kMigSizingMibPerGib, *peaks.peak_memory_mib / kMigSizingMibPerGib,
        o.memory_margin * 100, *sms, p.sms, *sms / p.sms * 100, what);
    return fit;
  }
  return std::nullopt;
}

}  // namespace

std::optional<unsigned> mig_gpu_sms(std::string_view model) {
  const auto m = mig_model(model);
  if (!m) return std::nullopt;
  return m->gpu_sms;
}

std::optional<MigFit> mig_fit_for_gpu(const UsagePeaks& peaks, const RightSizingOptions& options) {
  const auto m = mig_model(peaks.model);
  if (!m) return std::nullopt;
  const unsigned total = mig_total_slices(peaks.model);
  auto fit = smallest_fit(peaks, *m, m->gpu_sms, total, "", options);
  if (fit && peaks.current_usd_per_hour) {
    // The whole GPU's price split by slices, as a MIG GPU is billed.
    fit->usd_per_hour = *peaks.current_usd_per_hour * mig_share(fit->slices, total);
  }
  return fit;
}

std::optional<MigFit> mig_fit_for_instance(const UsagePeaks& peaks, std::string_view profile,
                                           const RightSizingOptions& options) {
  const auto m = mig_model(peaks.model);
  if (!m) return std::nullopt;
  const auto current = std::ranges::find(m->profiles, profile, &MigProfileSpec::name);
  if (current == m->profiles.end()) return std::nullopt;
  auto fit = smallest_fit(peaks, *m, current->sms, current->slices, fmt::format(" instead of its {}", profile), options);
  if (fit && peaks.current_usd_per_hour) {
    // current_usd_per_hour is the whole GPU's: an instance pays its slices' share.
    fit->usd_per_hour = *peaks.current_usd_per_hour * mig_share(fit->slices, fit->total_slices);
  }
  return fit;
}

RightSizing right_size_mig_instance(const UsagePeaks& peaks, std::string_view profile, const RightSizingOptions& options) {
  RightSizing r;
  r.current = std::string(profile);
  const unsigned total = mig_total_slices(peaks.model);
  const auto slices = mig_profile_slices(profile);
  if (peaks.current_usd_per_hour && slices) r.current_usd_per_hour = *peaks.current_usd_per_hour * mig_share(*slices, total);
  if (peaks.observed_seconds < options.min_observed_seconds) {
    r.outcome = RightSizingOutcome::kTooShort;
    r.reasoning = fmt::format("less than {:g}h of readings ({:.0f} minutes): too short to judge",
                              options.min_observed_seconds / 3600, peaks.observed_seconds / 60);
    return r;
  }
  if (!peaks.peak_memory_mib) {
    r.outcome = RightSizingOutcome::kNoMemoryPeak;
    r.reasoning = "no memory readings: the memory a workload needs is never guessed";
    return r;
  }
  const auto fit = mig_fit_for_instance(peaks, profile, options);
  if (!fit) {
    r.outcome = RightSizingOutcome::kKeep;
    r.reasoning = fmt::format("no smaller MIG profile than its {} carries its peaks", profile);
    return r;
  }
  r.outcome = RightSizingOutcome::kCheaper;
  r.candidate = fit->profile;
  r.candidate_usd_per_hour = fit->usd_per_hour;
  if (r.current_usd_per_hour && fit->usd_per_hour) {
    r.monthly_savings_usd = (*r.current_usd_per_hour - *fit->usd_per_hour) * options.hours_per_month;
  }
  r.reasoning = fit->reasoning;
  if (r.monthly_savings_usd > 0) r.reasoning += fmt::format(": frees {} slices, ${:.2f}/month", *slices - fit->slices, r.monthly_savings_usd);
  return r;
}

std::optional<RightSizing> right_size_cost_entry(const GpuCost& g, const model::PriceCatalog& catalog,
                                                 const RightSizingOptions& options) {
  if (g.mig_unallocated) return std::nullopt;
  if (!g.mig_instance.empty()) return right_size_mig_instance(g.peaks, g.mig_profile, options);
  RightSizing r = right_size(g.peaks, catalog, options);
  if (r.outcome != RightSizingOutcome::kCheaper && r.outcome != RightSizingOutcome::kKeep) return r;
  if (const auto fit = mig_fit_for_gpu(g.peaks, options)) {
    r.reasoning += "; or in MIG mode: " + fit->reasoning;
    if (fit->usd_per_hour) r.reasoning += fmt::format(", ${:.2f}/h of its GPU's price", *fit->usd_per_hour);
  }
  return r;
}

}  // namespace gpuscope::analysis
