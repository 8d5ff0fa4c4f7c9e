// TrainingJobs: what the agent keeps per job and rank from the events, and the bounds that keep a sender
// from making it grow.
#include "analysis/training_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

namespace gpuscope::analysis {
namespace training_jobs_test {

constexpr std::int64_t kNow = 1'800'000'000'000;  // ms

TrainingEvent step(std::string job, unsigned rank, std::uint64_t n, double duration_s) {
  TrainingEvent e;
  e.kind = TrainingEventKind::kStep;
  e.job = std::move(job);
  e.rank = rank;
  e.step = n;
  e.duration_s = duration_s;
  return e;
}

TrainingEvent epoch(TrainingEventKind kind, std::string job, unsigned rank, std::uint64_t n,
                    std::optional<double> allocated = std::nullopt) {
  TrainingEvent e;
  e.kind = kind;
  e.job = std::move(job);
  e.rank = rank;
  e.epoch = n;
  e.allocated_bytes = allocated;
  return e;
}

TrainingEvent at(TrainingEvent e, std::int64_t t_ms) {
  e.time_s = static_cast<double>(t_ms) / 1000.0;
  return e;
}

void apply_ok(TrainingJobs& jobs, const TrainingEvent& e, std::int64_t now_ms = kNow) {
  const auto r = jobs.apply(e, now_ms);
  ASSERT_TRUE(r.has_value()) << r.error().message;
}

// The one rank `rank` of job `job` in the view at `now_ms`.
RankView rank_of(const TrainingJobs& jobs, std::string_view job, unsigned rank, std::int64_t now_ms = kNow) {
  for (const auto& j : jobs.view(now_ms)) {
    if (j.job != job) continue;
    for (const auto& r : j.ranks) {
      if (r.rank == rank) return r;
    }
  }
  ADD_FAILURE() << "no rank " << rank << " in job " << job;
  return {};
}

TEST(TrainingJobs, CountsStepsPerRank) {
  TrainingJobs jobs;
  apply_ok(jobs, step("j", 1, 10, 0.5));
  apply_ok(jobs, step("j", 0, 10, 0.4));
  apply_ok(jobs, step("j", 1, 11, 0.6));
  apply_ok(jobs, step("j", 1, 12, 0.7));
  apply_ok(jobs, step("other", 0, 1, 1.0));
  const auto view = jobs.view(kNow);
  ASSERT_EQ(view.size(), 2U);
  EXPECT_EQ(view[0].job, "j");
  EXPECT_EQ(view[1].job, "other");
  ASSERT_EQ(view[0].ranks.size(), 2U);
  EXPECT_EQ(view[0].ranks[0].rank, 0U);
  EXPECT_EQ(view[0].ranks[0].steps_total, 1U);
  EXPECT_EQ(view[0].ranks[1].rank, 1U);
  EXPECT_EQ(view[0].ranks[1].steps_total, 3U);
  EXPECT_EQ(view[1].ranks.at(0).steps_total, 1U);
  EXPECT_EQ(view[0].last_event_ms, kNow);
}

TEST(TrainingJobs, KeepsTheLastStepDurationAndLoss) {
  TrainingJobs jobs;
  auto first = step("j", 0, 41, 0.5);
  first.loss = 2.5;
  first.pid = 123;
  first.gpu = "GPU-a";
  first.world_size = 8;
  first.local_rank = 2;
  apply_ok(jobs, first, kNow - 1000);
  apply_ok(jobs, step("j", 0, 42, 0.75), kNow);  // no loss: the last one stands
  const auto r = rank_of(jobs, "j", 0);
  EXPECT_EQ(r.last_step, 42U);
  EXPECT_DOUBLE_EQ(r.last_duration_s, 0.75);
  EXPECT_EQ(r.loss, 2.5);
  EXPECT_EQ(r.last_step_ms, kNow);
  EXPECT_EQ(r.last_event_ms, kNow);
  EXPECT_EQ(r.pid, 123);
  EXPECT_EQ(r.gpu, "GPU-a");
  EXPECT_EQ(r.world_size, 8U);
  EXPECT_EQ(r.local_rank, 2U);

  auto third = step("j", 0, 43, 1);
  third.loss = 1.25;
  apply_ok(jobs, third, kNow + 1000);
  EXPECT_EQ(rank_of(jobs, "j", 0).loss, 1.25);
}

TEST(TrainingJobs, HistogramBucketsAreCumulativeAndIncludeTheirBound) {
  TrainingJobs jobs;
  // 0.005 is the first bound (in it), 0.0051 is above it, 0.5 is a bound, 200 is above the last (+Inf).
  for (const double d : {0.005, 0.0051, 0.5, 200.0}) apply_ok(jobs, step("j", 0, 1, d));
  const auto r = rank_of(jobs, "j", 0);
  std::array<std::uint64_t, kStepDurationBuckets.size()> expected{};
  for (std::size_t i = 0; i < kStepDurationBuckets.size(); ++i) {
    expected[i] = kStepDurationBuckets[i] >= 0.5 ? 3 : kStepDurationBuckets[i] >= 0.01 ? 2 : 1;
  }
  EXPECT_EQ(r.bucket_counts, expected);
  EXPECT_EQ(r.steps_total, 4U);  // +Inf
  EXPECT_DOUBLE_EQ(r.duration_sum_s, 0.005 + 0.0051 + 0.5 + 200.0);
  // A second view counts the same (the view does not change what is kept).
  EXPECT_EQ(rank_of(jobs, "j", 0).bucket_counts, expected);
}

TEST(TrainingJobs, HistogramOfOneStepPerBucket) {
  TrainingJobs jobs;
  for (const double bound : kStepDurationBuckets) apply_ok(jobs, step("j", 0, 1, bound));
  const auto r = rank_of(jobs, "j", 0);
  for (std::size_t i = 0; i < kStepDurationBuckets.size(); ++i) {
    EXPECT_EQ(r.bucket_counts[i], i + 1) << "le=" << kStepDurationBuckets[i];
  }
}

TEST(TrainingJobs, WindowMeanOverTheStepWindowBeforeTheViewTime) {
  TrainingLimits limits;
  limits.step_window = std::chrono::seconds(10);
  TrainingJobs jobs(limits);
  apply_ok(jobs, at(step("j", 0, 1, 1.0), kNow - 20'000));
  apply_ok(jobs, at(step("j", 0, 2, 8.0), kNow - 10'000));  // exactly the window's length back: out
  apply_ok(jobs, at(step("j", 0, 3, 2.0), kNow - 5'000));
  apply_ok(jobs, at(step("j", 0, 4, 4.0), kNow - 1'000));
  auto r = rank_of(jobs, "j", 0, kNow);
  EXPECT_EQ(r.window_steps, 2U);
  EXPECT_DOUBLE_EQ(r.window_mean_s, 3.0);
  EXPECT_EQ(r.steps_total, 4U);
  r = rank_of(jobs, "j", 0, kNow + 6'000);  // (now - 4 s, now + 6 s]
  EXPECT_EQ(r.window_steps, 1U);
  EXPECT_DOUBLE_EQ(r.window_mean_s, 4.0);
  r = rank_of(jobs, "j", 0, kNow + 30'000);
  EXPECT_EQ(r.window_steps, 0U);
  EXPECT_EQ(r.window_mean_s, 0.0);
}

TEST(TrainingJobs, WindowKeepsAtMostMaxWindowSteps) {
  TrainingLimits limits;
  limits.max_window_steps = 4;
  TrainingJobs jobs(limits);
  for (int i = 1; i <= 10; ++i) apply_ok(jobs, step("j", 0, static_cast<std::uint64_t>(i), i));
  const auto r = rank_of(jobs, "j", 0);
  EXPECT_EQ(r.window_steps, 4U);
  EXPECT_DOUBLE_EQ(r.window_mean_s, (7 + 8 + 9 + 10) / 4.0);
  EXPECT_EQ(r.steps_total, 10U);
}

TEST(TrainingJobs, ScalarsUpdateInPlaceAndNamesPastTheLimitAreDropped) {
  TrainingJobs jobs;
  auto first = step("j", 0, 1, 1);
  for (int i = 0; i < 32; ++i) first.scalars.emplace_back(fmt::format("s{}", i), i);
  apply_ok(jobs, first);
  auto second = step("j", 0, 2, 1);
  second.scalars = {{"s5", 55.0}, {"s32", 32.0}, {"s0", -1.0}};
  apply_ok(jobs, second);
  const auto r = rank_of(jobs, "j", 0);
  ASSERT_EQ(r.scalars.size(), 32U);
  EXPECT_EQ(r.scalars[0], (std::pair<std::string, double>{"s0", -1.0}));
  EXPECT_EQ(r.scalars[5], (std::pair<std::string, double>{"s5", 55.0}));
  EXPECT_EQ(r.scalars[31], (std::pair<std::string, double>{"s31", 31.0}));
  for (const auto& [name, value] : r.scalars) EXPECT_NE(name, "s32");
  EXPECT_EQ(jobs.scalars_dropped(), 1U);
  // Each time it comes, counted again; a known name still updates.
  apply_ok(jobs, second);
  EXPECT_EQ(jobs.scalars_dropped(), 2U);
}

TEST(TrainingJobs, JobLimit) {
  TrainingLimits limits;
  limits.max_jobs = 2;
  TrainingJobs jobs(limits);
  apply_ok(jobs, step("a", 0, 1, 1));
  apply_ok(jobs, step("b", 0, 1, 1));
  const auto c = jobs.apply(step("c", 0, 1, 1), kNow);
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().reason, EventRejectReason::kTooManyJobs);
  EXPECT_THAT(c.error().message, ::testing::HasSubstr("\"c\""));
  // A job it already follows is still accepted, a new rank of it too.
  apply_ok(jobs, step("a", 0, 2, 1));
  apply_ok(jobs, step("b", 1, 1, 1));
  const auto view = jobs.view(kNow);
  ASSERT_EQ(view.size(), 2U);
  EXPECT_EQ(view[0].ranks.at(0).steps_total, 2U);
  EXPECT_EQ(view[1].ranks.size(), 2U);
}

TEST(TrainingJobs, RankLimit) {
  TrainingLimits limits;
  limits.max_ranks_per_job = 2;
  TrainingJobs jobs(limits);
  apply_ok(jobs, step("j", 0, 1, 1));
  apply_ok(jobs, step("j", 7, 1, 1));
  const auto r = jobs.apply(step("j", 3, 1, 1), kNow);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, EventRejectReason::kTooManyRanks);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("rank 3"));
  apply_ok(jobs, step("j", 7, 2, 1));
  // Another job has its own ranks.
  apply_ok(jobs, step("k", 3, 1, 1));
  const auto view = jobs.view(kNow);
  ASSERT_EQ(view[0].ranks.size(), 2U);
  EXPECT_EQ(view[0].ranks[1].rank, 7U);
  EXPECT_EQ(view[0].ranks[1].steps_total, 2U);
}

TEST(TrainingJobs, RanksOfAllJobsAreBoundedAndForgettingFreesThem) {
  TrainingLimits limits;
  limits.max_ranks = 3;
  TrainingJobs jobs(limits);
  apply_ok(jobs, step("a", 0, 1, 1));
  apply_ok(jobs, step("a", 1, 1, 1));
  apply_ok(jobs, step("b", 0, 1, 1));
  const auto r = jobs.apply(step("c", 0, 1, 1), kNow);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().reason, EventRejectReason::kTooManyRanks);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("the agent follows 3 ranks already"));
  EXPECT_EQ(jobs.view(kNow).size(), 2U) << "the refused job is not kept without ranks";
  apply_ok(jobs, step("a", 1, 2, 1));  // a known rank still counts
  // Job b falls silent and is forgotten: its rank's place is free again.
  apply_ok(jobs, step("a", 0, 2, 1), kNow + limits.forget_after.count());
  ASSERT_EQ(jobs.forget_silent(kNow + limits.forget_after.count() + 1), 1U);
  apply_ok(jobs, step("c", 0, 1, 1), kNow + limits.forget_after.count() + 1);
}

TEST(TrainingJobs, EventTimeOutsideTheTrustedRangeIsTheReceiveTime) {
  TrainingJobs jobs;
  apply_ok(jobs, at(step("future", 0, 1, 1), kNow + 120'000));
  EXPECT_EQ(rank_of(jobs, "future", 0).last_step_ms, kNow);
  apply_ok(jobs, at(step("past", 0, 1, 1), kNow - 7 * 3'600'000LL));
  EXPECT_EQ(rank_of(jobs, "past", 0).last_step_ms, kNow);
  // Within a minute ahead or the forget window back, its own time counts.
  apply_ok(jobs, at(step("ahead", 0, 1, 1), kNow + 30'000));
  EXPECT_EQ(rank_of(jobs, "ahead", 0).last_step_ms, kNow + 30'000);
  apply_ok(jobs, at(step("behind", 0, 1, 1), kNow - 10'000));
  EXPECT_EQ(rank_of(jobs, "behind", 0).last_step_ms, kNow - 10'000);
  // Fractions of a second are kept to the millisecond.
  auto e = step("frac", 0, 1, 1);
  e.time_s = 1'799'999'999.5;
  apply_ok(jobs, e);
  EXPECT_EQ(rank_of(jobs, "frac", 0).last_step_ms, kNow - 500);
  // The rank's last event is when it was received, whatever its time says.
  EXPECT_EQ(rank_of(jobs, "behind", 0).last_event_ms, kNow);
}

TEST(TrainingJobs, EpochStartAndEndMakeOneSpan) {
  TrainingJobs jobs;
  auto start = at(epoch(TrainingEventKind::kEpochStart, "j", 2, 5), kNow - 60'000);
  start.pid = 4242;
  start.gpu = "3";
  apply_ok(jobs, start);
  EXPECT_TRUE(rank_of(jobs, "j", 2).in_epoch);
  EXPECT_EQ(rank_of(jobs, "j", 2).epoch, 5U);
  EXPECT_TRUE(jobs.take_finished_epochs().empty()) << "not ended yet";
  auto end = at(epoch(TrainingEventKind::kEpochEnd, "j", 2, 5), kNow - 1'000);
  end.loss = 1.75;
  apply_ok(jobs, end);
  const auto spans = jobs.take_finished_epochs();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0].job, "j");
  EXPECT_EQ(spans[0].rank, 2U);
  EXPECT_EQ(spans[0].epoch, 5U);
  EXPECT_EQ(spans[0].start_ms, kNow - 60'000);
  EXPECT_EQ(spans[0].end_ms, kNow - 1'000);
  EXPECT_EQ(spans[0].pid, 4242);
  EXPECT_EQ(spans[0].gpu, "3");
  EXPECT_TRUE(jobs.take_finished_epochs().empty()) << "taken once";
  const auto r = rank_of(jobs, "j", 2);
  EXPECT_FALSE(r.in_epoch);
  EXPECT_EQ(r.epoch_loss, 1.75);
  ASSERT_TRUE(r.last_epoch.has_value());
  EXPECT_EQ(r.last_epoch->epoch, 5U);
  EXPECT_EQ(r.last_epoch->start_ms, kNow - 60'000);
  EXPECT_EQ(r.last_epoch->end_ms, kNow - 1'000);
  EXPECT_FALSE(r.last_epoch->verdict.has_value());
}

TEST(TrainingJobs, EpochEndWithoutStartMakesNoSpan) {
  TrainingJobs jobs;
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 3));
  EXPECT_TRUE(jobs.take_finished_epochs().empty());
  const auto r = rank_of(jobs, "j", 0);
  ASSERT_TRUE(r.last_epoch.has_value());
  EXPECT_EQ(r.last_epoch->start_ms, 0) << "its start was not seen";
  EXPECT_EQ(r.last_epoch->end_ms, kNow);
  // An end after a finished epoch has no start either.
  apply_ok(jobs, at(epoch(TrainingEventKind::kEpochStart, "j", 0, 4), kNow - 5'000));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 4));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 5), kNow + 1'000);
  const auto spans = jobs.take_finished_epochs();
  ASSERT_EQ(spans.size(), 1U);
  EXPECT_EQ(spans[0].epoch, 4U);
}

TEST(TrainingJobs, BoundaryAllocationIsRecordedAtStarts) {
  TrainingJobs jobs;
  apply_ok(jobs, epoch(TrainingEventKind::kEpochStart, "j", 0, 0, 100));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 0, 900));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochStart, "j", 0, 1, 110));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 1, 950));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochStart, "j", 0, 2));  // no figures: nothing recorded
  const auto r = rank_of(jobs, "j", 0);
  EXPECT_EQ(r.boundary_allocated_bytes, (std::vector<double>{100, 110}));
  EXPECT_EQ(r.allocated_bytes, 950.0) << "the latest figure";
}

TEST(TrainingJobs, BoundaryAllocationIsRecordedAtEndsWhenNoStartsCome) {
  TrainingJobs jobs;
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 0, 100));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 1, 120));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 2, 130));
  EXPECT_EQ(rank_of(jobs, "j", 0).boundary_allocated_bytes, (std::vector<double>{100, 120, 130}));
}

TEST(TrainingJobs, ABoundarySeenAtAnEndAndTheNextStartCountsOnce) {
  // The agent came up mid-epoch: the first end has no start, then the client's starts come. The end of
  // epoch 0 and the start of epoch 1 are the same boundary.
  TrainingJobs jobs;
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 0, 100));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochStart, "j", 0, 1, 101));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, 1, 500));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochStart, "j", 0, 2, 120));
  EXPECT_EQ(rank_of(jobs, "j", 0).boundary_allocated_bytes, (std::vector<double>{101, 120}));
}

