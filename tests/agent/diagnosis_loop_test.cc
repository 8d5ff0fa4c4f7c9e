// The diagnosis loop on a virtual clock over an in-memory head: it evaluates on its own thread at its
// interval, writes each GPU's verdict back (ending the old one with a staleness marker), counts the
// changes, and a diagnosis that blocks never holds up the readings.
#include "agent/diagnosis_loop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

#include "sampler/sampler.h"
#include "store/head.h"
#include "store/recent_window.h"

namespace gpuscope::agent {
namespace {

using namespace std::chrono_literals;

// The head's reads, with the threads that made them, and a gate that can hold them.
class WatchedSource : public analysis::ReadingSource {
 public:
  explicit WatchedSource(const store::Queryable& data) : store_(data) {}
  std::expected<std::vector<store::SeriesSamples>, std::string> select(const std::string& name_regex,
                                                                      std::int64_t from_ms,
                                                                      std::int64_t to_ms) const override {
    std::unique_lock lock(mu_);
    threads_.push_back(std::this_thread::get_id());
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --held_;
    lock.unlock();
    return store_.select(name_regex, from_ms, to_ms);
  }
  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  // Waits until a read is held at the gate.
  bool wait_held() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [this] { return held_ > 0; });
  }
  std::vector<std::thread::id> threads() const {
    std::lock_guard lock(mu_);
    return threads_;
  }

 private:
  analysis::StoreSource store_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::vector<std::thread::id> threads_;
  mutable int held_ = 0;
  bool open_ = true;
};

store::Labels gpu_labels(int gpu, std::string_view name) {
  return store::Labels({{"Hostname", "node-1"},
                        {"UUID", "GPU-" + std::to_string(gpu)},
                        {"__name__", std::string(name)},
                        {"gpu", std::to_string(gpu)}});
}

class DiagnosisLoopTest : public ::testing::Test {
 protected:
  // One reading of `gpu`: GR engine active and SM active (ratios), utilization.gpu in percent.
  void reading(std::int64_t t_ms, int gpu, double gr, double sm) {
    ASSERT_TRUE(head_.append(gpu_labels(gpu, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), t_ms, gr));
    ASSERT_TRUE(head_.append(gpu_labels(gpu, "DCGM_FI_PROF_SM_ACTIVE"), t_ms, sm));
    ASSERT_TRUE(head_.append(gpu_labels(gpu, "DCGM_FI_DEV_GPU_UTIL"), t_ms, gr * 100));
  }
  // `seconds` idle readings of each GPU up to the clock's time.
  void idle_history(int seconds, std::initializer_list<int> gpus) {
    for (int s = seconds - 1; s >= 0; --s) {
      for (int g : gpus) reading(clock_.unix_ms() - s * 1000, g, 0, 0);
    }
  }
  DiagnosisLoopOptions options(std::chrono::milliseconds interval = 1s) {
    DiagnosisLoopOptions o;
    o.interval = interval;
    return o;
  }
  // Moves the clock once the loop waits for its next evaluation (so the move is not lost while it is
  // still working out when that is).
  void advance(std::chrono::nanoseconds d, int waiters = 1) {
    for (int i = 0; i < 10000 && clock_.waiters() < waiters; ++i) std::this_thread::sleep_for(1ms);
    clock_.advance(d);
  }
  // Polls (1 ms slices) until the loop has published `n` evaluations.
  static bool evaluated(const DiagnosisLoop& loop, std::uint64_t n) {
    for (int i = 0; i < 10000 && loop.latest()->evaluations < n; ++i) std::this_thread::sleep_for(1ms);
    return loop.latest()->evaluations >= n;
  }
  std::vector<store::Sample> samples(const std::string& name, const std::string& verdict = "") {
    std::vector<store::LabelMatcher> m{*store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, "__name__", name)};
    if (!verdict.empty()) m.push_back(*store::LabelMatcher::make(store::LabelMatcher::Op::kEqual, "verdict", verdict));
    auto got = head_.select(m, 0, clock_.unix_ms() + 1);
    EXPECT_TRUE(got) << got.error();
    if (!got || got->size() != 1) {
      ADD_FAILURE() << name << "{verdict=\"" << verdict << "\"}: " << (got ? got->size() : 0) << " series";
      return {};
    }
    return (*got)[0].samples;
  }

  store::Head head_;
  rules::StoreAppender<store::Head> appender_{head_};
  model::VirtualClock clock_;
  std::stringstream log_text_;
  log::Logger log_{log_text_, log::Level::kInfo};
};

