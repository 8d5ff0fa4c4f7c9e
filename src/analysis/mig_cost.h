// How a GPU in MIG mode is paid for: the GPU costs the same per hour, split among its GPU instances by
// their compute slices (a 3g.40gb holds 3 of an H100's 7), and the slices no instance holds are
// unallocated capacity, paid and idle. The agent's cost counters and `gpuscope cost` over the history
// both split with these functions, so they count the same dollars.
#pragma once

#include <optional>
#include <string_view>

#include "analysis/cost_interval.h"

namespace gpuscope::analysis {

// The compute slices a GPU in MIG mode has: 4 on an A30, 7 on A100, H100, H200 and B200.
unsigned mig_total_slices(std::string_view model);

// An instance's slices from its profile's name ("3g.40gb": 3; "1g.10gb+me": 1); none if it does not
// start with "<n>g.". The recorded gpu_instance_slices is preferred where there is one.
std::optional<unsigned> mig_profile_slices(std::string_view profile);

// The share of the GPU an instance of `slices` holds (clamped to the GPU), and what no instance holds
// for instances of `allocated` slices in all.
double mig_share(unsigned slices, unsigned total_slices);
double mig_unallocated_share(unsigned allocated, unsigned total_slices);

// A GPU instance's reading: the GPU's (up, price, energy: its time is the GPU's) with the instance's own
// GR engine and SM active; utilization.gpu is not a MIG instance's (NVML has none in MIG mode). An
// instance with neither ratio recorded (GPM's first reading) is "unknown" for that interval, as a GPU.
CostReading mig_instance_reading(const CostReading& gpu, std::optional<double> gr_active,
                                 std::optional<double> sm_active);

// The unallocated slices' reading: the GPU's, with nothing running on them (idle while the GPU is up).
CostReading mig_unallocated_reading(const CostReading& gpu);

}  // namespace gpuscope::analysis