TEST(TrainingJobs, BoundariesAreBounded) {
  TrainingLimits limits;
  limits.max_epoch_boundaries = 3;
  TrainingJobs jobs(limits);
  for (int e = 0; e < 6; ++e) {
    apply_ok(jobs, epoch(TrainingEventKind::kEpochStart, "j", 0, static_cast<std::uint64_t>(e), 1000.0 + e));
    apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 0, static_cast<std::uint64_t>(e), 5000.0 + e));
  }
  EXPECT_EQ(rank_of(jobs, "j", 0).boundary_allocated_bytes, (std::vector<double>{1003, 1004, 1005}));
}

TEST(TrainingJobs, SetEpochVerdict) {
  TrainingJobs jobs;
  apply_ok(jobs, at(epoch(TrainingEventKind::kEpochStart, "j", 1, 2), kNow - 10'000));
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 1, 2));
  jobs.set_epoch_verdict("j", 1, 1, "idle");            // an epoch it has moved past
  jobs.set_epoch_verdict("j", 0, 2, "idle");            // a rank it does not know
  jobs.set_epoch_verdict("nope", 1, 2, "idle");         // a job it does not know
  EXPECT_FALSE(rank_of(jobs, "j", 1).last_epoch->verdict.has_value());
  jobs.set_epoch_verdict("j", 1, 2, "compute_bound");
  EXPECT_EQ(rank_of(jobs, "j", 1).last_epoch->verdict, "compute_bound");
  EXPECT_EQ(jobs.view(kNow).size(), 1U) << "no job made up";
  // The next epoch ends before the verdict of the one before comes: that verdict is ignored.
  apply_ok(jobs, at(epoch(TrainingEventKind::kEpochStart, "j", 1, 3), kNow - 500), kNow + 1'000);
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "j", 1, 3), kNow + 2'000);
  jobs.set_epoch_verdict("j", 1, 2, "memory_bound");
  EXPECT_FALSE(rank_of(jobs, "j", 1).last_epoch->verdict.has_value());
  EXPECT_EQ(rank_of(jobs, "j", 1).last_epoch->epoch, 3U);
}