TEST_F(DiagnosisLoopTest, EvaluatesOnItsOwnThreadOncePerIntervalAndPublishesEachGpusVerdict) {
  idle_history(40, {0, 1});
  WatchedSource source(head_);
  DiagnosisLoop loop(source, appender_, options(2s), clock_, log_);
  EXPECT_EQ(loop.latest()->evaluations, 0u);
  EXPECT_EQ(loop.latest()->diagnosis, nullptr) << "nothing before the first evaluation";
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));

  auto first = loop.latest();
  EXPECT_EQ(first->evaluations, 1u);
  EXPECT_EQ(first->last_evaluation_ms, clock_.unix_ms());
  ASSERT_NE(first->diagnosis, nullptr);
  ASSERT_EQ(first->diagnosis->gpus.size(), 2u);
  for (const auto& g : first->diagnosis->gpus) EXPECT_EQ(g.verdict, analysis::Verdict::kIdle) << g.identity.gpu;
  for (const auto& id : source.threads()) EXPECT_NE(id, std::this_thread::get_id()) << "read on the caller's thread";

  // Half an interval: not due. The whole interval: one more evaluation, at the clock's new time.
  advance(1s);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(loop.latest()->evaluations, 1u);
  advance(1s);
  ASSERT_TRUE(evaluated(loop, 2));
  EXPECT_EQ(loop.latest()->last_evaluation_ms, first->last_evaluation_ms + 2000);
  EXPECT_EQ(loop.latest()->failures, 0u);

  const auto status = loop.status();
  EXPECT_EQ(status.evaluations_total, 2u);
  EXPECT_EQ(status.interval_seconds, 2);
  EXPECT_EQ(status.window_seconds, 30);
  ASSERT_EQ(status.series.size(), 4u) << "info and changes per GPU";
  std::vector<std::string> info_gpus;
  for (const auto& sample : status.series) {
    auto has = [&](const char* name, const char* value) {
      return std::find(sample.labels.begin(), sample.labels.end(), std::pair<std::string, std::string>(name, value)) !=
             sample.labels.end();
    };
    if (sample.name != "gpuscope_diagnosis_info") continue;
    EXPECT_TRUE(has("verdict", "idle"));
    EXPECT_EQ(sample.value, 1);
    info_gpus.push_back(has("gpu", "0") ? "0" : has("gpu", "1") ? "1" : "?");
  }
  EXPECT_EQ(info_gpus, (std::vector<std::string>{"0", "1"})) << "one per GPU, by index";
  loop.stop();
}

TEST_F(DiagnosisLoopTest, WritesEachVerdictToTheStoreAndEndsTheOldOneWithAStalenessMarkerWhenItChanges) {
  idle_history(40, {0});
  analysis::StoreSource source(head_);
  DiagnosisLoop loop(source, appender_, options(), clock_, log_);
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));
  const std::int64_t t0 = clock_.unix_ms();
  ASSERT_EQ(loop.latest()->diagnosis->gpus.at(0).verdict, analysis::Verdict::kIdle);

  // Kernels that fill 5 % of the SMs while the engine runs 90 % of the time: launch bound, once the new
  // regime holds a few readings.
  std::int64_t changed_at = 0;
  for (int s = 1; s <= 10 && changed_at == 0; ++s) {
    reading(t0 + s * 1000, 0, 0.9, 0.045);
    advance(1s);
    ASSERT_TRUE(evaluated(loop, s + 1));
    if (loop.latest()->diagnosis->gpus.at(0).verdict == analysis::Verdict::kLaunchBound) changed_at = clock_.unix_ms();
  }
  ASSERT_NE(changed_at, 0) << "never launch bound";

  const auto idle = samples("gpuscope_diagnosis_info", "idle");
  ASSERT_FALSE(idle.empty());
  EXPECT_EQ(idle.front().t_ms, t0);
  EXPECT_EQ(idle.back().t_ms, changed_at);
  EXPECT_TRUE(store::is_stale_marker(idle.back().value)) << "the idle series ends where the verdict changed";
  for (std::size_t i = 0; i + 1 < idle.size(); ++i) EXPECT_EQ(idle[i].value, 1);
  const auto launch = samples("gpuscope_diagnosis_info", "launch_bound");
  ASSERT_EQ(launch.size(), 1u);
  EXPECT_EQ(launch[0].t_ms, changed_at);
  EXPECT_EQ(launch[0].value, 1);
  const auto changes = samples("gpuscope_diagnosis_changes_total");
  ASSERT_FALSE(changes.empty());
  EXPECT_EQ(changes.front().value, 0);
  EXPECT_EQ(changes.back().value, 1);
  EXPECT_EQ(changes.back().t_ms, changed_at);
  loop.stop();
}

