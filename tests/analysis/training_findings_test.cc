// What the agent finds wrong with a training job: a stall, a straggler and why, memory kept from one
// epoch to the next; on hand-built jobs and GPU readings.
#include "analysis/training_findings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "analysis/gpu_signals.h"

namespace gpuscope::analysis {
namespace training_findings_test {

constexpr std::int64_t kNow = 1'800'000'000'000;  // ms
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// A healthy H100 of an evenly loaded job: 1980 MHz, 60 °C of 87 °C, no throttle reason.
model::GpuSample gpu(unsigned index) {
  model::GpuSample g;
  g.index = index;
  g[model::FieldId::kSmClock] = model::FieldValue::of(1980);
  g[model::FieldId::kGpuTemp] = model::FieldValue::of(60);
  g[model::FieldId::kSlowdownTemp] = model::FieldValue::of(87);
  g[model::FieldId::kClocksEventReasons] = model::FieldValue::of(0);
  return g;
}

model::ProcessSample process(unsigned pid, std::optional<std::uint64_t> bytes = std::nullopt) {
  model::ProcessSample p;
  p.pid = pid;
  p.used_memory_bytes = bytes;
  return p;
}

model::Snapshot snapshot_of(unsigned n) {
  model::Snapshot s;
  for (unsigned i = 0; i < n; ++i) s.gpus.push_back(gpu(i));
  return s;
}

RankView stepping_rank(unsigned rank, double window_mean_s, std::size_t window_steps = 20) {
  RankView r;
  r.rank = rank;
  r.steps_total = 100;
  r.last_step = 100;
  r.last_step_ms = kNow - 1'000;
  r.window_steps = window_steps;
  r.window_mean_s = window_mean_s;
  r.gpu = std::to_string(rank);
  return r;
}

JobView job_of(std::vector<RankView> ranks) {
  JobView j;
  j.job = "llama-ft";
  j.ranks = std::move(ranks);
  j.last_event_ms = kNow;
  return j;
}

JobFindings find_one(const JobView& job, const TrainingContext& context, const TrainingThresholds& thresholds = {}) {
  const std::vector<JobView> jobs{job};
  auto found = find_training_problems(jobs, context, thresholds);
  EXPECT_EQ(found.size(), 1U);
  if (found.empty()) return {};
  EXPECT_EQ(found[0].job, job.job);
  return found[0];
}

TrainingContext context_of(const model::Snapshot* snapshot) {
  TrainingContext c;
  c.now_ms = kNow;
  c.snapshot = snapshot;
  return c;
}

// A rank whose last step was `ago_ms` before now, with `pid`.
RankView quiet_rank(unsigned rank, std::int64_t ago_ms, std::optional<int> pid) {
  RankView r;
  r.rank = rank;
  r.last_step = 7'000 + rank;
  r.last_step_ms = kNow - ago_ms;
  r.pid = pid;
  return r;
}

constexpr std::int64_t kSixMinutes = 6 * 60'000;

// ---- stall

TEST(TrainingStall, NoStepWhileItsPidHoldsAGpu) {
  auto s = snapshot_of(4);
  s.gpus[2].processes.push_back(process(4242, static_cast<std::uint64_t>(4 * kGiB)));
  const auto f = find_one(job_of({quiet_rank(0, kSixMinutes, 4242)}), context_of(&s));
  ASSERT_TRUE(f.stalled.has_value());
  EXPECT_DOUBLE_EQ(f.stalled->seconds_since_step, 360);
  EXPECT_EQ(f.stalled->last_step, 7'000U);
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("pid 4242"));
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("GPU 2"));
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("4.0 GiB"));
}

