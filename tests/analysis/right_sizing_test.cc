// Right-sizing: the cheapest catalog GPU that carries a measured workload, never one whose memory
// would not hold the peak plus the margin; the outcomes that refuse to judge; the text and JSON.
#include "analysis/right_sizing.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscope::analysis {
namespace {

using model::PriceCatalog;
using model::PriceTier;

// The shipped catalog's prices and specs (catalog/gpu_prices.yaml), written out so a change there
// does not move these tests; one test below runs on the shipped file itself.
constexpr std::string_view kCatalog = R"(gpus:
  - name: H100 80GB SXM
    match: ["H100 80GB HBM3"]
    prices: {on_demand: 5.505, spot: 1.65, commit_1y: 3.4682, commit_3y: 2.3672}
    specs: {memory_gib: 80, architecture: Hopper, bf16_tflops: 989, fp16_tensor_tflops: 989, fp32_tflops: 67,
            memory_bandwidth_gb_per_s: 3350, pcie_gen: 5, pcie_width: 16}
  - name: A100 80GB
    regex: 'A100.*80GB'
    prices: {on_demand: 3.673, spot: 1.10, commit_1y: 2.31, commit_3y: 1.58}
    specs: {memory_gib: 80, architecture: Ampere, bf16_tflops: 312, fp16_tensor_tflops: 312, fp32_tflops: 19.5,
            memory_bandwidth_gb_per_s: 2039, pcie_gen: 4, pcie_width: 16}
  - name: L4
    regex: '^NVIDIA L4$'
    prices: {on_demand: 0.888, spot: 0.266, commit_1y: 0.5594, commit_3y: 0.3818}
    specs: {memory_gib: 24, architecture: Ada Lovelace, bf16_tflops: 121, fp16_tensor_tflops: 121, fp32_tflops: 30.3,
            memory_bandwidth_gb_per_s: 300, pcie_gen: 4, pcie_width: 16}
  - name: T4
    match: ["Tesla T4"]
    prices: {on_demand: 0.35, spot: 0.12, commit_1y: 0.2205, commit_3y: 0.1505}
    specs: {memory_gib: 16, architecture: Turing, fp16_tensor_tflops: 65, fp32_tflops: 8.1,
            memory_bandwidth_gb_per_s: 320, pcie_gen: 3, pcie_width: 16}
  - name: V100
    match: ["Tesla V100-"]
    prices: {on_demand: 2.48, commit_1y: 1.5624, commit_3y: 1.0664}
    specs: {memory_gib: 16, architecture: Volta, fp16_tensor_tflops: 125, fp32_tflops: 15.7,
            memory_bandwidth_gb_per_s: 900, pcie_gen: 3, pcie_width: 16}
  - name: A10G
    match: ["A10G"]
    prices: {on_demand: 1.0}
)";

constexpr double kGib = 1024;  // MiB
constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

PriceCatalog catalog() {
  auto c = PriceCatalog::parse(kCatalog, "test.yaml");
  EXPECT_TRUE(c) << c.error();
  return *c;
}

// An H100 busy for two hours at `memory_gib` and SM active `sm`.
UsagePeaks h100(double memory_gib, double sm) {
  UsagePeaks p;
  p.model = kH100;
  p.observed_seconds = 7200;
  p.memory_total_mib = 81559;
  p.peak_memory_mib = memory_gib * kGib;
  p.peak_sm_active = sm;
  return p;
}

std::vector<std::string> names(const RightSizing& r) {
  std::vector<std::string> out;
  for (const auto& c : r.considered) out.push_back(c.name);
  return out;
}

const CandidateCheck& considered(const RightSizing& r, std::string_view name) {
  for (const auto& c : r.considered) {
    if (c.name == name) return c;
  }
  ADD_FAILURE() << name << " not considered";
  static const CandidateCheck none;
  return none;
}

// The issue's example: an H100 that never used more than 9.1 GiB and 12 % of its SMs is an L4's work.
TEST(RightSizing, IssueExampleH100AtNinePointOneGibGoesToAnL4) {
  const auto r = right_size(h100(9.1, 0.12), catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kCheaper);
  EXPECT_EQ(r.current, "H100 80GB SXM");
  EXPECT_EQ(r.current_usd_per_hour, 5.505);
  EXPECT_EQ(r.candidate, "L4");
  EXPECT_EQ(r.candidate_usd_per_hour, 0.888);
  EXPECT_EQ(r.candidate_memory_gib, 24);
  EXPECT_NEAR(r.monthly_savings_usd, (5.505 - 0.888) * 730, 1e-9);
  // Memory limits: 24 / 9.1 = 2.64, SM 0.12 × 67 / 30.3 = 0.265 leaves 3.8x.
  EXPECT_NEAR(r.headroom, 24 / 9.1, 1e-9);
  EXPECT_EQ(r.reasoning,
            "peak 9.1 GiB and SM active 12% on an H100 80GB SXM at $5.51/h; an L4 (24 GiB, $0.89/h) fits with 2.6x "
            "headroom: saves $3,370/month");
  // The cheaper T4 holds the memory but not the compute: 0.12 × 67 / 8.1 = 99 %.
  const auto& t4 = considered(r, "T4");
  EXPECT_FALSE(t4.fits);
  EXPECT_EQ(t4.why, "does not fit: SM would be 99% (over 80%)");
}

