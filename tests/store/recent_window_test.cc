#include "store/recent_window.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "store/head.h"
#include "store_test_support.h"

namespace gpuscope::store {
namespace {

using testing::kT0;
using testing::select_all;

constexpr std::string_view kKeptNames[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL"};
constexpr std::int64_t kSpanMs = 10'000;

Labels window_series(std::string_view name, int gpu) {
  return Labels{{"__name__", std::string(name)}, {"gpu", std::to_string(gpu)}, {"UUID", "GPU-" + std::to_string(gpu)}};
}

LabelMatcher window_matcher(LabelMatcher::Op op, std::string name, std::string value) {
  return *LabelMatcher::make(op, std::move(name), std::move(value));
}

// Readings of two kept names and one other, for GPUs 0 and 1, one a second from kT0.
std::vector<LabeledValue> window_reading(int i, bool with_gpu1 = true) {
  std::vector<LabeledValue> r;
  for (int gpu = 0; gpu < (with_gpu1 ? 2 : 1); ++gpu) {
    r.push_back({window_series("DCGM_FI_PROF_SM_ACTIVE", gpu), 0.5 + i});
    r.push_back({window_series("DCGM_FI_DEV_POWER_USAGE", gpu), 300.0 + i});
    r.push_back({window_series("DCGM_FI_DEV_GPU_UTIL", gpu), 10.0 * gpu + i});
  }
  return r;
}

TEST(RecentWindow, KeepsOnlyTheNamedSeriesAndTheLastSpan) {
  RecentWindow w(kKeptNames, kSpanMs);
  for (int i = 0; i < 30; ++i) w.append_reading(kT0 + i * 1000, window_reading(i), 1);
  const auto all = select_all(w);
  ASSERT_EQ(all.size(), 4u);  // power is not kept
  for (const auto& s : all) {
    EXPECT_NE(s.labels.metric_name(), "DCGM_FI_DEV_POWER_USAGE");
    // [newest - span, newest]: readings 19..29.
    ASSERT_EQ(s.samples.size(), 11u) << s.labels.to_string();
    EXPECT_EQ(s.samples.front().t_ms, kT0 + 19'000);
    EXPECT_EQ(s.samples.back().t_ms, kT0 + 29'000);
  }
  EXPECT_EQ(w.series_count(), 4u);
  EXPECT_EQ(w.sample_count(), 44u);
}

// The diagnosis reads the window through the same Queryable the history answers: within the span, the
// window's answers must be the head's (closed ranges, matchers, order, staleness markers).
TEST(RecentWindow, AnswersAsTheHeadDoesWithinTheSpan) {
  RecentWindow w(kKeptNames, kSpanMs);
  Head head;
  for (int i = 0; i < 40; ++i) {
    const auto r = window_reading(i, i % 7 != 3);  // GPU 1 drops out now and then: staleness markers
    head.append_reading(kT0 + i * 1000, r);
    w.append_reading(kT0 + i * 1000, r, RecentWindow::kLayoutUnknown);
  }
  using Op = LabelMatcher::Op;
  const std::vector<std::vector<LabelMatcher>> matcher_sets = {
      {window_matcher(Op::kRegex, "__name__", "DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL")},
      {window_matcher(Op::kEqual, "__name__", "DCGM_FI_DEV_GPU_UTIL"), window_matcher(Op::kEqual, "gpu", "1")},
      {window_matcher(Op::kNotEqual, "gpu", "0"), window_matcher(Op::kRegex, "__name__", "DCGM_FI_PROF_.*|DCGM_FI_DEV_GPU_UTIL")},
      {window_matcher(Op::kNotRegex, "__name__", ".*POWER.*|DCGM_FI_DEV_GPU_UTIL")},
  };
  const std::int64_t newest = kT0 + 39'000, oldest = newest - kSpanMs;
  const std::pair<std::int64_t, std::int64_t> ranges[] = {
      {oldest, newest}, {oldest + 1, newest - 1}, {newest, newest}, {kT0 + 31'000, kT0 + 31'000},
      {oldest + 500, oldest + 900}, {newest + 1, newest + 5000}, {kT0 + 38'000, kT0 + 60'000}};
  bool saw_marker = false;
  for (const auto& m : matcher_sets) {
    for (const auto& [mint, maxt] : ranges) {
      auto want = head.select(m, mint, maxt);
      auto got = w.select(m, mint, maxt);
      ASSERT_TRUE(want && got);
      ASSERT_EQ(got->size(), want->size()) << mint - kT0 << ".." << maxt - kT0;
      for (std::size_t k = 0; k < got->size(); ++k) {
        const auto& g = (*got)[k];
        const auto& e = (*want)[k];
        EXPECT_EQ(g.labels, e.labels);
        ASSERT_EQ(g.samples.size(), e.samples.size()) << g.labels.to_string();
        for (std::size_t j = 0; j < g.samples.size(); ++j) {
          EXPECT_EQ(g.samples[j].t_ms, e.samples[j].t_ms);
          if (is_stale_marker(e.samples[j].value)) {
            saw_marker = true;
            EXPECT_TRUE(is_stale_marker(g.samples[j].value));
          } else {
            EXPECT_EQ(g.samples[j].value, e.samples[j].value);
          }
        }
      }
      // The head answers label questions per chunk (a range between two samples of one chunk counts),
      // the window per sample, as Queryable says: compared where the range holds samples.
      if (want->empty()) continue;
      const auto values = w.label_values("gpu", m, mint, maxt), want_values = head.label_values("gpu", m, mint, maxt);
      const auto names = w.label_names(m, mint, maxt), want_names = head.label_names(m, mint, maxt);
      ASSERT_TRUE(values && want_values && names && want_names);
      EXPECT_EQ(*values, *want_values) << mint - kT0 << ".." << maxt - kT0;
      EXPECT_EQ(*names, *want_names) << mint - kT0 << ".." << maxt - kT0;
    }
  }
  EXPECT_TRUE(saw_marker);
}

TEST(RecentWindow, MarksASeriesStaleOnceAndForgetsItAfterTheSpan) {
  RecentWindow w(kKeptNames, kSpanMs);
  w.append_reading(kT0, window_reading(0), 1);
  for (int i = 1; i <= 3; ++i) w.append_reading(kT0 + i * 1000, window_reading(i, false), 2);
  const LabelMatcher gpu1[] = {window_matcher(LabelMatcher::Op::kEqual, "gpu", "1")};
  auto gone = w.select(gpu1, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(gone);
  ASSERT_EQ(gone->size(), 2u);
  for (const auto& s : *gone) {
    ASSERT_EQ(s.samples.size(), 2u);  // its last reading, then one marker: not one per reading
    EXPECT_TRUE(is_stale_marker(s.samples[1].value));
    EXPECT_EQ(s.samples[1].t_ms, kT0 + 1000);
  }
  // Once the marker is older than the span the series is forgotten; a GPU that comes back continues.
  for (int i = 4; i <= 12; ++i) w.append_reading(kT0 + i * 1000, window_reading(i, false), 2);
  EXPECT_EQ(w.series_count(), 2u);
  w.append_reading(kT0 + 13'000, window_reading(13), 3);
  auto back = w.select(gpu1, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].samples.size(), 1u);
}

// The recorder passes the same layout number while the series stay in their positions; a changed
// number (series moved, added, gone) makes the window look each position up again.
TEST(RecentWindow, FollowsTheLayoutNumberWhenSeriesMove) {
  RecentWindow w(kKeptNames, kSpanMs);
  auto r = window_reading(0);
  w.append_reading(kT0, r, 7);
  std::swap(r[0], r[2]);  // SM active and utilization of GPU 0 trade places
  r[0].value = 100;       // now utilization
  r[2].value = 0.25;      // now SM active
  w.append_reading(kT0 + 1000, r, 8);
  w.append_reading(kT0 + 2000, r, 8);  // same layout: no lookup, same attribution
  const LabelMatcher util0[] = {window_matcher(LabelMatcher::Op::kEqual, "__name__", "DCGM_FI_DEV_GPU_UTIL"),
                                window_matcher(LabelMatcher::Op::kEqual, "gpu", "0")};
  auto util = w.select(util0, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(util);
  ASSERT_EQ(util->size(), 1u);
  ASSERT_EQ((*util)[0].samples.size(), 3u);
  EXPECT_EQ((*util)[0].samples[0].value, 0.0);
  EXPECT_EQ((*util)[0].samples[1].value, 100.0);
  EXPECT_EQ((*util)[0].samples[2].value, 100.0);
}

TEST(RecentWindow, RefusesTimesThatStepBackAndSeedsFromTheHistory) {
  RecentWindow w(kKeptNames, kSpanMs);
  // The history's last span: one series still live (gets its marker when missing), one ended, one not
  // kept, and a sample older than the span (dropped).
  w.seed({{window_series("DCGM_FI_DEV_GPU_UTIL", 5), {{kT0 - 20'000, 1}, {kT0 - 2000, 2}, {kT0 - 1000, 3}}},
          {window_series("DCGM_FI_DEV_GPU_UTIL", 6), {{kT0 - 1000, 4}, {kT0, stale_marker()}}},
          {window_series("DCGM_FI_DEV_POWER_USAGE", 5), {{kT0 - 1000, 300}}}});
  EXPECT_EQ(w.series_count(), 2u);
  w.append_reading(kT0 + 1000, window_reading(1), 1);
  w.append_reading(kT0 + 500, window_reading(2), 1);  // the clock stepped back: refused, as the head does
  const LabelMatcher gpu5[] = {window_matcher(LabelMatcher::Op::kEqual, "gpu", "5")};
  auto seeded = w.select(gpu5, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(seeded);
  ASSERT_EQ(seeded->size(), 1u);
  const auto& s = (*seeded)[0].samples;
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].t_ms, kT0 - 2000);
  EXPECT_TRUE(is_stale_marker(s[2].value));
  EXPECT_EQ(s[2].t_ms, kT0 + 1000);
  const LabelMatcher gpu0[] = {window_matcher(LabelMatcher::Op::kEqual, "gpu", "0")};
  auto fresh = w.select(gpu0, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(fresh);
  ASSERT_EQ(fresh->size(), 2u);
  EXPECT_EQ((*fresh)[0].samples.size(), 1u);
  EXPECT_EQ((*fresh)[0].samples[0].t_ms, kT0 + 1000);
}

TEST(RecentWindow, ReadersSeeConsistentSeriesWhileTheSamplerAppends) {
  RecentWindow w(kKeptNames, kSpanMs);
  constexpr int kReadings = 3000;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0}, reads{0}, readers_started{0};
  std::thread writer([&] {
    // Only once both readers are in their loops: a writer scheduled first could otherwise finish before
    // they start, and the test would check nothing concurrent (reads 0, seen on a loaded 2-core machine).
    while (readers_started.load() < 2) std::this_thread::yield();
    for (int i = 0; i < kReadings; ++i) {
      // Every 100 readings GPU 1 drops out for a reading: markers and new layouts concurrently too.
      const bool gpu1 = i % 100 != 50;
      w.append_reading(kT0 + i * 1000, window_reading(i, gpu1), gpu1 ? 1 : 2);
    }
    done = true;
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      const LabelMatcher m[] = {window_matcher(LabelMatcher::Op::kRegex, "__name__", "DCGM_FI_PROF_SM_ACTIVE")};
      bool started = false;
      while (!done) {
        if (!started) {
          started = true;
          readers_started.fetch_add(1);
        }
        auto sel = w.select(m, INT64_MIN, INT64_MAX);
        if (!sel) {
          failures.fetch_add(1);
          continue;
        }
        for (const auto& s : *sel) {
          if (s.samples.size() > 11) failures.fetch_add(1);
          for (std::size_t i = 0; i < s.samples.size(); ++i) {
            const auto& smp = s.samples[i];
            if (i > 0 && smp.t_ms <= s.samples[i - 1].t_ms) failures.fetch_add(1);
            if (!is_stale_marker(smp.value) && smp.value != 0.5 + static_cast<double>((smp.t_ms - kT0) / 1000)) {
              failures.fetch_add(1);
            }
          }
        }
        (void)w.label_values("gpu", m, INT64_MIN, INT64_MAX);
        reads.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(w.series_count(), 4u);
}

}  // namespace
}  // namespace gpuscope::store
