// The backtest's progress line: drawn only on a terminal, first after half a second, redrawn at most
// every 200 ms, cleared before the report. The clock is injected: no test waits on wall time.
#include "cli/backtest_progress.h"

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscope::cli {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr std::int64_t kThirtyDaysMs = 30LL * 24 * 3600 * 1000;

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  BacktestProgress::Clock fn() {
    return [this] { return now; };
  }
};

TEST(BacktestProgressLine, ShowsShareScenarioTimeEventsAndTimeLeft) {
  EXPECT_EQ(backtest_progress_line(9LL * 24 * 3600 * 1000, kThirtyDaysMs, 4, 30s),
            "[#########                     ]  30.0%  9d of 30d scenario time, 4 alert events, about 1m10s left");
  EXPECT_EQ(backtest_progress_line(0, 3600'000, 1, 0s),
            "[                              ]   0.0%  0s of 1h scenario time, 1 alert event");
  EXPECT_EQ(backtest_progress_line(3600'000, 3600'000, 0, 10s),
            "[##############################] 100.0%  1h of 1h scenario time, 0 alert events");
  // Scenario time in whole minutes: a reading every 15 s would make it jitter.
  EXPECT_THAT(backtest_progress_line(90'075'000, kThirtyDaysMs, 0, 1s), HasSubstr(" 1d1h1m of 30d"));
}

TEST(BacktestProgress, NothingWhenNotATerminal) {
  std::ostringstream out;
  FakeClock clock;
  BacktestProgress p(out, false, kThirtyDaysMs, clock.fn());
  for (int i = 0; i <= 100; ++i) {
    clock.now += 1s;
    p.update(kThirtyDaysMs / 100 * i, 0);
  }
  p.finish();
  EXPECT_EQ(out.str(), "");
}

TEST(BacktestProgress, FirstDrawAfterHalfASecondThenAtMostEvery200Ms) {
  std::ostringstream out;
  FakeClock clock;
  BacktestProgress p(out, true, kThirtyDaysMs, clock.fn());
  clock.now += 400ms;
  p.update(1000, 0);
  EXPECT_EQ(out.str(), "") << "a short backtest shows no line";
  clock.now += 100ms;
  p.update(kThirtyDaysMs / 2, 2);
  EXPECT_EQ(out.str(), "\r" + backtest_progress_line(kThirtyDaysMs / 2, kThirtyDaysMs, 2, 500ms));
  const std::size_t after_first = out.str().size();
  clock.now += 150ms;
  p.update(kThirtyDaysMs / 2 + 15'000, 2);
  EXPECT_EQ(out.str().size(), after_first) << "redrawn within 200 ms";
  clock.now += 50ms;
  p.update(kThirtyDaysMs * 3 / 4, 3);
  EXPECT_EQ(out.str().substr(after_first), "\r" + backtest_progress_line(kThirtyDaysMs * 3 / 4, kThirtyDaysMs, 3, 700ms));
}

TEST(BacktestProgress, AShorterLineBlanksTheRestAndFinishClearsIt) {
  std::ostringstream out;
  FakeClock clock;
  BacktestProgress p(out, true, kThirtyDaysMs, clock.fn());
  clock.now += 1s;
  p.update(kThirtyDaysMs / 2, 12);  // "12 alert events, about 1s left"
  const std::string first = backtest_progress_line(kThirtyDaysMs / 2, kThirtyDaysMs, 12, 1s);
  clock.now += 1s;
  p.update(kThirtyDaysMs, 1);  // done: no time left, shorter
  const std::string second = backtest_progress_line(kThirtyDaysMs, kThirtyDaysMs, 1, 2s);
  ASSERT_LT(second.size(), first.size());
  EXPECT_EQ(out.str(), "\r" + first + "\r" + second + std::string(first.size() - second.size(), ' '));
  out.str("");
  p.finish();
  EXPECT_EQ(out.str(), "\r" + std::string(second.size(), ' ') + "\r");
  out.str("");
  p.finish();
  EXPECT_EQ(out.str(), "") << "cleared once";
}

TEST(BacktestProgress, FinishWithoutADrawWritesNothing) {
  std::ostringstream out;
  FakeClock clock;
  BacktestProgress p(out, true, kThirtyDaysMs, clock.fn());
  p.update(0, 0);
  p.finish();
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace gpuscope::cli