TEST(RightSizing, NeverRecommendsACardThatWouldNotHoldThePeak) {
  // 22 GiB + 10 % = 24.2 GiB: more than an L4's 24 GiB, however idle the SMs are.
  const auto r = right_size(h100(22, 0.05), catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kCheaper);
  EXPECT_NE(r.candidate, "L4");
  EXPECT_NE(r.candidate, "T4");
  EXPECT_NE(r.candidate, "V100");
  EXPECT_EQ(r.candidate, "A100 80GB");
  EXPECT_EQ(considered(r, "L4").why, "does not fit: memory 24 GiB < 24.2 GiB needed (peak 22.0 GiB + 10%)");
  for (const auto& c : r.considered) {
    EXPECT_EQ(c.fits, c.name == "A100 80GB" || c.name == "H100 80GB SXM") << c.name << ": " << c.why;
  }
  // Past every card's memory: nothing fits, not even the H100 itself, and nothing is recommended.
  const auto full = right_size(h100(76, 0.05), catalog(), {});
  EXPECT_NE(full.outcome, RightSizingOutcome::kCheaper);
  EXPECT_TRUE(full.candidate.empty());
}

TEST(RightSizing, MemoryMarginBoundary) {
  RightSizingOptions o;
  o.memory_margin = 0.5;
  // 16 GiB × 1.5 = 24 GiB: exactly an L4 holds it.
  auto at = right_size(h100(16, 0.05), catalog(), o);
  EXPECT_EQ(at.candidate, "L4");
  // One MiB more and it does not.
  auto p = h100(16, 0.05);
  *p.peak_memory_mib += 1;
  auto over = right_size(p, catalog(), o);
  EXPECT_EQ(over.candidate, "A100 80GB");
  EXPECT_FALSE(considered(over, "L4").fits);
  // The default 10 %: 24 GiB / 1.1 = 22341.8 MiB is the largest peak an L4 takes.
  p.peak_memory_mib = 22341;
  EXPECT_EQ(right_size(p, catalog(), {}).candidate, "L4");
  p.peak_memory_mib = 22342;
  EXPECT_EQ(right_size(p, catalog(), {}).candidate, "A100 80GB");
}

TEST(RightSizing, SaturatedH100GetsNoCandidate) {
  const std::string advice = "saturated: no smaller GPU will do; consider more of them";
  // SM: 95 % of an H100 is more than any cheaper GPU has.
  auto busy = right_size(h100(40, 0.95), catalog(), {});
  EXPECT_EQ(busy.outcome, RightSizingOutcome::kSaturated);
  EXPECT_TRUE(busy.candidate.empty());
  EXPECT_EQ(busy.candidate_usd_per_hour, std::nullopt);
  EXPECT_EQ(busy.monthly_savings_usd, 0);
  EXPECT_EQ(busy.reasoning, "peak 40.0 GiB and SM active 95% on an H100 80GB SXM at $5.51/h; " + advice);
  // Memory: 74 GiB of its 79.6 is over 90 % full.
  EXPECT_EQ(right_size(h100(74, 0.10), catalog(), {}).outcome, RightSizingOutcome::kSaturated);
  // DRAM at the target load.
  auto p = h100(40, 0.10);
  p.peak_dram_active = 0.80;
  EXPECT_EQ(right_size(p, catalog(), {}).outcome, RightSizingOutcome::kSaturated);
  // Half busy and nothing cheaper fits: keep it, not saturated.
  auto half = right_size(h100(40, 0.50), catalog(), {});
  EXPECT_EQ(half.outcome, RightSizingOutcome::kKeep);
  EXPECT_EQ(half.reasoning,
            "peak 40.0 GiB and SM active 50% on an H100 80GB SXM at $5.51/h; no cheaper GPU in the on_demand tier "
            "fits: keep it");
}

