// A query can never take the agent down (issue 14): its timeout ends it at the first check after the
// deadline, wherever it is; it may hold only so many samples; queries queue for a bounded number of
// slots, first come first served; and cancel_all() ends them all. Time is a virtual clock throughout:
// the tests assert what ran and in which order, never how long it took.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <limits>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "model/clock.h"
#include "promql/engine.h"
#include "promql/query_limiter.h"
#include "store/series_set.h"

namespace gpuscope::promql {
namespace {

using namespace std::chrono_literals;

constexpr std::int64_t kHour = 3'600'000;
constexpr std::int64_t kDay = 24 * kHour;

// A store stand-in that notes which metric each select reads, and may advance a virtual clock (time
// spent reading) or wait for the test's go before answering (a query caught mid-evaluation).
class WatchedStore : public store::SeriesSet {
 public:
  model::VirtualClock* clock = nullptr;
  std::chrono::milliseconds select_takes{0};
  bool hold_selects = false;

  std::expected<std::vector<store::SeriesSamples>, std::string> select(std::span<const store::LabelMatcher> matchers,
                                                                       std::int64_t mint_ms,
                                                                       std::int64_t maxt_ms) const override {
    {
      std::unique_lock lock(mu_);
      for (const auto& m : matchers) {
        if (m.name() == "__name__") selected_.push_back(m.value());
      }
      cv_.notify_all();
      cv_.wait(lock, [&] { return !hold_selects || go_; });
    }
    if (clock != nullptr) clock->advance(select_takes);
    return SeriesSet::select(matchers, mint_ms, maxt_ms);
  }

  std::vector<std::string> selected() const {
    std::lock_guard lock(mu_);
    return selected_;
  }
  void wait_for_selects(std::size_t n) const {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return selected_.size() >= n; });
  }
  void go() {
    std::lock_guard lock(mu_);
    go_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::vector<std::string> selected_;
  bool go_ = false;
};

// A clock whose time moves only when it is read, 1 ms per read: a query's work then costs time
// exactly where it checks its deadline, and the reads say how many checks it made.
class CheckCountingClock final : public model::Clock {
 public:
  WallTime wall() const override { return base_.wall(); }
  SteadyTime steady() const override {
    const auto now = base_.steady() + std::chrono::milliseconds(reads_.fetch_add(1));
    return now;
  }
  bool wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, SteadyTime deadline,
                  const std::function<bool()>& done) const override {
    return base_.wait_until(lock, cv, deadline, done);
  }
  int reads() const { return reads_.load(); }

 private:
  model::VirtualClock base_;
  mutable std::atomic<int> reads_{0};
};

store::Labels gpu_series(const std::string& name, int gpu) {
  return store::Labels{{"__name__", name}, {"gpu", std::to_string(gpu)}, {"Hostname", "node1"}};
}

// `gpus` GPUs' readings of `name` every `every_ms` over [from_ms, to_ms].
void add_readings(store::SeriesSet& data, const std::string& name, int gpus, std::int64_t from_ms, std::int64_t to_ms,
                  std::int64_t every_ms) {
  for (int g = 0; g < gpus; ++g) {
    for (std::int64_t t = from_ms; t <= to_ms; t += every_ms) data.add(gpu_series(name, g), t, 40.0 + g);
  }
}