TEST(TrainingJobs, ForgetSilentJobs) {
  TrainingJobs jobs;
  const std::int64_t forget = jobs.limits().forget_after.count();
  apply_ok(jobs, step("old", 0, 1, 1), kNow);
  apply_ok(jobs, step("new", 0, 1, 1), kNow + 60'000);
  EXPECT_EQ(jobs.forget_silent(kNow + forget), 0U) << "exactly the limit is not longer than it";
  EXPECT_EQ(jobs.forget_silent(kNow + forget + 1), 1U);
  auto view = jobs.view(kNow + forget + 1);
  ASSERT_EQ(view.size(), 1U);
  EXPECT_EQ(view[0].job, "new");
  // Any event keeps a job: an epoch event of "new" later on.
  apply_ok(jobs, epoch(TrainingEventKind::kEpochEnd, "new", 0, 1), kNow + forget);
  EXPECT_EQ(jobs.forget_silent(kNow + 2 * forget), 0U);
  EXPECT_EQ(jobs.forget_silent(kNow + 2 * forget + 1), 1U);
  EXPECT_TRUE(jobs.view(kNow).empty());
  // A forgotten job's place is free again.
  apply_ok(jobs, step("old", 0, 1, 1), kNow);
  EXPECT_EQ(rank_of(jobs, "old", 0).steps_total, 1U);
}

}  // namespace training_jobs_test
}  // namespace gpuscope::analysis
