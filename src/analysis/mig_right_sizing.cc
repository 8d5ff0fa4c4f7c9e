#include "analysis/mig_right_sizing.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <span>

#include <fmt/format.h>

#include "analysis/mig_cost.h"

namespace gpuscope::analysis {
namespace {

// nvidia-smi mig -lgip's profiles (src/sim/mig_profiles.cc holds the same, with placements), smallest
// first. The whole GPU's SMs: an A100's 7g profile has 98 of its 108.
constexpr std::array<MigProfileSpec, 6> kMigSizingH100{{{"1g.10gb", 1, 16, 9984},
                                                        {"1g.20gb", 1, 26, 20096},
                                                        {"2g.20gb", 2, 32, 20096},
                                                        {"3g.40gb", 3, 60, 40448},
                                                        {"4g.40gb", 4, 64, 40448},
                                                        {"7g.80gb", 7, 132, 81152}}};
constexpr std::array<MigProfileSpec, 6> kMigSizingH200{{{"1g.18gb", 1, 16, 17920},
                                                        {"1g.35gb", 1, 26, 35840},
                                                        {"2g.35gb", 2, 32, 35840},
                                                        {"3g.71gb", 3, 60, 71680},
                                                        {"4g.71gb", 4, 64, 71680},
                                                        {"7g.141gb", 7, 132, 143360}}};
constexpr std::array<MigProfileSpec, 6> kMigSizingA100_80{{{"1g.10gb", 1, 14, 9728},
                                                           {"1g.20gb", 1, 14, 19968},
                                                           {"2g.20gb", 2, 28, 19968},
                                                           {"3g.40gb", 3, 42, 40192},
                                                           {"4g.40gb", 4, 56, 40192},
                                                           {"7g.80gb", 7, 98, 80896}}};
constexpr std::array<MigProfileSpec, 6> kMigSizingA100_40{{{"1g.5gb", 1, 14, 4864},
                                                           {"1g.10gb", 1, 14, 9984},
                                                           {"2g.10gb", 2, 28, 9984},
                                                           {"3g.20gb", 3, 42, 20096},
                                                           {"4g.20gb", 4, 56, 20096},
                                                           {"7g.40gb", 7, 98, 40448}}};
constexpr double kMigSizingMibPerGib = 1024;

struct MigModel {
  std::span<const MigProfileSpec> profiles;
  unsigned gpu_sms;
};

std::optional<MigModel> mig_model(std::string_view model) {
  if (model.find("H200") != std::string_view::npos) return MigModel{kMigSizingH200, 132};
  if (model.find("H100") != std::string_view::npos) return MigModel{kMigSizingH100, 132};
  if (model.find("A100") != std::string_view::npos) {
    if (model.find("40GB") != std::string_view::npos) return MigModel{kMigSizingA100_40, 108};
    return MigModel{kMigSizingA100_80, 108};
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