TEST_F(DiagnosisLoopTest, AGpuFirstSeenIdleIsLookedForFurtherBackForItsLastActivity) {
  // Busy two minutes ago, idle since: the window alone cannot say since when.
  const std::int64_t now = clock_.unix_ms();
  for (int s = 180; s > 120; --s) reading(now - s * 1000, 0, 0.9, 0.85);
  for (int s = 120; s >= 0; --s) reading(now - s * 1000, 0, 0, 0);
  analysis::StoreSource source(head_);
  DiagnosisLoop loop(source, appender_, options(), clock_, log_);
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));
  const auto& g = loop.latest()->diagnosis->gpus.at(0);
  ASSERT_EQ(g.verdict, analysis::Verdict::kIdle);
  ASSERT_TRUE(g.since_ms.has_value());
  EXPECT_EQ(*g.since_ms, now - 121'000) << "the last busy reading";
  EXPECT_FALSE(g.since_is_lower_bound);
  // Later evaluations keep it from the tracker.
  advance(1s);
  ASSERT_TRUE(evaluated(loop, 2));
  EXPECT_EQ(loop.latest()->diagnosis->gpus.at(0).since_ms, now - 121'000);
  loop.stop();
}

// The agent's loop evaluates from its recent window (cheap, the last span only) and reads the history
// only to look back for a GPU first seen idle: never for an evaluation's window.
TEST_F(DiagnosisLoopTest, EvaluatesFromTheRecentWindowAndLooksBackOnlyInTheHistory) {
  const std::int64_t now = clock_.unix_ms();
  for (int s = 180; s > 120; --s) reading(now - s * 1000, 0, 0.9, 0.85);
  for (int s = 120; s >= 0; --s) {
    reading(now - s * 1000, 0, 0, 0);
    reading(now - s * 1000, 1, 0.9, 0.85);
  }
  store::RecentWindow recent(analysis::signal_names(), 40'000);
  auto all = head_.select({}, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(all);
  recent.seed(std::move(*all));
  WatchedSource window(recent), history(head_);
  DiagnosisLoop loop(window, history, appender_, options(), clock_, log_);
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));
  const std::size_t lookbacks = history.threads().size();
  EXPECT_GE(lookbacks, 1u) << "GPU 0 first seen idle: looked back once";
  for (int n = 2; n <= 4; ++n) {
    advance(1s);
    ASSERT_TRUE(evaluated(loop, n));
  }
  EXPECT_EQ(window.threads().size(), 4u) << "one read of the window per evaluation";
  EXPECT_EQ(history.threads().size(), lookbacks) << "the history is not read again for the window";
  const auto& gpus = loop.latest()->diagnosis->gpus;
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].verdict, analysis::Verdict::kIdle);
  EXPECT_EQ(gpus[0].since_ms, now - 121'000) << "found in the history, before the recent window";
  EXPECT_NE(gpus[1].verdict, analysis::Verdict::kIdle);
  loop.stop();
}

// The fabric's series come from the source set for them (the agent's RecentWindow of them): GPU 1 waits
// at the collectives while mlx5_1 behind its switch counts symbol errors, and its verdict is the
// network's; the history is not read for them either.
TEST_F(DiagnosisLoopTest, AWaitingGpuWhoseNicCountsErrorsGetsTheNetworkVerdictFromTheFabricSource) {
  const std::int64_t now = clock_.unix_ms();
  for (int s = 60; s >= 0; --s) {
    reading(now - s * 1000, 0, 0.95, 0.25);
    reading(now - s * 1000, 1, 0.95, 0.25);
  }
  store::Head fabric;
  for (int s = 300; s >= 0; s -= 10) {
    const std::int64_t t = now - s * 1000;
    for (int port = 0; port < 2; ++port) {
      const auto labels = [&](std::string_view name, std::vector<store::Label> extra) {
        std::vector<store::Label> l = {{"__name__", std::string(name)}, {"device", "mlx5_" + std::to_string(port)},
                                       {"port", "1"},  {"source", "rdma"}, {"link_layer", "InfiniBand"},
                                       {"gpu", std::to_string(port)}, {"Hostname", "node-1"}};
        l.insert(l.end(), extra.begin(), extra.end());
        return store::Labels(l);
      };
      ASSERT_TRUE(fabric.append(labels("gpuscope_fabric_port_up", {}), t, 1));
      ASSERT_TRUE(fabric.append(labels("gpuscope_fabric_transmit_bytes_total", {}), t, 20e9 * (300 - s)));
      ASSERT_TRUE(fabric.append(labels("gpuscope_fabric_errors_total", {{"kind", "symbol"}}), t,
                                port == 1 ? 30.0 * (300 - s) : 0.0));
    }
  }
  WatchedSource history(head_), fabric_source(fabric);
  DiagnosisLoop loop(history, history, appender_, options(), clock_, log_);
  loop.set_fabric_source(&fabric_source);
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));
  const auto& gpus = loop.latest()->diagnosis->gpus;
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].verdict, analysis::Verdict::kLaunchBound);
  EXPECT_EQ(gpus[1].verdict, analysis::Verdict::kNetworkBound);
  EXPECT_EQ(gpus[1].detail, "mlx5_1/1");
  EXPECT_EQ(fabric_source.threads().size(), 1u) << "one read of the fabric per evaluation";
  loop.stop();
  EXPECT_EQ(samples("gpuscope_diagnosis_info", "network_bound").size(), 1u);
}

