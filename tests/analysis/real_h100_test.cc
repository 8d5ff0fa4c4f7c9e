// The diagnosis on a real H100 (../shared/reference/real-h100/): the recording gpuscope's agent made
// through nine PyTorch phases, read as `gpuscope import` reads it. Each phase must get its verdict from
// a window inside it, and the timeline must name every phase in order.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "analysis/diagnosis.h"
#include "analysis/diagnosis_report.h"
#include "analysis/reading_source.h"
#include "analysis/timeline.h"
#include "real_h100_recording.h"
#include "store/series_set.h"

namespace gpuscope::analysis {
namespace {

using testing::Phase;

class RealH100 : public testing::RealH100Recording {
 protected:
  // The diagnosis at the phase's end over a window inside it: its first 3 s (the switch) left out.
  static GpuDiagnosis at_end_of(const std::string& name) {
    const Phase* it = phase(name);
    if (it == nullptr) return {};
    const std::int64_t window = std::min<std::int64_t>(30'000, it->end_ms - it->start_ms - 3000);
    StoreSource source(*data_);
    auto d = diagnose_from(source, it->end_ms, window, Thresholds{}, {});
    if (!d || d->gpus.size() != 1) {
      ADD_FAILURE() << name << ": " << (d ? std::to_string(d->gpus.size()) + " GPUs" : d.error());
      return {};
    }
    return d->gpus.at(0);
  }

  static bool has_finding(const GpuDiagnosis& g, const std::string& id) {
    return std::any_of(g.findings.begin(), g.findings.end(), [&](const Finding& f) { return f.id == id; });
  }
  static std::optional<double> evidence(const GpuDiagnosis& g, const std::string& name) {
    for (const auto& e : g.evidence) {
      if (e.name == name) return e.value;
    }
    return std::nullopt;
  }
};

TEST_F(RealH100, IdleStartIsIdleHoldingItsMemory) {
  const auto g = at_end_of("idle_start");
  EXPECT_EQ(g.verdict, Verdict::kIdle) << g.summary;
  const auto held = evidence(g, "memory_used_mib");
  ASSERT_TRUE(held) << g.summary;
  EXPECT_GT(*held / 1024, 4.3);
  EXPECT_LT(*held / 1024, 4.8);
  EXPECT_NE(g.summary.find("GiB still allocated"), std::string::npos) << g.summary;
  EXPECT_EQ(g.identity.model, "NVIDIA H100 80GB HBM3");
}

TEST_F(RealH100, Bf16MatmulIsComputeBoundAndPowerCapped) {
  const auto g = at_end_of("tensor_bf16_matmul");
  EXPECT_EQ(g.verdict, Verdict::kComputeBound) << g.summary;
  EXPECT_TRUE(has_finding(g, "power_capped")) << g.summary;
  // Occupancy ~0.14 is the healthiest phase, not a batch-size problem.
  EXPECT_LT(evidence(g, "sm_occupancy").value_or(1), 0.2);
}

TEST_F(RealH100, Fp32MatmulUsesNoTensorCoresAndSlowsDownThermally) {
  const auto g = at_end_of("fp32_matmul_no_tensor");
  EXPECT_EQ(g.verdict, Verdict::kNoTensorCores) << g.summary;
  EXPECT_TRUE(has_finding(g, "thermal_slowdown")) << g.summary;
  EXPECT_GT(evidence(g, "fp32_active").value_or(0), 0.5);
}

TEST_F(RealH100, DeviceCopyIsMemoryBound) {
  const auto g = at_end_of("dram_copy");
  EXPECT_EQ(g.verdict, Verdict::kMemoryBound) << g.summary;
}

TEST_F(RealH100, TinyKernelsAreLaunchBound) {
  const auto g = at_end_of("tiny_kernels_launch_bound");
  EXPECT_EQ(g.verdict, Verdict::kLaunchBound) << g.summary;
}

TEST_F(RealH100, HostToDeviceCopiesAreTransferBoundAndUtilizationLies) {
  const auto g = at_end_of("h2d_pcie_copy");
  EXPECT_EQ(g.verdict, Verdict::kTransferBound) << g.summary;
  EXPECT_EQ(g.detail, "host→device");
  EXPECT_TRUE(has_finding(g, "utilization_lies")) << g.summary;
  EXPECT_FALSE(has_finding(g, "slow_transfers")) << "55 GB/s of a Gen5 x16 link is not slow";
}

TEST_F(RealH100, SawtoothIsStarvedOnTheCpuSide) {
  const auto g = at_end_of("sawtooth_data_starved");
  EXPECT_EQ(g.verdict, Verdict::kInputStarved) << g.summary;
  EXPECT_EQ(g.detail, "CPU side");
}

TEST_F(RealH100, LeakAndEndAreIdle) {
  for (const char* phase : {"memory_leak", "idle_end"}) {
    const auto g = at_end_of(phase);
    EXPECT_EQ(g.verdict, Verdict::kIdle) << phase << ": " << g.summary;
    ASSERT_TRUE(g.since_ms) << phase;
  }
}

TEST_F(RealH100, TimelineNamesEveryPhaseInOrderWithinTwoWindows) {
  StoreSource source(*data_);
  TimelineOptions options;
  options.from_ms = phases_->front().start_ms - 5000;
  options.to_ms = phases_->back().end_ms;
  auto changes = timeline(source, options, Thresholds{}, {});
  ASSERT_TRUE(changes) << changes.error();
  std::vector<Verdict> got;
  for (const auto& c : *changes) got.push_back(c.to);
  const std::vector<Verdict> want = {Verdict::kIdle,        Verdict::kComputeBound,  Verdict::kNoTensorCores,
                                     Verdict::kMemoryBound, Verdict::kLaunchBound,   Verdict::kTransferBound,
                                     Verdict::kInputStarved, Verdict::kIdle};
  ASSERT_EQ(got, want) << timeline_text(*changes);
  // Each phase's verdict within two windows of its start (memory_leak and idle_end share one line).
  const std::vector<std::string> phase_of_change = {"idle_start",
                                                    "tensor_bf16_matmul",
                                                    "fp32_matmul_no_tensor",
                                                    "dram_copy",
                                                    "tiny_kernels_launch_bound",
                                                    "h2d_pcie_copy",
                                                    "sawtooth_data_starved",
                                                    "memory_leak"};
  for (std::size_t i = 1; i < want.size(); ++i) {
    const auto p = std::find_if(phases_->begin(), phases_->end(),
                                [&](const Phase& ph) { return ph.name == phase_of_change[i]; });
    EXPECT_GE((*changes)[i].at_ms, p->start_ms) << phase_of_change[i];
    EXPECT_LE((*changes)[i].at_ms, p->start_ms + 2 * options.window_ms) << phase_of_change[i];
  }
}

}  // namespace
}  // namespace gpuscope::analysis
