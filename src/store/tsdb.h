// Tsdb: the agent's time-series store, a Head (recent samples, compressed, in memory) over a
// ChunkDatabase (everything within retention on disk), with periodic flush, retention and restart.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "store/chunk_database.h"
#include "store/head.h"
#include "store/queryable.h"

namespace gpuscope::store {

// `--data-dir`'s default, as Prometheus-like daemons keep state under /var/lib; the store's file in it.
inline constexpr std::string_view kDefaultDataDir = "/var/lib/gpuscope";
inline constexpr std::string_view kChunkDatabaseFileName = "chunks.sqlite";

// After a failed flush the next attempt waits this long, doubling after each failure up to the larger
// of the flush interval and kFlushRetryMaxMs: a lock held by a backup tool clears in a second, a full
// disk takes a person, and each attempt on a broken disk costs a transaction of everything pending.
inline constexpr std::int64_t kFlushRetryInitialMs = 1000;
inline constexpr std::int64_t kFlushRetryMaxMs = 5 * 60 * 1000;

struct TsdbOptions {
  std::filesystem::path data_dir{kDefaultDataDir};  // created when absent (unless read_only)
  // For readers (`eval --data-dir`): the directory and its database must exist and are never created
  // or written; flush() fails.
  bool read_only = false;
  std::int64_t retention_ms = 15LL * 24 * 3600 * 1000;      // `--retention`, Prometheus's default
  std::int64_t flush_interval_ms = 60 * 1000;               // at most this much is lost on kill -9
  std::int64_t in_memory_ms = 3LL * 3600 * 1000;            // older persisted chunks leave memory
  // While flushes fail, samples not yet on disk stay in memory up to this age, then the oldest are
  // dropped (counted in HeadStats::unpersisted_samples_dropped): a disk that stays broken for days
  // must not grow the agent without bound. 12 h of 8 GPUs' default series is ~40 MB of chunks; a night
  // for someone to free the disk.
  std::int64_t max_unpersisted_ms = 12LL * 3600 * 1000;
  // One line per degraded event, once: a damaged chunk skipped, flushes starting to fail, a corrupt
  // database moved aside, a deleted one recreated, unflushed samples dropped. The store does not
  // depend on the logger: the agent passes functions that log (warn / info); tests collect the lines.
  std::function<void(std::string_view)> warn;
  // The matching recoveries: flushes work again.
  std::function<void(std::string_view)> info;
  // Called (on the flushing thread) when the data directory was deleted under the store and made
  // again, before the new database is written: whatever else lived there (the agent's lock) is gone.
  std::function<void()> directory_recreated;
  // A registered SQLite VFS to open the database with (empty: the operating system's). Tests only.
  std::string sqlite_vfs;
};

struct FlushResult {
  std::size_t chunks_written = 0;
  std::size_t chunks_deleted = 0;  // by retention
  std::size_t series_deleted = 0;  // by retention, no chunk left
};

struct TsdbStats {
  HeadStats head;
  std::uint64_t disk_bytes = 0;              // the database file and its write-ahead log
  std::uint64_t damaged_chunks_skipped = 0;  // persisted or in memory, each chunk counted once
  std::uint64_t flushes = 0;                 // that succeeded
  std::uint64_t flush_failures = 0;          // writing or retention failed
  double flush_seconds_sum = 0;              // over every flush, failed ones included
  std::uint64_t flush_seconds_count = 0;     // flushes + flush_failures
  std::int64_t last_flush_ms = 0;            // the last successful flush (open counts as one)
  bool flush_failing = false;                // the last flush failed
  // Databases started anew: the file was not a database or was malformed at open (moved aside), or it
  // was deleted under the running agent (recreated, and what memory held rewritten).
  std::uint64_t databases_moved_aside = 0;
  std::uint64_t databases_recreated = 0;
};

class Tsdb : public Queryable {
 public:
  // Opens <data_dir>/chunks.sqlite and loads the series and the chunks of the last in_memory_ms, so
  // appends continue where they stopped (a series that had ended stays ended). now_ms is the caller's
  // clock: the store never reads one.
  static std::expected<std::unique_ptr<Tsdb>, std::string> open(TsdbOptions options, std::int64_t now_ms);

  // Writes (see Head). The sampler calls these; they only touch memory and never wait for a flush
  // (TsdbFlusher flushes on its own thread).
  std::expected<void, AppendError> append(const Labels& labels, std::int64_t t_ms, double value) {
    return head_.append(labels, t_ms, value);
  }
  ReadingResult append_reading(std::int64_t t_ms, std::span<const LabeledValue> values) {
    return head_.append_reading(t_ms, values);
  }

