#include "sampler/sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gpuscope::sampler {
namespace {

using namespace std::chrono_literals;

model::Snapshot snapshot_with(unsigned gpus) {
  model::Snapshot s;
  for (unsigned i = 0; i < gpus; ++i) {
    model::GpuSample g;
    g.index = i;
    s.gpus.push_back(g);
  }
  return s;
}

// Waits (in real time, generously) until `done`; the assertions are on counts and order, never on how
// long a busy machine took.
template <class F>
bool eventually(F done) {
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(Sampler, NothingIsPublishedBeforeStartThenOneReadingPerInterval) {
  model::VirtualClock clock;
  std::atomic<int> reads{0};
  Sampler sampler([&] { ++reads; return snapshot_with(2); }, 50ms, clock);
  EXPECT_EQ(sampler.latest(), nullptr);
  clock.advance(1s);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(reads.load(), 0) << "nothing reads before start()";
  sampler.start();
  auto first = sampler.wait_for(1, 10s);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_EQ(first->snapshot.gpus.size(), 2u);
  EXPECT_EQ(first->started, clock.steady()) << "the first reading is taken at once";
  // Time that does not reach the next tick reads nothing; each tick reads exactly once.
  ASSERT_TRUE(eventually([&] { return clock.waiters() == 1; }));
  clock.advance(49ms);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(reads.load(), 1);
  for (int tick = 2; tick <= 11; ++tick) {
    ASSERT_TRUE(eventually([&] { return clock.waiters() == 1; }));
    clock.advance(tick == 2 ? 1ms : 50ms);
    auto p = sampler.wait_for(static_cast<std::uint64_t>(tick), 10s);
    ASSERT_NE(p, nullptr) << "tick " << tick;
    EXPECT_EQ(p->sequence, static_cast<std::uint64_t>(tick));
  }
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(sampler.stop());
  EXPECT_EQ(reads.load(), 11);
  EXPECT_EQ(sampler.stats().samples_total, 11u);
  EXPECT_EQ(sampler.stats().overruns_total, 0u);
  EXPECT_EQ(sampler.latest()->sequence, 11u);
}

TEST(Sampler, SlowReadingsAreCountedAsOverrunsAndMissedTicksAreSkipped) {
  model::VirtualClock clock;
  std::atomic<int> reads{0};
  Sampler sampler(
      [&] {
        const int n = ++reads;
        if (n <= 3) clock.advance(230ms);  // 4.6 intervals each
        return snapshot_with(1);
      },
      50ms, clock);
  sampler.start();
  // Reading 1 runs from 0 to 230 ms: the ticks at 50 to 200 ms are past, so reading 2 is due at 250.
  std::shared_ptr<const Publication> p[5];
  for (int k = 1; k <= 4; ++k) {
    p[k] = sampler.wait_for(static_cast<std::uint64_t>(k), 10s);
    ASSERT_NE(p[k], nullptr) << k;
    ASSERT_TRUE(eventually([&] { return clock.waiters() == 1; }));
    if (k < 4) clock.advance(20ms);
  }
  ASSERT_TRUE(sampler.stop());
  EXPECT_EQ(sampler.stats().overruns_total, 2u) << "readings 2 and 3; the first reading's warm-up is no overrun";
  // Skipped ticks are not made up by back-to-back readings: each next reading starts on the first
  // tick after the previous one ended.
  for (int k = 1; k <= 3; ++k) {
    EXPECT_EQ(p[k]->finished - p[k]->started, 230ms) << k;
    EXPECT_EQ(p[k + 1]->started - p[k]->finished, 20ms) << k;
    EXPECT_EQ((p[k + 1]->started - p[1]->started) % 50ms, 0ms) << "on the grid";
  }
  EXPECT_EQ(reads.load(), 4) << "no reading without time passing";
}

TEST(Sampler, ReadersAreNeverBlockedByAHungReadingAndStopCanGiveUpWaiting) {
  model::VirtualClock clock;
  std::atomic<bool> release{false};
  std::atomic<bool> stuck{false};
  std::atomic<int> reads{0};
  Sampler sampler(
      [&] {
        if (++reads == 2) {
          stuck = true;
          while (!release) std::this_thread::sleep_for(1ms);
        }
        return snapshot_with(1);
      },
      20ms, clock);
  sampler.start();
  ASSERT_NE(sampler.wait_for(1, 10s), nullptr);
  ASSERT_TRUE(eventually([&] { return clock.waiters() == 1; }));
  clock.advance(20ms);
  ASSERT_TRUE(eventually([&] { return stuck.load(); }));
  // The reading is stuck inside `read`: the latest publication is still there for every reader.
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sampler.latest()->sequence, 1u);
  EXPECT_FALSE(sampler.stop(100ms)) << "stop() must not claim the thread ended while it is stuck";
  release = true;
  EXPECT_TRUE(sampler.stop());
  EXPECT_EQ(sampler.latest()->sequence, 2u);
}

}  // namespace
}  // namespace gpuscope::sampler