TEST(TrainingStall, TheLatestStepOfAnyRankCounts) {
  auto s = snapshot_of(2);
  s.gpus[0].processes.push_back(process(10));
  s.gpus[1].processes.push_back(process(11));
  // Rank 1 stepped a minute ago: the job is not stalled though rank 0 has been quiet for long.
  EXPECT_FALSE(find_one(job_of({quiet_rank(0, 3 * kSixMinutes, 10), quiet_rank(1, 60'000, 11)}), context_of(&s))
                   .stalled.has_value());
  // Both quiet: the finding tells the most recent step.
  const auto f = find_one(job_of({quiet_rank(0, 3 * kSixMinutes, 10), quiet_rank(1, kSixMinutes, 11)}), context_of(&s));
  ASSERT_TRUE(f.stalled.has_value());
  EXPECT_EQ(f.stalled->last_step, 7'001U);
  EXPECT_DOUBLE_EQ(f.stalled->seconds_since_step, 360);
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("pid 10 (rank 0)"));
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("pid 11 (rank 1)"));
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("GPU 1"));
}

TEST(TrainingStall, PidNotOnAGpuButAlive) {
  auto s = snapshot_of(2);
  auto c = context_of(&s);
  std::vector<int> asked;
  c.process_alive = [&](int pid) {
    asked.push_back(pid);
    return true;
  };
  const auto f = find_one(job_of({quiet_rank(0, kSixMinutes, 555)}), c);
  ASSERT_TRUE(f.stalled.has_value());
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("pid 555"));
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("alive"));
  EXPECT_EQ(asked, std::vector<int>{555});
}

TEST(TrainingStall, PidGoneAndOnNoGpuIsAnEndedJob) {
  auto s = snapshot_of(2);
  auto c = context_of(&s);
  c.process_alive = [](int) { return false; };
  EXPECT_FALSE(find_one(job_of({quiet_rank(0, kSixMinutes, 555), quiet_rank(1, kSixMinutes, 556)}), c)
                   .stalled.has_value());
  // One of them still alive: stalled.
  c.process_alive = [](int pid) { return pid == 556; };
  const auto f = find_one(job_of({quiet_rank(0, kSixMinutes, 555), quiet_rank(1, kSixMinutes, 556)}), c);
  ASSERT_TRUE(f.stalled.has_value());
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("pid 556"));
  EXPECT_THAT(f.stalled->detail, ::testing::Not(::testing::HasSubstr("pid 555")));
}

TEST(TrainingStall, WithoutAReadingOrALivenessCheckAPidCountsAsAlive) {
  const auto f = find_one(job_of({quiet_rank(0, kSixMinutes, 555)}), context_of(nullptr));
  ASSERT_TRUE(f.stalled.has_value());
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("pid 555"));
}

TEST(TrainingStall, NoPidCannotTell) {
  auto s = snapshot_of(1);
  auto c = context_of(&s);
  c.process_alive = [](int) { return false; };
  const auto f = find_one(job_of({quiet_rank(0, kSixMinutes, std::nullopt)}), c);
  ASSERT_TRUE(f.stalled.has_value());
  EXPECT_THAT(f.stalled->detail, ::testing::HasSubstr("cannot tell"));
}