  // Writes every chunk not yet on disk (sealed ones and a snapshot of each open one) in one
  // transaction, then applies retention and drops old persisted chunks from memory. On failure
  // nothing unflushed leaves memory (but what is older than max_unpersisted_ms), the failure is
  // reported once through options.warn, and the next attempt is due after a backoff; before it the
  // database is reopened, and recreated (what memory holds rewritten) when its file was deleted.
  // Safe from any thread alongside appends and queries; flushes run one at a time.
  std::expected<FlushResult, std::string> flush(std::int64_t now_ms);
  // Nothing is flushed on destruction (the store has no clock): a clean shutdown calls flush(now) first.
  // flush() when next_flush_ms() has come; nothing otherwise.
  std::expected<FlushResult, std::string> flush_if_due(std::int64_t now_ms);
  // When the next flush is due: flush_interval_ms after the last success (or open), or a backoff
  // after a failure (kFlushRetryInitialMs, doubling up to max(flush_interval_ms, kFlushRetryMaxMs)).
  std::int64_t next_flush_ms() const { return next_flush_ms_.load(std::memory_order_relaxed); }
  std::int64_t flush_interval_ms() const { return options_.flush_interval_ms; }

  // With `count_chunks` false: no walk of the in-memory chunks, and the file sizes as of the last flush
  // rather than asked of the filesystem (the agent's per-reading figures).
  TsdbStats stats(bool count_chunks = true) const;
  const Head& head() const { return head_; }
  // The database now in use (a flush may replace it: the file deleted, or reopened after a failure).
  std::shared_ptr<const ChunkDatabase> database() const;

  // Over memory and disk. The label APIs answer from the series index: series whose time span
  // [first sample, last sample] overlaps the range, as Prometheus answers from block time ranges.
  std::expected<std::vector<SeriesSamples>, std::string> select(std::span<const LabelMatcher> matchers,
                                                                std::int64_t mint_ms,
                                                                std::int64_t maxt_ms) const override;
  std::expected<void, std::string> select_each(std::span<const LabelMatcher> matchers, std::int64_t mint_ms,
                                               std::int64_t maxt_ms, const SeriesVisitor& visitor) const override;
  std::expected<std::vector<std::string>, std::string> label_names(std::span<const LabelMatcher> matchers,
                                                                   std::int64_t mint_ms,
                                                                   std::int64_t maxt_ms) const override;
  std::expected<std::vector<std::string>, std::string> label_values(const std::string& name,
                                                                    std::span<const LabelMatcher> matchers,
                                                                    std::int64_t mint_ms,
                                                                    std::int64_t maxt_ms) const override;

 private:
  Tsdb(TsdbOptions options, std::unique_ptr<ChunkDatabase> db, std::int64_t now_ms);
  // Opens the database and loads it into a new Tsdb (open() adds moving a corrupt file aside).
  static std::expected<std::unique_ptr<Tsdb>, std::string> open_and_load(const TsdbOptions& options, std::int64_t now_ms);
  // Counts and reports a damaged chunk the first time it is met.
  void skip_damaged(std::uint64_t series_id, std::int64_t min_t, std::string_view what) const;
  // flush()'s work, flush_mutex_ held: the database checked (and reopened or recreated), then written.
  std::expected<FlushResult, std::string> flush_locked(std::int64_t now_ms);
  std::expected<void, std::string> ensure_database();
  void warn(std::string_view what) const;
  void info(std::string_view what) const;

  const TsdbOptions options_;
  const std::filesystem::path file_;
  mutable std::mutex db_mutex_;  // guards only the pointer: queries take a reference and read with it
  std::shared_ptr<ChunkDatabase> db_;
  Head head_;
  std::mutex flush_mutex_;
  // flush_mutex_ held: the database file's identity (device, inode) when opened, to notice it deleted
  // or replaced; whether the last flush failed (reopen before the next); the current backoff.
  std::pair<std::uint64_t, std::uint64_t> db_identity_{0, 0};
  bool reopen_ = false;
  std::int64_t retry_ms_ = kFlushRetryInitialMs;
  bool dropping_ = false;  // unflushed samples are being dropped (logged once)
  std::uint64_t failures_in_a_row_ = 0;
  std::atomic<bool> failing_{false};
  std::atomic<std::int64_t> last_flush_ms_, next_flush_ms_;
  std::atomic<std::uint64_t> disk_bytes_{0};  // the files' size after the last flush (or open)
  std::atomic<std::uint64_t> flushes_{0}, flush_failures_{0}, flush_ns_sum_{0};
  std::atomic<std::uint64_t> moved_aside_{0}, recreated_{0};
  mutable std::mutex damaged_mutex_;
  mutable std::set<std::pair<std::uint64_t, std::int64_t>> damaged_;  // (series id, min_t) reported
};

}  // namespace gpuscope::store
