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

TEST(Sampler, NothingIsPublishedBeforeStartThenReadingsComeAtTheInterval) {
  std::atomic<int> reads{0};
  Sampler sampler([&] { ++reads; return snapshot_with(2); }, 50ms);
  EXPECT_EQ(sampler.latest(), nullptr);
  std::this_thread::sleep_for(80ms);
  EXPECT_EQ(reads.load(), 0) << "nothing reads before start()";
  sampler.start();
  auto first = sampler.wait_for(1, 2s);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->sequence, 1u);
  EXPECT_EQ(first->snapshot.gpus.size(), 2u);
  EXPECT_LE(first->started, first->finished);
  std::this_thread::sleep_for(520ms);
  ASSERT_TRUE(sampler.stop());
  // ~11 readings in 570 ms at 50 ms; a loose band that still fails for a sampler that spins or stalls.
  EXPECT_GE(reads.load(), 7);
  EXPECT_LE(reads.load(), 14);
  EXPECT_EQ(sampler.stats().samples_total, static_cast<std::uint64_t>(reads.load()));
  EXPECT_EQ(sampler.stats().overruns_total, 0u);
  EXPECT_EQ(sampler.latest()->sequence, static_cast<std::uint64_t>(reads.load()));
}

TEST(Sampler, SlowReadingsAreCountedAsOverrunsAndMissedTicksAreSkipped) {
  std::atomic<int> reads{0};
  Sampler sampler(
      [&] {
        const int n = ++reads;
        if (n <= 3) std::this_thread::sleep_for(230ms);  // 4.6 intervals each
        return snapshot_with(1);
      },
      50ms);
  sampler.start();
  ASSERT_NE(sampler.wait_for(1, 3s), nullptr);
  EXPECT_EQ(sampler.stats().overruns_total, 0u) << "the first reading's warm-up is no overrun";
  ASSERT_NE(sampler.wait_for(3, 3s), nullptr);
  const auto fourth = sampler.wait_for(4, 3s);
  ASSERT_NE(fourth, nullptr);
  ASSERT_TRUE(sampler.stop());
  EXPECT_EQ(sampler.stats().overruns_total, 2u) << "readings 2 and 3";
  // Skipped ticks are not made up by back-to-back readings: the fourth reading starts on the grid
  // after the third ended, not as a burst.
  EXPECT_LE(reads.load(), 6);
}

TEST(Sampler, ReadersAreNeverBlockedByAHungReadingAndStopCanGiveUpWaiting) {
  std::atomic<bool> release{false};
  std::atomic<int> reads{0};
  Sampler sampler(
      [&] {
        if (++reads == 2) {
          while (!release) std::this_thread::sleep_for(5ms);
        }
        return snapshot_with(1);
      },
      20ms);
  sampler.start();
  ASSERT_NE(sampler.wait_for(1, 2s), nullptr);
  std::this_thread::sleep_for(60ms);  // the second reading is now stuck
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sampler.latest()->sequence, 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 50ms);
  EXPECT_FALSE(sampler.stop(100ms)) << "stop() must not claim the thread ended while it is stuck";
  release = true;
  EXPECT_TRUE(sampler.stop());
}

}  // namespace
}  // namespace gpuscope::sampler