TEST(RightSizing, TooShortIsCheckedFirst) {
  auto p = h100(9.1, 0.12);
  p.observed_seconds = 1800;
  auto r = right_size(p, catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kTooShort);
  EXPECT_EQ(r.reasoning, "less than an hour of readings (30 minutes): too short to judge");
  EXPECT_TRUE(r.candidate.empty());
  EXPECT_TRUE(r.considered.empty());
  // Even before asking whether the catalog knows the GPU or whether memory was recorded.
  p.model = "NVIDIA H200";
  p.peak_memory_mib.reset();
  EXPECT_EQ(right_size(p, catalog(), {}).outcome, RightSizingOutcome::kTooShort);
  p = h100(9.1, 0.12);
  p.observed_seconds = 3600;
  EXPECT_EQ(right_size(p, catalog(), {}).outcome, RightSizingOutcome::kCheaper) << "an hour is enough";
}

TEST(RightSizing, NotInCatalogAndNoMemoryPeak) {
  auto p = h100(9.1, 0.12);
  p.model = "NVIDIA H200";
  auto r = right_size(p, catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kNotInCatalog);
  EXPECT_EQ(r.current, "");
  EXPECT_EQ(r.reasoning, "'NVIDIA H200' is not in the price catalog (test.yaml): nothing to compare it with");
  p.model = "NVIDIA A10G";  // priced, but no specs
  r = right_size(p, catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kNotInCatalog);
  EXPECT_EQ(r.current, "A10G");
  EXPECT_EQ(r.reasoning, "the price catalog's entry 'A10G' has no specs: its work cannot be scaled to other GPUs");
  // A V100 has no spot price and none was given: nothing to compare.
  p.model = "Tesla V100-SXM2-16GB";
  RightSizingOptions spot;
  spot.tier = PriceTier::kSpot;
  EXPECT_EQ(right_size(p, catalog(), spot).outcome, RightSizingOutcome::kNotInCatalog);
  p.current_usd_per_hour = 0.9;  // what the user says it is billed at
  EXPECT_EQ(right_size(p, catalog(), spot).outcome, RightSizingOutcome::kCheaper);

  auto no_memory = h100(9.1, 0.12);
  no_memory.peak_memory_mib.reset();
  r = right_size(no_memory, catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kNoMemoryPeak);
  EXPECT_TRUE(r.candidate.empty());
  EXPECT_EQ(r.reasoning, "no memory readings: the memory a workload needs is never guessed");
}

