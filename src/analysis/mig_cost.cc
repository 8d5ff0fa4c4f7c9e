#include "analysis/mig_cost.h"

#include <algorithm>
#include <charconv>

namespace gpuscope::analysis {

unsigned mig_total_slices(std::string_view model) {
  // The A30 is the one MIG GPU with 4 compute slices; every other (A100, H100, H200, B200, GH200) has 7.
  return model.find("A30") != std::string_view::npos ? 4 : 7;
}

std::optional<unsigned> mig_profile_slices(std::string_view profile) {
  unsigned n = 0;
  const auto [end, ec] = std::from_chars(profile.data(), profile.data() + profile.size(), n);
  if (ec != std::errc() || n == 0 || end == profile.data() + profile.size() || *end != 'g') return std::nullopt;
  return n;
}

double mig_share(unsigned slices, unsigned total_slices) {
  if (total_slices == 0) return 0;
  return static_cast<double>(std::min(slices, total_slices)) / static_cast<double>(total_slices);
}

double mig_unallocated_share(unsigned allocated, unsigned total_slices) {
  if (total_slices == 0 || allocated >= total_slices) return 0;
  return static_cast<double>(total_slices - allocated) / static_cast<double>(total_slices);
}

CostReading mig_instance_reading(const CostReading& gpu, std::optional<double> gr_active,
                                 std::optional<double> sm_active) {
  CostReading r = gpu;
  r.gr_active = gr_active;
  r.sm_active = sm_active;
  r.utilization_percent.reset();
  return r;
}

CostReading mig_unallocated_reading(const CostReading& gpu) {
  CostReading r = gpu;
  r.gr_active = 0.0;
  r.sm_active = 0.0;
  r.utilization_percent.reset();
  return r;
}

}  // namespace gpuscope::analysis
