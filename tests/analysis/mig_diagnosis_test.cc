// The diagnosis of a GPU in MIG mode: each MIG instance is judged alone (named by its profile and
// GPU instance id), instances are not each other's peers, and the GPU itself points at them.
#include <gtest/gtest.h>

#include <algorithm>

#include "analysis/diagnosis.h"
#include "analysis/diagnosis_report.h"
#include "analysis/thresholds.h"
#include "synthetic_gpus.h"

namespace gpuscope::analysis {
namespace {

using testing::at_s;
using testing::GpuBuilder;
using testing::histories;

// GPU 0 in MIG mode: instance 2 (3g.40gb) computes hard, instance 7 (1g.10gb) a little; the GPU's own
// series are power and temperature only, as gpuscope exports a MIG GPU.
std::vector<GpuHistory> mig_node() {
  GpuBuilder gpu("0");
  gpu.set("DCGM_FI_DEV_POWER_USAGE", 0, 60, 420.0).set("DCGM_FI_DEV_GPU_TEMP", 0, 60, 60.0);
  GpuBuilder big("0");
  big.mig("2", "3g.40gb").busy(0, 60, 0.95, 0.85, 0.45, 0.30, 0.05, 0);
  GpuBuilder small("0");
  small.mig("7", "1g.10gb").busy(0, 60, 0.25, 0.20, 0.10, 0.05, 0.02, 0);
  auto h = histories({gpu, big, small});
  for (auto& g : h) g.signals[static_cast<std::size_t>(Signal::kUtilization)].clear();  // no utilization in MIG mode
  return h;
}

const GpuDiagnosis& find(const Diagnosis& d, const std::string& mig) {
  const auto it = std::ranges::find_if(d.gpus, [&](const GpuDiagnosis& g) { return g.identity.mig_instance == mig; });
  EXPECT_NE(it, d.gpus.end()) << mig;
  return *it;
}

TEST(MigDiagnosis, EachInstanceIsJudgedAloneAndNamedByItsProfile) {
  const auto h = mig_node();
  const Diagnosis d = diagnose(h, at_s(60), 30'000, Thresholds{});
  ASSERT_EQ(d.gpus.size(), 3u);
  const auto& big = find(d, "2");
  EXPECT_EQ(big.identity.mig_profile, "3g.40gb");
  EXPECT_EQ(big.verdict, Verdict::kComputeBound);
  // Instance 7 is far less busy than instance 2, but they are separate tenants, not ranks of one job.
  const auto& small = find(d, "7");
  EXPECT_TRUE(std::ranges::none_of(small.findings, [](const Finding& f) { return f.id == "imbalance_busy"; }));
  // The GPU itself has no activity of its own in MIG mode: it points at its instances instead of
  // asking for profiling fields.
  const auto& whole = find(d, "");
  EXPECT_EQ(whole.verdict, Verdict::kUnknown);
  EXPECT_EQ(whole.summary, "in MIG mode: its work is diagnosed per MIG instance (2 below)");
  EXPECT_TRUE(whole.fix.empty());

  const std::string text = diagnosis_text(d);
  EXPECT_NE(text.find("GPU 0 MIG 3g.40gb instance 2  NVIDIA H100 80GB HBM3  node-1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU 0 MIG 1g.10gb instance 7  NVIDIA H100 80GB HBM3  node-1\n"), std::string::npos) << text;
}

TEST(MigDiagnosis, WholeGpusOfTheHostStayEachOthersPeers) {
  // Two whole GPUs beside the MIG GPU: the slow one is still compared with the other whole one.
  auto h = mig_node();
  GpuBuilder fast("1"), slow("2");
  fast.busy(0, 60, 0.95, 0.85, 0.45, 0.30, 0.05, 99);
  slow.busy(0, 60, 0.95, 0.20, 0.10, 0.05, 0.02, 99);
  auto more = histories({fast, slow});
  h.insert(h.end(), more.begin(), more.end());
  const Diagnosis d = diagnose(h, at_s(60), 30'000, Thresholds{});
  const auto it = std::ranges::find_if(d.gpus, [](const GpuDiagnosis& g) { return g.identity.gpu == "2"; });
  ASSERT_NE(it, d.gpus.end());
  const auto f = std::ranges::find_if(it->findings, [](const Finding& x) { return x.id == "imbalance_busy"; });
  ASSERT_NE(f, it->findings.end());
  // Its one peer is GPU 1, not the MIG instances.
  EXPECT_NE(f->summary.find("on the 1 other busy GPUs"), std::string::npos) << f->summary;
}

}  // namespace
}  // namespace gpuscope::analysis