// Measured on an A100 (bf16): the T4 and V100 have only fp16 tensor cores.
TEST(RightSizing, TensorWorkOnCardsWithoutBf16NeedsTheFp16Caveat) {
  UsagePeaks p;
  p.model = "NVIDIA A100-SXM4-80GB";
  p.observed_seconds = 7200;
  p.peak_memory_mib = 10 * kGib;
  p.peak_sm_active = 0.10;
  p.peak_dram_active = 0.10;
  p.peak_tensor_active = 0.10;
  // T4: SM 0.1 × 19.5 / 8.1 = 24 %, tensor 0.1 × 312 / 65 = 48 %, DRAM 0.1 × 2039 / 320 = 64 %.
  auto r = right_size(p, catalog(), {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kCheaper);
  EXPECT_EQ(r.candidate, "T4");
  EXPECT_TRUE(r.reasoning.ends_with("; needs fp16 (autocast) instead of bf16")) << r.reasoning;
  EXPECT_TRUE(considered(r, "T4").why.ends_with("needs fp16 (autocast) instead of bf16")) << considered(r, "T4").why;
  EXPECT_NE(considered(r, "V100").why.find("needs fp16 (autocast) instead of bf16"), std::string::npos);
  EXPECT_EQ(considered(r, "L4").why.find("autocast"), std::string::npos) << "the L4 has bf16";

  // Tensor cores barely used: no change of precision to ask for.
  p.peak_tensor_active = 0.02;
  r = right_size(p, catalog(), {});
  EXPECT_EQ(r.candidate, "T4");
  EXPECT_EQ(r.reasoning.find("autocast"), std::string::npos) << r.reasoning;

  // 30 % of an A100's bf16 is 144 % of a T4's fp16 and 75 % of a V100's: the T4 is out, the L4 (bf16,
  // 0.3 × 312 / 121 = 77 %) is cheaper than the V100.
  p.peak_tensor_active = 0.30;
  r = right_size(p, catalog(), {});
  EXPECT_EQ(r.candidate, "L4");
  EXPECT_EQ(considered(r, "T4").why, "does not fit: tensor would be 144% (over 80%)");
  EXPECT_EQ(r.reasoning.find("autocast"), std::string::npos);

  // Measured on a V100 (fp16 already): the T4 is scaled by fp16 and needs no caveat.
  p.model = "Tesla V100-SXM2-16GB";
  p.peak_dram_active.reset();
  p.peak_sm_active = 0.20;
  r = right_size(p, catalog(), {});
  EXPECT_EQ(r.candidate, "T4");  // tensor 0.3 × 125 / 65 = 58 %, SM 0.2 × 15.7 / 8.1 = 39 %
  EXPECT_EQ(r.reasoning.find("autocast"), std::string::npos) << r.reasoning;
}

TEST(RightSizing, SpotTierChangesTheChoiceAndTheSavings) {
  // DRAM-heavy: 8 % of an H100's 3,350 GB/s is 89 % of an L4's and 84 % of a T4's; a V100 carries it.
  auto p = h100(9.1, 0.12);
  p.peak_dram_active = 0.08;
  auto on_demand = right_size(p, catalog(), {});
  EXPECT_EQ(on_demand.candidate, "V100");
  EXPECT_NEAR(on_demand.monthly_savings_usd, (5.505 - 2.48) * 730, 1e-9);
  // The V100 has no spot price: the A100 is the cheapest spot GPU that fits.
  RightSizingOptions spot;
  spot.tier = PriceTier::kSpot;
  auto r = right_size(p, catalog(), spot);
  EXPECT_EQ(r.candidate, "A100 80GB");
  EXPECT_EQ(r.current_usd_per_hour, 1.65);
  EXPECT_NEAR(r.monthly_savings_usd, (1.65 - 1.10) * 730, 1e-9);
  // The issue's example on spot: the same L4, a smaller saving.
  r = right_size(h100(9.1, 0.12), catalog(), spot);
  EXPECT_EQ(r.candidate, "L4");
  EXPECT_NEAR(r.monthly_savings_usd, (1.65 - 0.266) * 730, 1e-9);
  EXPECT_TRUE(r.reasoning.ends_with("saves $1,010/month")) << r.reasoning;
  RightSizingOptions monthly;
  monthly.hours_per_month = 100;
  EXPECT_NEAR(right_size(h100(9.1, 0.12), catalog(), monthly).monthly_savings_usd, (5.505 - 0.888) * 100, 1e-9);
}

TEST(RightSizing, ConsideredListsEveryPricedCandidateCheapestFirstWithWhy) {
  const auto r = right_size(h100(9.1, 0.12), catalog(), {});
  // A10G has no specs: not a candidate.
  EXPECT_EQ(names(r), (std::vector<std::string>{"T4", "L4", "V100", "A100 80GB", "H100 80GB SXM"}));
  for (std::size_t i = 1; i < r.considered.size(); ++i) {
    EXPECT_LE(*r.considered[i - 1].usd_per_hour, *r.considered[i].usd_per_hour);
  }
  EXPECT_EQ(considered(r, "L4").why, "fits: 24 GiB holds peak 9.1 GiB + 10%, loads SM 27%; headroom 2.6x");
  EXPECT_TRUE(considered(r, "V100").fits);  // 16 GiB ≥ 10.0 GiB, SM 0.12 × 67 / 15.7 = 51 %
  EXPECT_TRUE(considered(r, "H100 80GB SXM").why.starts_with("the measured GPU; fits"))
      << considered(r, "H100 80GB SXM").why;
  EXPECT_NEAR(considered(r, "H100 80GB SXM").headroom, 1 / 0.12, 1e-9) << "SM limits: 8.3x, memory 8.8x";

  RightSizingOptions spot;
  spot.tier = PriceTier::kSpot;
  EXPECT_EQ(names(right_size(h100(9.1, 0.12), catalog(), spot)),
            (std::vector<std::string>{"T4", "L4", "A100 80GB", "H100 80GB SXM"}))
      << "no spot price: no V100";
}

TEST(RightSizing, PcieTrafficNeedsTheCandidatesLink) {
  EXPECT_DOUBLE_EQ(pcie_bytes_per_second(1, 1), 250e6);  // 2.5 GT/s, 8b/10b
  EXPECT_DOUBLE_EQ(pcie_bytes_per_second(2, 16), 8e9);
  EXPECT_DOUBLE_EQ(pcie_bytes_per_second(3, 16), 8e9 * 16 * 128 / 130 / 8);  // 15.75 GB/s
  EXPECT_DOUBLE_EQ(pcie_bytes_per_second(4, 16), 16e9 * 16 * 128 / 130 / 8);
  EXPECT_DOUBLE_EQ(pcie_bytes_per_second(5, 16), 32e9 * 16 * 128 / 130 / 8);
  EXPECT_EQ(pcie_bytes_per_second(6, 16), 0);
  // 14 GB/s is 89 % of the T4's gen3 x16 and 44 % of the L4's gen4 x16.
  auto p = h100(9.1, 0.05);
  EXPECT_EQ(right_size(p, catalog(), {}).candidate, "T4");
  p.peak_pcie_bytes_per_second = 14e9;
  const auto r = right_size(p, catalog(), {});
  EXPECT_EQ(r.candidate, "L4");
  EXPECT_EQ(considered(r, "T4").why, "does not fit: PCIe gen3 x16 would be 89% (over 80%)");
}

TEST(RightSizing, UtilizationStandsInForSmActiveAndSaysSo) {
  auto p = h100(9.1, 0);
  p.peak_sm_active.reset();
  p.peak_utilization_percent = 10;
  const auto r = right_size(p, catalog(), {});
  EXPECT_EQ(r.candidate, "L4");  // 0.1 × 67 / 30.3 = 22 %; the T4 would be 83 %
  EXPECT_TRUE(r.reasoning.starts_with("peak 9.1 GiB and utilization.gpu 10% (SM active not recorded) on an H100"))
      << r.reasoning;
}

TEST(RightSizing, JsonHasUnitsInKeysAndNullsForAbsent) {
  const auto j = right_sizing_json(right_size(h100(9.1, 0.12), catalog(), {}));
  EXPECT_EQ(j["outcome"], "cheaper");
  EXPECT_EQ(j["current"], "H100 80GB SXM");
  EXPECT_EQ(j["current_usd_per_hour"], 5.505);
  EXPECT_EQ(j["candidate"], "L4");
  EXPECT_EQ(j["candidate_usd_per_hour"], 0.888);
  EXPECT_EQ(j["candidate_memory_gib"], 24);
  EXPECT_NEAR(j["headroom_ratio"].get<double>(), 24 / 9.1, 1e-9);
  EXPECT_NEAR(j["monthly_savings_usd"].get<double>(), (5.505 - 0.888) * 730, 1e-9);
  ASSERT_EQ(j["considered"].size(), 5u);
  EXPECT_EQ(j["considered"][0]["name"], "T4");
  EXPECT_EQ(j["considered"][0]["fits"], false);
  EXPECT_EQ(j["considered"][0]["usd_per_hour"], 0.35);

  auto p = h100(9.1, 0.12);
  p.model = "NVIDIA H200";
  const auto none = right_sizing_json(right_size(p, catalog(), {}));
  EXPECT_EQ(none["outcome"], "not_in_catalog");
  EXPECT_TRUE(none["current"].is_null());
  EXPECT_TRUE(none["candidate"].is_null());
  EXPECT_TRUE(none["current_usd_per_hour"].is_null());
  EXPECT_TRUE(none["candidate_memory_gib"].is_null());
  EXPECT_TRUE(none["considered"].empty());
}

TEST(RightSizing, OutcomeIds) {
  EXPECT_EQ(right_sizing_outcome_id(RightSizingOutcome::kCheaper), "cheaper");
  EXPECT_EQ(right_sizing_outcome_id(RightSizingOutcome::kKeep), "keep");
  EXPECT_EQ(right_sizing_outcome_id(RightSizingOutcome::kSaturated), "saturated");
  EXPECT_EQ(right_sizing_outcome_id(RightSizingOutcome::kTooShort), "too_short");
  EXPECT_EQ(right_sizing_outcome_id(RightSizingOutcome::kNotInCatalog), "not_in_catalog");
  EXPECT_EQ(right_sizing_outcome_id(RightSizingOutcome::kNoMemoryPeak), "no_memory_peak");
}

// The shipped catalog/gpu_prices.yaml, specs and all, gives the issue's answer.
TEST(RightSizingShippedCatalog, IssueExample) {
  auto c = PriceCatalog::load(std::string(GPUSCOPE_SOURCE_DIR) + "/catalog/gpu_prices.yaml");
  ASSERT_TRUE(c) << c.error();
  const auto r = right_size(h100(9.1, 0.12), *c, {});
  EXPECT_EQ(r.outcome, RightSizingOutcome::kCheaper);
  EXPECT_EQ(r.candidate, "L4");
  EXPECT_NEAR(r.monthly_savings_usd, (5.505 - 0.888) * 730, 1e-6);
  EXPECT_EQ(r.considered.size(), 5u) << "every shipped entry has specs and an on-demand price";
  // A 30 GiB peak never lands on a 24 or 16 GiB card.
  EXPECT_EQ(right_size(h100(30, 0.05), *c, {}).candidate, "A100 80GB");
}

}  // namespace
}  // namespace gpuscope::analysis