TEST_F(DiagnosisLoopTest, ADiagnosisThatHangsNeverDelaysAReading) {
  idle_history(40, {0});
  WatchedSource source(head_);
  DiagnosisLoop loop(source, appender_, options(), clock_, log_);
  // The readings append to the same head on the sampler's thread, at the clock's time.
  sampler::Sampler sampler(
      [&] {
        model::Snapshot s;
        s.time = clock_.wall();
        const auto t = std::chrono::duration_cast<std::chrono::milliseconds>(s.time.time_since_epoch()).count() + 1;
        EXPECT_TRUE(head_.append(gpu_labels(0, "DCGM_FI_PROF_GR_ENGINE_ACTIVE"), t, 0));
        return s;
      },
      1s, clock_);
  source.close();
  loop.start(nullptr);
  ASSERT_TRUE(source.wait_held()) << "the first evaluation reads";
  sampler.start();
  ASSERT_NE(sampler.wait_for(1, 10s), nullptr);
  for (std::uint64_t n = 2; n <= 5; ++n) {
    advance(1s);
    ASSERT_NE(sampler.wait_for(n, 10s), nullptr) << "reading " << n << " waited for the diagnosis";
  }
  EXPECT_EQ(loop.latest()->evaluations, 0u) << "still held";
  source.open();
  ASSERT_TRUE(loop.wait_for_first(10s));
  sampler.stop();
  loop.stop();
}

TEST_F(DiagnosisLoopTest, AFailedReadIsCountedAndNoVerdictIsExportedAsCurrentUntilOneSucceeds) {
  idle_history(40, {0});
  struct FailingSource : analysis::ReadingSource {
    explicit FailingSource(const store::Queryable& d) : store(d) {}
    std::expected<std::vector<store::SeriesSamples>, std::string> select(const std::string& re, std::int64_t from,
                                                                        std::int64_t to) const override {
      if (fail) return std::unexpected("disk on fire");
      return store.select(re, from, to);
    }
    analysis::StoreSource store;
    std::atomic<bool> fail{false};
  } source(head_);
  DiagnosisLoop loop(source, appender_, options(), clock_, log_);
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));
  source.fail = true;
  advance(1s);
  ASSERT_TRUE(evaluated(loop, 2));
  const auto p = loop.latest();
  EXPECT_EQ(p->failures, 1u);
  EXPECT_EQ(p->last_error, "disk on fire");
  EXPECT_NE(log_text_.str().find("msg=\"diagnosis evaluation failed\" err=\"disk on fire\""), std::string::npos)
      << log_text_.str();
  // The last good verdicts are of an older window: /metrics does not export them as current.
  EXPECT_TRUE(loop.status().series.empty());
  source.fail = false;
  advance(1s);
  ASSERT_TRUE(evaluated(loop, 3));
  EXPECT_FALSE(loop.status().series.empty());
  loop.stop();
}

TEST_F(DiagnosisLoopTest, StopsWhileWaitingAndBeforeItStarted) {
  analysis::StoreSource source(head_);
  {
    DiagnosisLoop never_started(source, appender_, options(), clock_, log_);
    never_started.stop();
  }
  DiagnosisLoop loop(source, appender_, options(1h), clock_, log_);
  loop.start(nullptr);
  ASSERT_TRUE(loop.wait_for_first(10s));
  loop.stop();  // returns although the next evaluation is an hour away on a clock that stands still
  EXPECT_EQ(loop.latest()->evaluations, 1u);
}

}  // namespace
}  // namespace gpuscope::agent
