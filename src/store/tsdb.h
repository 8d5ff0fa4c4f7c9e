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

struct TsdbOptions {
  std::filesystem::path data_dir{kDefaultDataDir};  // created when absent (unless read_only)
  // For readers (`eval --data-dir`): the directory and its database must exist and are never created
  // or written; flush() fails.
  bool read_only = false;
  std::int64_t retention_ms = 15LL * 24 * 3600 * 1000;      // `--retention`, Prometheus's default
  std::int64_t flush_interval_ms = 60 * 1000;               // at most this much is lost on kill -9
  std::int64_t in_memory_ms = 3LL * 3600 * 1000;            // older persisted chunks leave memory
  // Called for each damaged chunk skipped (once per chunk). The store does not depend on the logger:
  // the agent passes a function that logs at warn; tests collect the lines.
  std::function<void(std::string_view)> warn;
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
  std::uint64_t flushes = 0;
  std::uint64_t flush_failures = 0;
  std::int64_t last_flush_ms = 0;
};

class Tsdb : public Queryable {
 public:
  // Opens <data_dir>/chunks.sqlite and loads the series and the chunks of the last in_memory_ms, so
  // appends continue where they stopped (a series that had ended stays ended). now_ms is the caller's
  // clock: the store never reads one.
  static std::expected<std::unique_ptr<Tsdb>, std::string> open(TsdbOptions options, std::int64_t now_ms);

  // Writes (see Head). The sampler calls these and then flush_if_due from its own thread.
  std::expected<void, AppendError> append(const Labels& labels, std::int64_t t_ms, double value) {
    return head_.append(labels, t_ms, value);
  }
  ReadingResult append_reading(std::int64_t t_ms, std::span<const LabeledValue> values) {
    return head_.append_reading(t_ms, values);
  }

  // Writes every chunk not yet on disk (sealed ones and a snapshot of each open one) in one
  // transaction, then applies retention and drops old persisted chunks from memory. On failure
  // nothing leaves memory and the next flush tries again.
  std::expected<FlushResult, std::string> flush(std::int64_t now_ms);
  // Nothing is flushed on destruction (the store has no clock): a clean shutdown calls flush(now) first.
  // flush() when flush_interval_ms has passed since the last flush (or open); nothing otherwise.
  std::expected<FlushResult, std::string> flush_if_due(std::int64_t now_ms);

  TsdbStats stats() const;
  const Head& head() const { return head_; }
  const ChunkDatabase& database() const { return *db_; }

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
  Tsdb(TsdbOptions options, std::unique_ptr<ChunkDatabase> db, std::int64_t now_ms)
      : options_(std::move(options)), db_(std::move(db)), last_flush_ms_(now_ms) {}
  // Counts and reports a damaged chunk the first time it is met.
  void skip_damaged(std::uint64_t series_id, std::int64_t min_t, std::string_view what) const;

  TsdbOptions options_;
  std::unique_ptr<ChunkDatabase> db_;
  Head head_;
  std::mutex flush_mutex_;
  std::atomic<std::int64_t> last_flush_ms_;
  std::atomic<std::uint64_t> flushes_{0}, flush_failures_{0};
  mutable std::mutex damaged_mutex_;
  mutable std::set<std::pair<std::uint64_t, std::int64_t>> damaged_;  // (series id, min_t) reported
};

}  // namespace gpuscope::store
