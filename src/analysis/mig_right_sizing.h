// Right-sizing onto MIG: whether a whole GPU's work would fit one MIG GPU instance of its own model (a
// 2g.20gb is 2/7 of an H100, at 2/7 of its price) and whether a MIG instance's work would fit a smaller
// profile. The same measure as the catalog's right-sizing: the memory peak plus its margin must fit the
// profile's memory, and the SM and tensor peaks, scaled from the measured SMs to the profile's, must stay
// at or under the target load.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "analysis/cost_report.h"
#include "analysis/right_sizing.h"

namespace gpuscope::analysis {

// One GPU instance profile (nvidia-smi mig -lgip, the "+me" variants left out: the same size).
struct MigProfileSpec {
  std::string_view name;  // "2g.20gb"
  unsigned slices = 0;    // compute slices
  unsigned sms = 0;
  double memory_mib = 0;
};

// What MIG sizing found: the smallest profile that carries the work, if smaller than what it runs on.
struct MigFit {
  std::string profile;
  unsigned slices = 0;
  unsigned total_slices = 0;
  std::optional<double> usd_per_hour;  // the measured price × slices / total_slices
  std::string reasoning;               // "fits a 2g.20gb: 2/7 of the GPU (...)"
};

// The GPU's SMs and its MIG profiles, smallest first; none for a model without MIG (or not known here).
std::optional<unsigned> mig_gpu_sms(std::string_view model);

// A whole GPU's work (peaks measured on all of its SMs) on the smallest MIG profile of its model that
// carries it; none when no profile smaller than the whole GPU does, or the peaks lack memory.
std::optional<MigFit> mig_fit_for_gpu(const UsagePeaks& peaks, const RightSizingOptions& options);

// A MIG instance of `profile` (peaks measured on its own SMs and memory) on a smaller profile of its GPU's
// model; none when none smaller carries it, or what is needed is not recorded.
std::optional<MigFit> mig_fit_for_instance(const UsagePeaks& peaks, std::string_view profile,
                                           const RightSizingOptions& options);

// The right-sizing of a MIG instance, in the catalog right-sizing's shape: kCheaper with the smaller
// profile as candidate, kKeep when none fits, kTooShort/kNoMemoryPeak as right_size says.
RightSizing right_size_mig_instance(const UsagePeaks& peaks, std::string_view profile, const RightSizingOptions& options);

// A cost report entry's right-sizing: a MIG instance onto a smaller profile; a whole GPU by the catalog
// (right_size), with "or in MIG mode: fits a 2g.20gb: 2/7 of the GPU (...)" added when its work fits a MIG
// profile of its model; unallocated MIG slices: none (they did no work to size).
std::optional<RightSizing> right_size_cost_entry(const GpuCost& g, const model::PriceCatalog& catalog,
                                                 const RightSizingOptions& options);

}  // namespace gpuscope::analysis
