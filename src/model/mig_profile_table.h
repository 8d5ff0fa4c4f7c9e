// MIG GPU instance profiles per GPU model, as nvidia-smi mig -lgip lists them: one table for the
// simulated driver (src/sim/mig_profiles.cc: placement, ids) and the MIG right-sizing
// (src/analysis/mig_right_sizing.cc: which profile carries a workload). Header-only: the simulated
// driver is built from src/sim alone.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace gpuscope::model {

struct MigProfileFacts {
  unsigned index;          // nvmlDeviceGetGpuInstanceProfileInfoV's profile index (NVML_GPU_INSTANCE_PROFILE_*)
  unsigned id;             // profile id, as nvmlGpuInstanceInfo_t.profileId
  std::string_view name;   // "1g.10gb": the driver's name without its "MIG " prefix
  unsigned slices;         // compute slices (of 7)
  unsigned memory_slices;  // memory slices (of 8): the placement's size
  unsigned sm_count;
  std::uint64_t memory_mib;
  unsigned max_instances;
  unsigned copy_engines, decoders, encoders, jpegs, ofas;
  std::span<const unsigned> starts;  // memory slices a placement may start at
};

namespace mig_tables {

inline constexpr std::array<unsigned, 7> kMigStartsOneSlice{0, 1, 2, 3, 4, 5, 6};
inline constexpr std::array<unsigned, 4> kMigStartsTwoSlicesOneG{0, 2, 4, 6};
inline constexpr std::array<unsigned, 3> kMigStartsTwoSlices{0, 2, 4};
inline constexpr std::array<unsigned, 2> kMigStartsThreeSlices{0, 4};
inline constexpr std::array<unsigned, 1> kMigStartsWhole{0};

// Indices, ids, names, slices, SMs, memory and counts of the H100 80GB are the contract's
// (notes/mig_design.md, as nvidia-smi mig -lgip prints them); the A100's are NVIDIA's MIG user guide
// names and ids with its SM counts (14 per slice, 98 whole), their memory as nvidia-smi prints it
// (the 40GB board's halves the 80GB's). The H200's names follow the user guide, its memory sizes are
// the H100's scaled to its 141 GB and its shared engine counts the H100's: plausible, not measured.
// Copy engine / decoder / encoder / JPEG / OFA counts are as nvidia-smi mig -lgip prints them for
// these boards to the best of our knowledge (not checked against a real board).
inline constexpr std::array<MigProfileFacts, 7> kMigH100_80{{
    {0, 19, "1g.10gb", 1, 1, 16, 9984, 7, 1, 1, 0, 1, 0, kMigStartsOneSlice},
    {1, 14, "2g.20gb", 2, 2, 32, 20096, 3, 2, 2, 0, 2, 0, kMigStartsTwoSlices},
    {2, 9, "3g.40gb", 3, 4, 60, 40448, 2, 3, 3, 0, 3, 0, kMigStartsThreeSlices},
    {3, 5, "4g.40gb", 4, 4, 64, 40448, 1, 4, 4, 0, 4, 0, kMigStartsWhole},
    {4, 0, "7g.80gb", 7, 8, 132, 81152, 1, 8, 7, 7, 7, 1, kMigStartsWhole},
    {7, 20, "1g.10gb+me", 1, 1, 16, 9984, 1, 1, 1, 1, 1, 1, kMigStartsOneSlice},
    {9, 15, "1g.20gb", 1, 2, 26, 20096, 4, 1, 1, 0, 1, 0, kMigStartsTwoSlicesOneG},
}};
inline constexpr std::array<MigProfileFacts, 7> kMigH200{{
    {0, 19, "1g.18gb", 1, 1, 16, 17920, 7, 1, 1, 0, 1, 0, kMigStartsOneSlice},
    {1, 14, "2g.35gb", 2, 2, 32, 35840, 3, 2, 2, 0, 2, 0, kMigStartsTwoSlices},
    {2, 9, "3g.71gb", 3, 4, 60, 71680, 2, 3, 3, 0, 3, 0, kMigStartsThreeSlices},
    {3, 5, "4g.71gb", 4, 4, 64, 71680, 1, 4, 4, 0, 4, 0, kMigStartsWhole},
    {4, 0, "7g.141gb", 7, 8, 132, 143360, 1, 8, 7, 7, 7, 1, kMigStartsWhole},
    {7, 20, "1g.18gb+me", 1, 1, 16, 17920, 1, 1, 1, 1, 1, 1, kMigStartsOneSlice},
    {9, 15, "1g.35gb", 1, 2, 26, 35840, 4, 1, 1, 0, 1, 0, kMigStartsTwoSlicesOneG},
}};
inline constexpr std::array<MigProfileFacts, 7> kMigA100_80{{
    {0, 19, "1g.10gb", 1, 1, 14, 9728, 7, 1, 0, 0, 0, 0, kMigStartsOneSlice},
    {1, 14, "2g.20gb", 2, 2, 28, 19968, 3, 2, 1, 0, 0, 0, kMigStartsTwoSlices},
    {2, 9, "3g.40gb", 3, 4, 42, 40192, 2, 3, 2, 0, 0, 0, kMigStartsThreeSlices},
    {3, 5, "4g.40gb", 4, 4, 56, 40192, 1, 4, 2, 0, 0, 0, kMigStartsWhole},
    {4, 0, "7g.80gb", 7, 8, 98, 80896, 1, 7, 5, 0, 1, 1, kMigStartsWhole},
    {7, 20, "1g.10gb+me", 1, 1, 14, 9728, 1, 1, 1, 0, 1, 1, kMigStartsOneSlice},
    {9, 15, "1g.20gb", 1, 2, 14, 19968, 4, 1, 1, 0, 0, 0, kMigStartsTwoSlicesOneG},
}};
inline constexpr std::array<MigProfileFacts, 7> kMigA100_40{{
    {0, 19, "1g.5gb", 1, 1, 14, 4864, 7, 1, 0, 0, 0, 0, kMigStartsOneSlice},
    {1, 14, "2g.10gb", 2, 2, 28, 9984, 3, 2, 1, 0, 0, 0, kMigStartsTwoSlices},
    {2, 9, "3g.20gb", 3, 4, 42, 20096, 2, 3, 2, 0, 0, 0, kMigStartsThreeSlices},
    {3, 5, "4g.20gb", 4, 4, 56, 20096, 1, 4, 2, 0, 0, 0, kMigStartsWhole},
    {4, 0, "7g.40gb", 7, 8, 98, 40448, 1, 7, 5, 0, 1, 1, kMigStartsWhole},
    {7, 20, "1g.5gb+me", 1, 1, 14, 4864, 1, 1, 1, 0, 1, 1, kMigStartsOneSlice},
    {9, 15, "1g.10gb", 1, 2, 14, 9984, 4, 1, 1, 0, 0, 0, kMigStartsTwoSlicesOneG},
}};

}  // namespace mig_tables

// The profiles of the GPU model NVML names `nvml_name`, in profile-index order; empty for a model
// without a table here.
constexpr std::span<const MigProfileFacts> mig_profile_table(std::string_view nvml_name) {
  if (nvml_name == "NVIDIA H100 80GB HBM3") return mig_tables::kMigH100_80;
  if (nvml_name == "NVIDIA H200") return mig_tables::kMigH200;
  if (nvml_name == "NVIDIA A100-SXM4-80GB") return mig_tables::kMigA100_80;
  if (nvml_name == "NVIDIA A100-PCIE-40GB") return mig_tables::kMigA100_40;
  return {};
}

}  // namespace gpuscope::model