TEST(QueryTimeout, EndsAtTheFirstCheckAfterTheDeadlineBeforeTheNextSelectorIsRead) {
  model::VirtualClock clock;
  WatchedStore data;
  data.clock = &clock;
  data.select_takes = 1s;  // each read of the store takes a (virtual) second
  for (const char* name : {"a", "b", "c"}) add_readings(data, name, 2, 0, 600'000, 15'000);
  EngineOptions o;
  o.clock = &clock;
  o.timeout = 1500ms;
  auto r = Engine(o).instant(data, "a + b + c", 600'000);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTimeout);
  EXPECT_EQ(r.error().message, "query timed out in expression evaluation");
  // a is read at 0 s (done at 1 s), b at 1 s (done at 2 s, past the deadline): c is never read.
  EXPECT_EQ(data.selected(), (std::vector<std::string>{"a", "b"}));

  data.select_takes = 0ms;
  EXPECT_TRUE(Engine(o).instant(data, "a + b + c", 600'000)) << "within the timeout the same query answers";
}

// Each query's work is in one kind of loop, long enough that it could only end by its timeout if that
// loop checks: with a clock that moves 1 ms per read and a 20 ms timeout, every one ends with exactly
// 21 reads (the deadline's, 19 still before it, the one at it) and no read after.
struct LoopCase {
  const char* what;
  const char* query;
  bool range;  // a range query over [0, 10^9 ms] at 1 ms steps; else an instant query at 1 h
  friend void PrintTo(const LoopCase& c, std::ostream* os) { *os << c.what << ": " << c.query; }
};

class EveryLongLoopChecks : public ::testing::TestWithParam<LoopCase> {};

TEST_P(EveryLongLoopChecks, TimesOutAtTheFirstReadPastTheDeadline) {
  store::SeriesSet data;
  add_readings(data, "m", 2, 0, kHour, 15'000);
  CheckCountingClock clock;
  EngineOptions o;
  o.clock = &clock;
  o.timeout = 20ms;
  o.max_samples = std::numeric_limits<std::size_t>::max();  // only the timeout may end these
  const auto& c = GetParam();
  auto r = c.range ? Engine(o).range(data, c.query, 0, 1'000'000'000, 1) : Engine(o).instant(data, c.query, kHour);
  ASSERT_FALSE(r) << c.what << " answered without ever timing out";
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTimeout) << r.error().message;
  EXPECT_EQ(clock.reads(), 21) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Loops, EveryLongLoopChecks,
    ::testing::Values(LoopCase{"a selector's steps", "m", true},
                      LoopCase{"a range function's steps", "rate(m[5m])", true},
                      LoopCase{"a subquery's inner steps", "count_over_time(m[1h:1ms])", false},
                      LoopCase{"an instant function's steps in a subquery", "count_over_time(vector(1)[1h:1ms])", false},
                      LoopCase{"an aggregation in a subquery", "max_over_time(sum(m)[1h:1ms])", false},
                      LoopCase{"a binary operator in a subquery", "max_over_time((m * m)[1h:1ms])", false}),
    [](const ::testing::TestParamInfo<LoopCase>& info) { return std::to_string(info.index); });

TEST(QueryMaxSamples, TheIssuesSubqueryIsRefusedOnASmallStore) {
  // Eight GPUs' temperature every second for the last 10 minutes: count_over_time over a 7-day
  // subquery at 1 ms steps would hold 900,000 inner points per GPU (the 10 minutes plus the 5-minute
  // lookback, a point per millisecond): more than the agent's default 1M in all.
  store::SeriesSet data;
  const std::int64_t now = 30 * kDay;
  add_readings(data, "DCGM_FI_DEV_GPU_TEMP", 8, now - 600'000, now, 1000);
  const Engine engine;  // the defaults: what the agent runs with
  ASSERT_EQ(engine.options().max_samples, kDefaultMaxSamples);
  auto r = engine.instant(data, "count_over_time(DCGM_FI_DEV_GPU_TEMP[7d:1ms])", now);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTooManySamples);
  EXPECT_STREQ(error_type_name(r.error().kind), "execution");
  EXPECT_EQ(r.error().message, "query processing would load too many samples into memory in query execution");
  auto all = engine.instant(data, "{__name__=~\".+\"}[15d:1ms]", now);
  ASSERT_FALSE(all);
  EXPECT_EQ(all.error().kind, QueryError::Kind::kTooManySamples);

  // What an SRE asks of the same store still answers: a day of readings at a 1 s step.
  auto fine = engine.instant(data, "count_over_time(DCGM_FI_DEV_GPU_TEMP[1d:1s])", now);
  ASSERT_TRUE(fine) << fine.error().message;
  ASSERT_EQ(std::get<Vector>(fine->value).size(), 8u);
  EXPECT_EQ(std::get<Vector>(fine->value)[0].value, 601);  // a reading at each second of the 10 minutes
}

TEST(QueryMaxSamples, CountsWhatIsHeldAtOnceNotWhatWasReadOverall) {
  // 100 readings of each of 4 series: a query holding all 400 raw samples at once is over a limit
  // of 300, but reading them one series at a time to a one-point result is not.
  store::SeriesSet data;
  add_readings(data, "m", 4, 1000, 100'000, 1000);
  EngineOptions o;
  o.max_samples = 300;
  const Engine engine(o);
  auto summed = engine.instant(data, "sum(sum_over_time(m[100s]))", 100'000);
  ASSERT_TRUE(summed) << summed.error().message;
  auto raw = engine.instant(data, "m[100s]", 100'000);  // a range vector result holds every sample
  ASSERT_FALSE(raw);
  EXPECT_EQ(raw.error().kind, QueryError::Kind::kTooManySamples);
  // A range query's output points are held: 4 series x 100 steps.
  auto steps = engine.range(data, "m", 1000, 100'000, 1000);
  ASSERT_FALSE(steps);
  EXPECT_EQ(steps.error().kind, QueryError::Kind::kTooManySamples);
  EXPECT_TRUE(engine.range(data, "m{gpu=\"0\"}", 1000, 100'000, 1000));
}

TEST(QueryLimiterQueue, WithOneSlotQueriesRunInTheOrderTheyAsked) {
  WatchedStore data;
  for (const char* name : {"first", "second", "third", "fourth"}) add_readings(data, name, 1, 0, 60'000, 15'000);
  QueryLimiter limiter(1);
  EngineOptions o;
  o.limiter = &limiter;
  const Engine engine(o);
  auto blocker = limiter.acquire(model::system_clock(), model::system_clock().steady() + 1h);
  ASSERT_TRUE(blocker);
  std::vector<std::thread> queries;
  for (const char* name : {"first", "second", "third", "fourth"}) {
    const std::size_t ahead = queries.size();
    queries.emplace_back([&engine, &data, name] { EXPECT_TRUE(engine.instant(data, name, 60'000)); });
    // The next one asks only once this one waits in the queue: the order of asking is fixed.
    while (limiter.stats().queued != ahead + 1) std::this_thread::yield();
  }
  EXPECT_EQ(limiter.stats().in_flight, 1u);
  EXPECT_TRUE(data.selected().empty()) << "none runs while the only slot is taken";
  { auto released = std::move(*blocker); }
  for (auto& t : queries) t.join();
  EXPECT_EQ(data.selected(), (std::vector<std::string>{"first", "second", "third", "fourth"}));
  const auto s = limiter.stats();
  EXPECT_EQ(s.queries_total, 5u);
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.max_concurrency, 1u);
}

TEST(QueryLimiterQueue, TheWaitForASlotCountsTowardTheTimeout) {
  model::VirtualClock clock;
  store::SeriesSet data;
  add_readings(data, "m", 1, 0, 60'000, 15'000);
  QueryLimiter limiter(1);
  EngineOptions o;
  o.clock = &clock;
  o.limiter = &limiter;
  o.timeout = 5s;
  const Engine engine(o);
  auto blocker = limiter.acquire(clock, clock.steady() + 1h);
  ASSERT_TRUE(blocker);
  auto waiting = std::async(std::launch::async, [&] { return engine.instant(data, "m", 60'000); });
  while (clock.waiters() == 0) std::this_thread::yield();
  clock.advance(4999ms);
  EXPECT_EQ(waiting.wait_for(20ms), std::future_status::timeout) << "still within its 5 s";
  clock.advance(1ms);
  auto r = waiting.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, QueryError::Kind::kTimeout);
  EXPECT_EQ(r.error().message, "query timed out in query queue");
  EXPECT_EQ(limiter.stats().timed_out_total, 1u);
  EXPECT_EQ(limiter.stats().queued, 0u);
}

TEST(QueryLimiterCancel, CancelAllEndsARunningQueryAQueuedOneAndEveryLaterOne) {
  model::VirtualClock clock;  // never advanced: no timeout can end these
  WatchedStore data;
  data.hold_selects = true;
  add_readings(data, "m", 2, 0, kHour, 15'000);
  QueryLimiter limiter(1);
  EngineOptions o;
  o.clock = &clock;
  o.limiter = &limiter;
  o.max_samples = std::numeric_limits<std::size_t>::max();
  const Engine engine(o);
  // Millions of inner steps: it runs until something ends it.
  auto running = std::async(std::launch::async, [&] { return engine.instant(data, "count_over_time(m[1h:1ms])", kHour); });
  data.wait_for_selects(1);  // it is evaluating, inside its selector's read
  auto queued = std::async(std::launch::async, [&] { return engine.instant(data, "m", kHour); });
  while (limiter.stats().queued != 1) std::this_thread::yield();

  limiter.cancel_all();
  auto q = queued.get();
  ASSERT_FALSE(q);
  EXPECT_EQ(q.error().kind, QueryError::Kind::kCanceled);
  EXPECT_EQ(q.error().message, "query was canceled in query queue");
  data.go();  // the read returns; the evaluation goes on to its first check
  auto r = running.get();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, QueryError::Kind::kCanceled);
  EXPECT_EQ(r.error().message, "query was canceled in expression evaluation");
  EXPECT_STREQ(error_type_name(r.error().kind), "canceled");

  auto later = engine.instant(data, "m", kHour);
  ASSERT_FALSE(later);
  EXPECT_EQ(later.error().kind, QueryError::Kind::kCanceled);
  EXPECT_EQ(data.selected().size(), 1u) << "nothing was read after the cancel";
  const auto s = limiter.stats();
  EXPECT_EQ(s.canceled_total, 3u);
  EXPECT_EQ(s.in_flight, 0u);
}

TEST(QueryLimiterStatsTest, CountsRefusalsForSamples) {
  store::SeriesSet data;
  add_readings(data, "m", 4, 1000, 100'000, 1000);
  QueryLimiter limiter;
  EngineOptions o;
  o.limiter = &limiter;
  o.max_samples = 150;  // one series' 100 readings fit; all four series' do not
  const Engine engine(o);
  EXPECT_FALSE(engine.instant(data, "m[100s]", 100'000));
  EXPECT_TRUE(engine.instant(data, "m{gpu=\"0\"}", 100'000));
  EXPECT_FALSE(engine.instant(data, "m(", 100'000)) << "a parse error never reaches the limiter";
  const auto s = limiter.stats();
  EXPECT_EQ(s.queries_total, 2u);
  EXPECT_EQ(s.too_many_samples_total, 1u);
  EXPECT_EQ(s.max_concurrency, QueryLimiter::kDefaultMaxConcurrency);
}

}  // namespace
}  // namespace gpuscope::promql