TEST(TrainingStall, ARecentStepIsNoStall) {
  auto s = snapshot_of(1);
  s.gpus[0].processes.push_back(process(4242));
  // Exactly stall_after ago is not longer than it.
  EXPECT_FALSE(find_one(job_of({quiet_rank(0, 5 * 60'000, 4242)}), context_of(&s)).stalled.has_value());
  EXPECT_FALSE(find_one(job_of({quiet_rank(0, 1'000, 4242)}), context_of(&s)).stalled.has_value());
  EXPECT_TRUE(find_one(job_of({quiet_rank(0, 5 * 60'000 + 1, 4242)}), context_of(&s)).stalled.has_value());
  // A job with no step at all (epoch events only) is not stalled.
  RankView epochs_only;
  epochs_only.pid = 4242;
  EXPECT_FALSE(find_one(job_of({epochs_only}), context_of(&s)).stalled.has_value());
}

TEST(TrainingStall, StallAfterIsAThreshold) {
  auto s = snapshot_of(1);
  s.gpus[0].processes.push_back(process(4242));
  TrainingThresholds t;
  t.stall_after = std::chrono::seconds(30);
  EXPECT_TRUE(find_one(job_of({quiet_rank(0, 31'000, 4242)}), context_of(&s), t).stalled.has_value());
}

// ---- straggler

// Four ranks on GPUs 0-3, rank 3 30 % slower.
JobView four_ranks_one_slow() {
  return job_of({stepping_rank(0, 1.0), stepping_rank(1, 1.0), stepping_rank(2, 1.0), stepping_rank(3, 1.3)});
}

TEST(TrainingStraggler, CoefficientOfVariationNamesTheSlowestRank) {
  const auto s = snapshot_of(4);
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  // Population std / mean of {1, 1, 1, 1.3}: mean 1.075, variance (3 × 0.075² + 0.225²) / 4.
  const double mean = 1.075;
  const double expected_cv = std::sqrt((3 * 0.075 * 0.075 + 0.225 * 0.225) / 4) / mean;
  ASSERT_TRUE(f.step_time_cv.has_value());
  EXPECT_NEAR(*f.step_time_cv, expected_cv, 1e-12);
  EXPECT_NEAR(*f.step_time_cv, 0.12084, 1e-5);
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->rank, 3U);
  EXPECT_EQ(f.straggler->gpu, 3U);
  EXPECT_DOUBLE_EQ(f.straggler->rank_mean_s, 1.3);
  EXPECT_DOUBLE_EQ(f.straggler->others_mean_s, 1.0);
}

TEST(TrainingStraggler, OthersMeanIsTheMeanOfTheOtherRanksMeans) {
  const auto s = snapshot_of(4);
  const auto f = find_one(
      job_of({stepping_rank(0, 0.9), stepping_rank(1, 1.0), stepping_rank(2, 2.0), stepping_rank(3, 1.1)}),
      context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->rank, 2U);
  EXPECT_DOUBLE_EQ(f.straggler->others_mean_s, 1.0);
}

TEST(TrainingStraggler, BelowTheCvThresholdNoStraggler) {
  const auto s = snapshot_of(4);
  TrainingThresholds t;
  t.straggler_cv = 0.13;
  const auto f = find_one(four_ranks_one_slow(), context_of(&s), t);
  ASSERT_TRUE(f.step_time_cv.has_value());
  EXPECT_FALSE(f.straggler.has_value());
}

TEST(TrainingStraggler, EqualRanksNoStraggler) {
  const auto s = snapshot_of(4);
  const auto f = find_one(
      job_of({stepping_rank(0, 0.5), stepping_rank(1, 0.5), stepping_rank(2, 0.5), stepping_rank(3, 0.5)}),
      context_of(&s));
  ASSERT_TRUE(f.step_time_cv.has_value());
  EXPECT_NEAR(*f.step_time_cv, 0.0, 1e-12);
  EXPECT_FALSE(f.straggler.has_value());
}

TEST(TrainingStraggler, RanksWithFewStepsDoNotCount) {
  const auto s = snapshot_of(4);
  // The slow rank has only 4 steps in its window (warm-up): the three others are equal.
  auto job = job_of({stepping_rank(0, 1.0), stepping_rank(1, 1.0), stepping_rank(2, 1.0), stepping_rank(3, 3.0, 4)});
  auto f = find_one(job, context_of(&s));
  ASSERT_TRUE(f.step_time_cv.has_value());
  EXPECT_NEAR(*f.step_time_cv, 0.0, 1e-12);
  EXPECT_FALSE(f.straggler.has_value());
  // With 5 it counts.
  job.ranks[3].window_steps = 5;
  f = find_one(job, context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->rank, 3U);
  // A single rank that counts: no cv at all.
  f = find_one(job_of({stepping_rank(0, 1.0), stepping_rank(1, 9.0, 2)}), context_of(&s));
  EXPECT_FALSE(f.step_time_cv.has_value());
  EXPECT_FALSE(f.straggler.has_value());
}

TEST(TrainingStraggler, SlowClockIsTheCause) {
  auto s = snapshot_of(4);
  s.gpus[3][model::FieldId::kSmClock] = model::FieldValue::of(1500);  // < 0.9 × 1980
  s.gpus[1][model::FieldId::kSmClock] = model::FieldValue::of(1900);  // peers' median 1980
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "gpu_clock");
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("1500 MHz"));
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("1980 MHz"));
}

TEST(TrainingStraggler, ClockJustAboveTheRatioIsNotTheCause) {
  auto s = snapshot_of(4);
  s.gpus[3][model::FieldId::kSmClock] = model::FieldValue::of(0.9 * 1980 + 1);
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "host");
}

TEST(TrainingStraggler, ThrottleReasonOnlyItHasIsTheCause) {
  auto s = snapshot_of(4);
  s.gpus[3][model::FieldId::kClocksEventReasons] = model::FieldValue::of(static_cast<double>(kThrottleHwSlowdown));
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "gpu_throttled");
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("hardware slowdown"));
}

TEST(TrainingStraggler, ThrottleReasonItsPeersShareIsNotTheCause) {
  auto s = snapshot_of(4);
  for (auto& g : s.gpus) g[model::FieldId::kClocksEventReasons] = model::FieldValue::of(static_cast<double>(kThrottleHwSlowdown));
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "host");
}

TEST(TrainingStraggler, AtItsSlowdownTemperatureIsTheCause) {
  auto s = snapshot_of(4);
  s.gpus[3][model::FieldId::kGpuTemp] = model::FieldValue::of(87);
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "gpu_hot");
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("slowdown"));
}

TEST(TrainingStraggler, TenDegreesHotterThanItsPeersIsTheCause) {
  auto s = snapshot_of(4);
  s.gpus[1][model::FieldId::kGpuTemp] = model::FieldValue::of(65);
  s.gpus[3][model::FieldId::kGpuTemp] = model::FieldValue::of(75);  // the hottest peer + 10, below 87
  auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "gpu_hot");
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("75"));
  s.gpus[3][model::FieldId::kGpuTemp] = model::FieldValue::of(74);
  f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "host");
}

TEST(TrainingStraggler, SeveralCausesTheClockFirst) {
  auto s = snapshot_of(4);
  s.gpus[3][model::FieldId::kSmClock] = model::FieldValue::of(1200);
  s.gpus[3][model::FieldId::kGpuTemp] = model::FieldValue::of(90);
  s.gpus[3][model::FieldId::kClocksEventReasons] = model::FieldValue::of(static_cast<double>(kThrottleHwThermal));
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "gpu_clock");
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("hardware thermal slowdown"));
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("90"));
}

TEST(TrainingStraggler, NothingDiffersIsTheHost) {
  const auto s = snapshot_of(4);
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "host");
  EXPECT_THAT(f.straggler->cause, ::testing::HasSubstr("data loading"));
}

TEST(TrainingStraggler, UnknownGpu) {
  const auto s = snapshot_of(4);
  auto job = four_ranks_one_slow();
  job.ranks[3].gpu.reset();
  job.ranks[3].pid = 999;  // on no GPU
  const auto f = find_one(job, context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "gpu_unknown");
  EXPECT_FALSE(f.straggler->gpu.has_value());
}

TEST(TrainingStraggler, GpuWithoutAReading) {
  const auto s = snapshot_of(3);  // GPU 3 is not in the reading
  const auto f = find_one(four_ranks_one_slow(), context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->cause_id, "no_reading");
  const auto none = find_one(four_ranks_one_slow(), context_of(nullptr));
  ASSERT_TRUE(none.straggler.has_value());
  EXPECT_EQ(none.straggler->cause_id, "no_reading");
}

TEST(TrainingStraggler, PeersFoundByPid) {
  // No rank sent its gpu: the agent finds each by the pid on a GPU's process list.
  auto s = snapshot_of(4);
  auto job = four_ranks_one_slow();
  for (unsigned i = 0; i < 4; ++i) {
    job.ranks[i].gpu.reset();
    job.ranks[i].pid = static_cast<int>(100 + i);
    s.gpus[3 - i].processes.push_back(process(100 + i));  // rank i on GPU 3 - i
  }
  s.gpus[0][model::FieldId::kSmClock] = model::FieldValue::of(1000);  // rank 3's GPU
  const auto f = find_one(job, context_of(&s));
  ASSERT_TRUE(f.straggler.has_value());
  EXPECT_EQ(f.straggler->gpu, 0U);
  EXPECT_EQ(f.straggler->cause_id, "gpu_clock");
}

// ---- rank_gpu

TEST(TrainingRankGpu, ByIndexUuidOrPid) {
  auto s = snapshot_of(4);
  s.gpus[1].processes.push_back(process(77));
  std::vector<model::GpuInfo> infos(4);
  for (unsigned i = 0; i < 4; ++i) {
    infos[i].index = i;
    infos[i].uuid = "GPU-000" + std::to_string(i);
  }
  auto c = context_of(&s);
  c.gpus = infos;

  RankView r;
  r.gpu = "5";
  EXPECT_EQ(rank_gpu(r, c), 5U) << "an index is taken as sent";
  r.gpu = "GPU-0002";
  EXPECT_EQ(rank_gpu(r, c), 2U);
  r.gpu = "GPU-unknown";
  EXPECT_EQ(rank_gpu(r, c), std::nullopt);
  r.pid = 77;
  EXPECT_EQ(rank_gpu(r, c), 1U) << "an unknown UUID falls back on the pid";
  r.gpu.reset();
  EXPECT_EQ(rank_gpu(r, c), 1U);
  r.pid = 78;
  EXPECT_EQ(rank_gpu(r, c), std::nullopt);
  r.gpu = "3x";
  EXPECT_EQ(rank_gpu(r, c), std::nullopt) << "not an index, not a UUID";
  r.pid = 77;
  EXPECT_EQ(rank_gpu(r, context_of(nullptr)), std::nullopt) << "no reading: a pid tells nothing";
  // A pid on several GPUs: the first.
  s.gpus[3].processes.push_back(process(77));
  r.gpu.reset();
  EXPECT_EQ(rank_gpu(r, c), 1U);
}

// ---- memory

RankView with_boundaries(unsigned rank, std::vector<double> boundaries) {
  RankView r;
  r.rank = rank;
  r.boundary_allocated_bytes = std::move(boundaries);
  return r;
}

TEST(TrainingMemory, GrowingAtEveryBoundaryIsNotReleased) {
  const double base = 10 * kGiB;
  const auto f = find_one(
      job_of({with_boundaries(0, {base, base + 100 * kMiB, base + 200 * kMiB, base + 300 * kMiB}),
              with_boundaries(1, {base, base, base, base})}),
      context_of(nullptr));
  ASSERT_EQ(f.memory_not_released.size(), 1U);
  EXPECT_EQ(f.memory_not_released[0].rank, 0U);
  EXPECT_DOUBLE_EQ(f.memory_not_released[0].growth_bytes, 300 * kMiB);
  EXPECT_EQ(f.memory_not_released[0].boundaries, 3U);
}

TEST(TrainingMemory, OnlyTheLastBoundariesCount) {
  const double base = 10 * kGiB;
  // A drop long ago does not matter; the growth over the last three boundaries does.
  const auto f = find_one(job_of({with_boundaries(2, {base + kGiB, base, base + 100 * kMiB, base + 200 * kMiB,
                                                      base + 256 * kMiB})}),
                          context_of(nullptr));
  ASSERT_EQ(f.memory_not_released.size(), 1U);
  EXPECT_EQ(f.memory_not_released[0].rank, 2U);
  EXPECT_DOUBLE_EQ(f.memory_not_released[0].growth_bytes, 256 * kMiB);
}

TEST(TrainingMemory, ADropInterruptsTheGrowth) {
  const double base = 10 * kGiB;
  const auto f = find_one(
      job_of({with_boundaries(0, {base, base + 200 * kMiB, base + 150 * kMiB, base + 600 * kMiB}),
              with_boundaries(1, {base, base + 200 * kMiB, base + 200 * kMiB, base + 600 * kMiB})}),
      context_of(nullptr));
  EXPECT_TRUE(f.memory_not_released.empty());
}

TEST(TrainingMemory, TinyGrowthIsNoise) {
  const double base = 10 * kGiB;
  const auto f = find_one(job_of({with_boundaries(0, {base, base + kMiB, base + 2 * kMiB, base + 3 * kMiB, base + 255 * kMiB})}),
                          context_of(nullptr));
  EXPECT_TRUE(f.memory_not_released.empty()) << "254 MiB over the last three boundaries";
}

TEST(TrainingMemory, TooFewBoundaries) {
  const double base = 10 * kGiB;
  const auto f = find_one(job_of({with_boundaries(0, {base, base + kGiB, base + 2 * kGiB})}), context_of(nullptr));
  EXPECT_TRUE(f.memory_not_released.empty()) << "three boundaries are two growths";
}

TEST(TrainingFindings, OneFindingsPerJobInOrder) {
  std::vector<JobView> jobs{job_of({stepping_rank(0, 1)}), job_of({stepping_rank(0, 1)})};
  jobs[0].job = "a";
  jobs[1].job = "b";
  const auto found = find_training_problems(jobs, context_of(nullptr), TrainingThresholds{});
  ASSERT_EQ(found.size(), 2U);
  EXPECT_EQ(found[0].job, "a");
  EXPECT_EQ(found[1].job, "b");
  EXPECT_FALSE(found[0].stalled.has_value());
  EXPECT_FALSE(found[0].straggler.has_value());
  EXPECT_TRUE(found[0].memory_not_released.empty());
  EXPECT_TRUE(find_training_problems({}, context_of(nullptr), TrainingThresholds{}).empty());
}

}  // namespace training_findings_test
}  // namespace gpuscope::analysis
