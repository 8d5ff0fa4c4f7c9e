// TsdbFlusher and Tsdb's flush schedule: flushes on their own thread at the interval, readings and
// queries that never wait for a disk that is stuck, a bounded stop, and backoff after failures.
#include "store/tsdb_flusher.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "gate_vfs.h"
#include "store_test_support.h"

namespace gpuscope::store {
namespace {

using testing::GateVfs;
using testing::kT0;
using testing::reading_of;
using testing::select_all;
using testing::TempDir;

using testing::kMinute;
constexpr int kFlusherSeries = 8;

// The virtual clock's wall time is kT0 at start, so readings and flushes share one timeline.
model::VirtualClock clock_at_t0() { return model::VirtualClock(model::Clock::WallTime(std::chrono::milliseconds(kT0))); }

class TsdbFlusherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    gate_.open_gate();
    gate_.fail_writes_with(SQLITE_OK);
  }
  void TearDown() override {
    gate_.open_gate();
    gate_.fail_writes_with(SQLITE_OK);
  }

  TsdbOptions options() {
    TsdbOptions o;
    o.data_dir = dir_.path();
    o.sqlite_vfs = testing::kGateVfsName;
    o.warn = [this](std::string_view w) { warnings_.emplace_back(w); };
    o.info = [this](std::string_view i) { infos_.emplace_back(i); };
    return o;
  }
  std::unique_ptr<Tsdb> open(std::int64_t now_ms) {
    auto t = Tsdb::open(options(), now_ms);
    EXPECT_TRUE(t) << t.error();
    return t ? std::move(*t) : nullptr;
  }
  // Appends readings at 1 s from `from` (inclusive) to `to` (exclusive).
  static void append(Tsdb& db, std::int64_t from, std::int64_t to) {
    for (std::int64_t t = from; t < to; t += 1000) ASSERT_EQ(db.append_reading(t, reading_of(kFlusherSeries, t)).appended, std::size_t{kFlusherSeries});
  }
  // Waits (real time, a hang guard only) until the flusher's thread waits on the clock.
  static void wait_for_waiter(const model::VirtualClock& clock) {
    for (int i = 0; i < 60000 && clock.waiters() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_GT(clock.waiters(), 0) << "the flusher never waited on the clock";
  }
  // Every series holds every second from `from` to `to` (inclusive).
  static void expect_all(const Queryable& q, std::int64_t from, std::int64_t to) {
    auto all = select_all(q);
    ASSERT_EQ(all.size(), std::size_t{kFlusherSeries});
    for (const auto& s : all) {
      ASSERT_EQ(s.samples.size(), static_cast<std::size_t>((to - from) / 1000 + 1)) << s.labels.to_string();
      EXPECT_EQ(s.samples.front().t_ms, from);
      EXPECT_EQ(s.samples.back().t_ms, to);
    }
  }

  GateVfs& gate_ = GateVfs::instance();
  TempDir dir_;
  std::vector<std::string> warnings_, infos_;
};

TEST_F(TsdbFlusherTest, FlushesAtTheIntervalOnItsOwnThread) {
  auto clock = clock_at_t0();
  auto db = open(kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + 30 * 1000);
  TsdbFlusher flusher(*db, clock);
  flusher.start();
  wait_for_waiter(clock);
  EXPECT_EQ(db->stats().flushes, 0u);  // not due before the interval
  clock.advance(std::chrono::milliseconds(kMinute));
  for (int i = 0; i < 60000 && db->stats().flushes == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(db->stats().flushes, 1u);
  EXPECT_EQ(db->next_flush_ms(), kT0 + 2 * kMinute);
  const auto stopped = flusher.stop(std::chrono::seconds(10));
  EXPECT_TRUE(stopped.thread_exited);
  ASSERT_TRUE(stopped.final_flush) << stopped.final_flush.error();
}

// The requirement: a disk that blocks must not delay a reading. The flush is held inside
// SQLite's write (as a stuck disk holds it); readings, queries and stats go on meanwhile, and the
// flush still holds when they are done: they waited for nothing it holds.
TEST_F(TsdbFlusherTest, ReadingsAndQueriesCompleteWhileAFlushIsStuckOnTheDisk) {
  auto clock = clock_at_t0();
  auto db = open(kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + 10 * kMinute);
  TsdbFlusher flusher(*db, clock);
  gate_.close_gate();
  flusher.start();
  auto flushed = std::async(std::launch::async, [&] { return flusher.flush_now(); });
  ASSERT_TRUE(gate_.wait_until_held()) << "the flush never reached the disk";

  append(*db, kT0 + 10 * kMinute, kT0 + 20 * kMinute);  // 600 readings of 8 series
  expect_all(*db, kT0, kT0 + 20 * kMinute - 1000);
  const auto st = db->stats();
  EXPECT_EQ(st.head.samples_appended, 1200u * kFlusherSeries);
  EXPECT_EQ(st.flushes, 0u);
  EXPECT_EQ(gate_.held(), 1) << "the flush finished before the readings: the test proved nothing";

  gate_.open_gate();
  auto result = flushed.get();
  ASSERT_TRUE(result) << result.error();
  EXPECT_EQ(db->stats().flushes, 1u);
  EXPECT_TRUE(flusher.stop(std::chrono::seconds(10)).thread_exited);
  db.reset();
  // Everything reached the disk: the flush under way and the final one.
  auto reopened = open(kT0 + 21 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 20 * kMinute - 1000);
}

TEST_F(TsdbFlusherTest, StopFlushesWhatIsInMemory) {
  auto clock = clock_at_t0();
  auto db = open(kT0);
  ASSERT_TRUE(db);
  TsdbFlusher flusher(*db, clock);
  flusher.start();
  append(*db, kT0, kT0 + 45 * 1000);
  const auto stopped = flusher.stop(std::chrono::seconds(10));
  EXPECT_TRUE(stopped.thread_exited);
  ASSERT_TRUE(stopped.final_flush) << stopped.final_flush.error();
  EXPECT_EQ(stopped.final_flush->chunks_written, std::size_t{kFlusherSeries});
  db.reset();
  auto reopened = open(kT0 + kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 44 * 1000);
}

// A final flush stuck on the disk does not hold up the agent's stop beyond the grace, timed on the
// clock; the flusher reports its thread left running.
TEST_F(TsdbFlusherTest, StopGivesUpAfterTheGraceWhenTheDiskIsStuck) {
  auto clock = clock_at_t0();
  auto db = open(kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + 45 * 1000);
  auto flusher = std::make_unique<TsdbFlusher>(*db, clock);
  flusher->start();
  gate_.close_gate();
  auto stopped = std::async(std::launch::async, [&] { return flusher->stop(std::chrono::seconds(5)); });
  ASSERT_TRUE(gate_.wait_until_held());
  wait_for_waiter(clock);  // stop() waits out its grace on the clock
  clock.advance(std::chrono::seconds(5));
  const auto result = stopped.get();
  EXPECT_FALSE(result.thread_exited);
  ASSERT_FALSE(result.final_flush);
  EXPECT_NE(result.final_flush.error().find("still waiting for the disk"), std::string::npos) << result.final_flush.error();
  gate_.open_gate();
  flusher.reset();  // joins the thread once the disk answers
  EXPECT_EQ(db->stats().flushes, 1u);
}

// After a failure, flush_if_due waits a backoff (1 s, 2 s, 4 s, ...) instead of trying at every
// reading; the failure is reported once, the recovery once, and nothing kept in memory is lost.
TEST_F(TsdbFlusherTest, RetriesAFailedFlushWithBackoffNotAtEveryReading) {
  auto db = open(kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + kMinute);
  ASSERT_TRUE(db->flush_if_due(kT0 + kMinute));
  gate_.fail_writes_with(SQLITE_FULL);
  std::vector<std::int64_t> attempts;
  for (std::int64_t t = kT0 + kMinute; t < kT0 + 3 * kMinute; t += 1000) {
    ASSERT_TRUE(db->append_reading(t, reading_of(kFlusherSeries, t)).rejected == 0);
    const auto before = db->stats().flush_failures;
    auto r = db->flush_if_due(t);
    if (db->stats().flush_failures != before) {
      attempts.push_back(t - (kT0 + 2 * kMinute));
      ASSERT_FALSE(r);
      EXPECT_NE(r.error().find("full"), std::string::npos) << r.error();
    }
  }
  // The first at the interval, then 1, 2, 4, 8 and 16 s after each failure (the next, 32 s after the
  // last, falls past the loop).
  EXPECT_EQ(attempts, (std::vector<std::int64_t>{0, 1000, 3000, 7000, 15000, 31000}))
      << "attempt times relative to the first";
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("retried with backoff"), std::string::npos) << warnings_[0];
  EXPECT_TRUE(db->stats().flush_failing);
  EXPECT_TRUE(infos_.empty());

  gate_.fail_writes_with(SQLITE_OK);
  ASSERT_TRUE(db->flush(kT0 + 3 * kMinute));
  EXPECT_FALSE(db->stats().flush_failing);
  ASSERT_EQ(infos_.size(), 1u);
  EXPECT_NE(infos_[0].find("works again"), std::string::npos) << infos_[0];
  EXPECT_EQ(db->next_flush_ms(), kT0 + 4 * kMinute);
  db.reset();
  auto reopened = open(kT0 + 4 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 3 * kMinute - 1000);
}

// A retention step that fails (here: a trigger refuses deletes) used to leave the flush time where
// it was, so every following reading tried a whole flush again.
TEST_F(TsdbFlusherTest, AFailingRetentionStepIsRetriedWithBackoffNotAtEveryReading) {
  auto o = options();
  o.retention_ms = 5 * kMinute;
  auto opened = Tsdb::open(o, kT0);
  ASSERT_TRUE(opened) << opened.error();
  auto& db = **opened;
  append(db, kT0, kT0 + 10 * kMinute);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((dir_.path() / kChunkDatabaseFileName).c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "CREATE TRIGGER refuse BEFORE DELETE ON chunks BEGIN SELECT RAISE(ABORT, 'refused'); END",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(raw);
  }
  std::uint64_t attempts = 0;
  for (std::int64_t t = kT0 + 10 * kMinute; t < kT0 + 11 * kMinute; t += 1000) {
    db.append_reading(t, reading_of(kFlusherSeries, t));
    const auto before = db.stats().flush_failures;
    auto r = db.flush_if_due(t);
    if (db.stats().flush_failures != before) {
      ++attempts;
      ASSERT_FALSE(r);
      EXPECT_NE(r.error().find("retention"), std::string::npos) << r.error();
    }
  }
  // 60 readings: attempts at 0, 1, 3, 7, 15, 31 s (not 60 of them).
  EXPECT_EQ(attempts, 6u);
  ASSERT_EQ(warnings_.size(), 1u) << "reported once";
}

// Appends, flushes and queries at once, as the sampler, the flusher and HTTP threads run them: the open
// chunk grows and is sealed between a flush's snapshot and its marking, chunks leave memory while
// queries hold them. Afterwards the disk holds every sample exactly once.
TEST_F(TsdbFlusherTest, ConcurrentAppendsFlushesAndQueriesLoseAndRepeatNothing) {
  auto o = options();
  o.sqlite_vfs.clear();
  o.in_memory_ms = 5 * kMinute;  // chunks leave memory during the run
  auto opened = Tsdb::open(o, kT0);
  ASSERT_TRUE(opened) << opened.error();
  auto& db = **opened;
  constexpr std::int64_t kEnd = kT0 + 40 * kMinute;
  std::atomic<std::int64_t> appended_to{kT0};
  std::atomic<bool> done{false};
  std::atomic<int> flushes{0};
  std::thread sampler([&] {
    for (std::int64_t t = kT0; t < kEnd; t += 1000) {
      db.append_reading(t, reading_of(kFlusherSeries, t));
      appended_to = t;
      // Every 5 minutes of readings waits for one more flush, so flushes interleave with the appends
      // however the threads are scheduled (a busy machine could otherwise run all readings first).
      if ((t - kT0) % (5 * kMinute) == 0) {
        const int seen = flushes.load();
        while (flushes.load() == seen && !done.load()) std::this_thread::yield();
      }
    }
    done = true;
  });
  std::thread queries([&] {
    while (!done) {
      auto r = db.select({}, kT0, kEnd);
      ASSERT_TRUE(r) << r.error();
      for (const auto& s : *r) {
        for (std::size_t i = 1; i < s.samples.size(); ++i) ASSERT_LT(s.samples[i - 1].t_ms, s.samples[i].t_ms);
      }
      (void)db.stats();
    }
  });
  while (!done) {
    auto r = db.flush(appended_to.load());
    if (!r) {
      done = true;  // the sampler must not wait for a flush that will not come
      sampler.join();
      queries.join();
      FAIL() << r.error();
    }
    ++flushes;
  }
  sampler.join();
  queries.join();
  ASSERT_TRUE(db.flush(kEnd));
  EXPECT_GE(flushes.load(), 8) << "one per 5 minutes of readings at least";
  opened->reset();
  auto reopened = open(kEnd + kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kEnd - 1000);
}

}  // namespace
}  // namespace gpuscope::store
