// GPM: metrics between two samples are the exact average of the instantaneous values over the
// interval; unknown metric ids and mismatched samples are refused per NVML.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "sim_library.h"

namespace gpuscope::sim::testing {
namespace {

TEST(Gpm, MetricsBetweenSamplesAreTheAverageOverTheInterval) {
  Session s("data_starved", 100.0);
  ASSERT_TRUE(s.ok());
  nvmlDevice_t dev = s.gpu(0);
  nvmlGpmSample_t first = nullptr, second = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&first), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&second), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(dev, first), NVML_SUCCESS);
  // Values hold for whole seconds: the mean of one reading per second is the exact average.
  std::unordered_map<unsigned, double> mean;
  for (int i = 0; i < 24; ++i) {
    s.at(100.5 + i);
    for (const auto& [id, v] : gpm_now(dev)) mean[id] += v / 24;
  }
  s.at(124.0);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(dev, second), NVML_SUCCESS);
  const auto avg = gpm_between(first, second);
  ASSERT_EQ(avg.size(), mean.size());
  for (const auto& [id, v] : mean) EXPECT_NEAR(avg.at(id), v, 1e-6 * std::max(1.0, v)) << id;
  // The order of the samples does not matter.
  const auto reversed = gpm_between(second, first);
  for (const auto& [id, v] : avg) EXPECT_NEAR(reversed.at(id), v, 1e-9 * std::max(1.0, v)) << id;
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(first), NVML_SUCCESS);
  EXPECT_EQ(NVML(nvmlGpmSampleFree)(second), NVML_SUCCESS);
}

TEST(Gpm, UnknownMetricsAreNotSupportedAndKnownOnesDescribed) {
  Session s("", 10.0);
  ASSERT_TRUE(s.ok());
  nvmlGpmSample_t sample = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&sample), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(s.gpu(0), sample), NVML_SUCCESS);
  auto get = std::make_unique<nvmlGpmMetricsGet_t>();
  get->version = NVML_GPM_METRICS_GET_VERSION;
  get->numMetrics = 3;
  get->sample1 = sample;
  get->sample2 = sample;
  get->metrics[0].metricId = NVML_GPM_METRIC_SM_UTIL;
  get->metrics[1].metricId = 99;  // not modeled
  get->metrics[2].metricId = NVML_GPM_METRIC_PCIE_RX_PER_SEC;
  ASSERT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_SUCCESS);
  EXPECT_EQ(get->metrics[0].nvmlReturn, NVML_SUCCESS);
  ASSERT_NE(get->metrics[0].metricInfo.shortName, nullptr);
  ASSERT_NE(get->metrics[0].metricInfo.longName, nullptr);
  ASSERT_NE(get->metrics[0].metricInfo.unit, nullptr);
  EXPECT_STREQ(get->metrics[0].metricInfo.unit, "%");
  EXPECT_EQ(get->metrics[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(get->metrics[2].nvmlReturn, NVML_SUCCESS);
  EXPECT_STREQ(get->metrics[2].metricInfo.unit, "MiB/sec");
  EXPECT_GT(get->metrics[2].value, 0.0);

  // Samples of two GPUs, or a sample never taken, cannot be compared.
  nvmlGpmSample_t other = nullptr, empty = nullptr;
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&other), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleAlloc)(&empty), NVML_SUCCESS);
  ASSERT_EQ(NVML(nvmlGpmSampleGet)(s.gpu(1), other), NVML_SUCCESS);
  get->sample2 = other;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_ERROR_INVALID_ARGUMENT);
  get->sample2 = empty;
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(get.get()), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpmMetricsGet)(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(NVML(nvmlGpmMigSampleGet)(s.gpu(0), 1, sample), NVML_ERROR_INVALID_ARGUMENT);  // no instances
  for (auto x : {sample, other, empty}) EXPECT_EQ(NVML(nvmlGpmSampleFree)(x), NVML_SUCCESS);
}

TEST(Gpm, DcgmStyleRatiosStayInRangeForEveryProfile) {
  for (const char* scenario : {"idle", "data_starved", "memory_bound", "no_tensor", "small_kernels", "stalled",
                               "straggler", "thermal_runaway"}) {
    SCOPED_TRACE(scenario);
    Session s(scenario, 1000.5);
    ASSERT_TRUE(s.ok());
    for (unsigned i = 0; i < s.count(); ++i) {
      for (const auto& [id, v] : gpm_now(s.gpu(i))) {
        EXPECT_GE(v, 0.0) << id;
        if (id < 20) {
          EXPECT_LE(v, 100.0) << id;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gpuscope::sim::testing
