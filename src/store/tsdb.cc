#include "store/tsdb.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <system_error>

#include <fmt/format.h>

namespace gpuscope::store {
namespace {

// Decodes a whole persisted chunk and checks it against its row (count and time range): the CRC
// vouches for the bytes, this for what the row says about them.
std::expected<std::vector<Sample>, std::string> decode_record(const ChunkRecord& c) {
  std::vector<Sample> samples;
  samples.reserve(c.samples);
  if (auto ok = decode_chunk(c.data, c.samples, std::numeric_limits<std::int64_t>::min(),
                             std::numeric_limits<std::int64_t>::max(), samples);
      !ok) {
    return std::unexpected(ok.error());
  }
  if (samples.empty() || samples.size() != c.samples || samples.front().t_ms != c.min_t || samples.back().t_ms != c.max_t) {
    return std::unexpected(fmt::format("{} samples from {} to {} decoded where the row says {} from {} to {}",
                                       samples.size(), samples.empty() ? 0 : samples.front().t_ms,
                                       samples.empty() ? 0 : samples.back().t_ms, c.samples, c.min_t, c.max_t));
  }
  return samples;
}

// The file's (device, inode): a file deleted and created anew has another.
std::optional<std::pair<std::uint64_t, std::uint64_t>> file_identity(const std::filesystem::path& file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) return std::nullopt;
  return std::pair<std::uint64_t, std::uint64_t>{st.st_dev, st.st_ino};
}

}  // namespace

Tsdb::Tsdb(TsdbOptions options, std::unique_ptr<ChunkDatabase> db, std::int64_t now_ms)
    : options_(std::move(options)),
      file_(options_.data_dir / kChunkDatabaseFileName),
      db_(std::move(db)),
      db_identity_(file_identity(file_).value_or(std::pair<std::uint64_t, std::uint64_t>{0, 0})),
      last_flush_ms_(now_ms),
      next_flush_ms_(now_ms + options_.flush_interval_ms) {}

std::expected<std::unique_ptr<Tsdb>, std::string> Tsdb::open(TsdbOptions options, std::int64_t now_ms) {
  auto loaded = open_and_load(options, now_ms);
  if (loaded || options.read_only) return loaded;
  // A file that is not a database, or whose pages are malformed, would keep the agent from starting
  // on every restart: it is moved aside (kept for a person to look at) and a new one started. Any
  // other failure (permissions, a newer schema, another agent's lock) stays an error.
  const auto file = options.data_dir / kChunkDatabaseFileName;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec) || !ChunkDatabase::is_damaged(file, options.sqlite_vfs)) return loaded;
  // Its log and index go with it, named so that the sqlite3 shell opens the three together.
  const std::string aside = fmt::format("{}.corrupt-{}", file.string(), now_ms);
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::filesystem::path from = file.string() + suffix;
    if (!std::filesystem::exists(from, ec)) continue;
    std::filesystem::rename(from, aside + suffix, ec);
    if (ec) return std::unexpected(fmt::format("{}; moving it aside to {} failed: {}", loaded.error(), aside, ec.message()));
  }
  auto fresh = open_and_load(options, now_ms);
  if (!fresh) return fresh;
  (*fresh)->moved_aside_.store(1, std::memory_order_relaxed);
  (*fresh)->warn(fmt::format("the database {} is damaged ({}); moved it aside to {} and started a new one: "
                             "the history in it is no longer served",
                             file.string(), loaded.error(), aside));
  return fresh;
}

std::expected<std::unique_ptr<Tsdb>, std::string> Tsdb::open_and_load(const TsdbOptions& options, std::int64_t now_ms) {
  if (!options.read_only) {
    std::error_code ec;
    std::filesystem::create_directories(options.data_dir, ec);
    if (ec) return std::unexpected(fmt::format("cannot create data directory {}: {}", options.data_dir.string(), ec.message()));
  }
  const auto file = options.data_dir / kChunkDatabaseFileName;
  auto db = options.read_only ? ChunkDatabase::open_read_only(file) : ChunkDatabase::open(file, options.sqlite_vfs);
  if (!db) return std::unexpected(db.error());
  std::unique_ptr<Tsdb> tsdb(new Tsdb(options, std::move(*db), now_ms));
  tsdb->disk_bytes_.store(tsdb->db_->file_bytes(), std::memory_order_relaxed);

  auto persisted = tsdb->db_->series();
  if (!persisted) return std::unexpected(persisted.error());
  auto recent = tsdb->db_->read_all_since(now_ms - tsdb->options_.in_memory_ms);
  if (!recent) return std::unexpected(recent.error());
  for (std::size_t i = 0; i < recent->damaged.size(); ++i) {
    tsdb->skip_damaged(recent->damaged_keys[i].first, recent->damaged_keys[i].second, recent->damaged[i]);
  }
  std::map<std::uint64_t, std::vector<std::vector<Sample>>> chunks_by_series;
  for (const auto& c : recent->chunks) {
    auto samples = decode_record(c);
    if (!samples) {
      tsdb->skip_damaged(c.series_id, c.min_t,
                         fmt::format("chunk of series {} from {} to {}: {}", c.series_id, c.min_t, c.max_t, samples.error()));
      continue;
    }
    chunks_by_series[c.series_id].push_back(std::move(*samples));
  }
  std::vector<RestoredSeries> restored;
  restored.reserve(persisted->size());
  for (auto& p : *persisted) {
    RestoredSeries r{p.id, std::move(p.labels), p.min_t, p.max_t, {}};
    if (auto it = chunks_by_series.find(p.id); it != chunks_by_series.end()) r.recent_chunks = std::move(it->second);
    restored.push_back(std::move(r));
  }
  tsdb->head_.restore(std::move(restored));
  return tsdb;
}

void Tsdb::warn(std::string_view what) const {
  if (options_.warn) options_.warn(what);
}

void Tsdb::info(std::string_view what) const {
  if (options_.info) options_.info(what);
}

void Tsdb::skip_damaged(std::uint64_t series_id, std::int64_t min_t, std::string_view what) const {
  {
    std::lock_guard lock(damaged_mutex_);
    if (!damaged_.emplace(series_id, min_t).second) return;
  }
  head_.count_damaged_chunk();
  warn(fmt::format("skipping a damaged chunk: {}", what));
}

std::shared_ptr<const ChunkDatabase> Tsdb::database() const {
  std::lock_guard lock(db_mutex_);
  return db_;
}

std::expected<FlushResult, std::string> Tsdb::flush(std::int64_t now_ms) {
  std::lock_guard lock(flush_mutex_);
  // Real time, not the injected clock's: the figure says how long the disk took.
  const auto started = std::chrono::steady_clock::now();
  auto result = flush_locked(now_ms);
  disk_bytes_.store(database()->file_bytes(), std::memory_order_relaxed);
  flush_ns_sum_.fetch_add(static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                          std::chrono::steady_clock::now() - started)
                                                          .count()),
                          std::memory_order_relaxed);
  if (result) {
    flushes_.fetch_add(1, std::memory_order_relaxed);
    last_flush_ms_.store(now_ms, std::memory_order_relaxed);
    next_flush_ms_.store(now_ms + options_.flush_interval_ms, std::memory_order_relaxed);
    retry_ms_ = kFlushRetryInitialMs;
    dropping_ = false;
    if (failing_.exchange(false)) {
      info(fmt::format("flushing to {} works again, after {} failed attempts; every sample kept in memory is on disk",
                       file_.string(), failures_in_a_row_));
    }
    failures_in_a_row_ = 0;
    return result;
  }
  // Whatever failed (write or retention), the next attempt waits: a broken disk must not turn every
  // reading into a flush attempt.
  flush_failures_.fetch_add(1, std::memory_order_relaxed);
  ++failures_in_a_row_;
  reopen_ = true;
  next_flush_ms_.store(now_ms + retry_ms_, std::memory_order_relaxed);
  retry_ms_ = std::min(retry_ms_ * 2, std::max(options_.flush_interval_ms, kFlushRetryMaxMs));
  if (!failing_.exchange(true)) {
    warn(fmt::format("flushing to {} failed: {}; samples stay in memory (up to {} min) and flushes are retried "
                     "with backoff",
                     file_.string(), result.error(), options_.max_unpersisted_ms / 60000));
  }
  if (head_.drop_unpersisted_before(now_ms - options_.max_unpersisted_ms) > 0 && !dropping_) {
    dropping_ = true;
    warn(fmt::format("flushing has failed for over {} min: samples older than that are dropped from memory "
                     "without reaching disk",
                     options_.max_unpersisted_ms / 60000));
  }
  return result;
}

std::expected<void, std::string> Tsdb::ensure_database() {
  const auto identity = file_identity(file_);
  const bool gone = !identity;
  if (!gone && *identity == db_identity_ && !reopen_) return {};
  if (!gone && *identity != db_identity_) {
    // Another file where ours was (a backup restored?): its series ids are not this head's, so
    // writing into it would mix series. Loading it takes a restart.
    return std::unexpected(fmt::format("the database {} was replaced under the running agent; restart the "
                                       "agent to load it",
                                       file_.string()));
  }
  if (gone) {
    std::error_code ec;
    std::filesystem::create_directories(options_.data_dir, ec);
    if (ec) return std::unexpected(fmt::format("cannot create data directory {}: {}", options_.data_dir.string(), ec.message()));
    if (options_.directory_recreated) options_.directory_recreated();
  }
  // Reopened after any failed flush too: cheap, and a connection that met an I/O error inside a
  // transaction is not trusted to carry on (SQLite does recover from ENOSPC by itself, which the
  // full-disk test shows; an EIO cannot be produced in a test).
  auto db = ChunkDatabase::open(file_, options_.sqlite_vfs);
  if (!db) return std::unexpected(db.error());
  if (gone) {
    const std::size_t samples = head_.forget_persisted();
    recreated_.fetch_add(1, std::memory_order_relaxed);
    warn(fmt::format("the database {} was deleted under the running agent; started a new one and rewrite the {} "
                     "samples memory holds (what was flushed before is gone)",
                     file_.string(), samples));
  }
  {
    std::lock_guard lock(db_mutex_);
    db_ = std::shared_ptr<ChunkDatabase>(std::move(*db));
  }
  db_identity_ = file_identity(file_).value_or(std::pair<std::uint64_t, std::uint64_t>{0, 0});
  reopen_ = false;
  return {};
}

std::expected<FlushResult, std::string> Tsdb::flush_locked(std::int64_t now_ms) {
  if (!options_.read_only) {
    if (auto ok = ensure_database(); !ok) return std::unexpected(ok.error());
  }
  std::shared_ptr<ChunkDatabase> db;
  {
    std::lock_guard lock(db_mutex_);
    db = db_;
  }
  FlushResult result;
  const auto pending = head_.unpersisted_chunks();
  std::vector<ChunkToWrite> writes;
  writes.reserve(pending.size());
  for (const auto& u : pending) {
    writes.push_back({u.series_id, u.labels.get(), u.chunk->first_time(), u.chunk->last_time(),
                      static_cast<std::uint32_t>(u.chunk->samples()), u.chunk->data()});
  }
  if (auto ok = db->write(writes); !ok) return std::unexpected(ok.error());
  head_.mark_persisted(pending);
  result.chunks_written = writes.size();

  const std::int64_t retention_min_t = now_ms - options_.retention_ms;
  auto deleted = db->delete_before(retention_min_t);
  // The new chunks are safe; retention runs again at the next attempt.
  if (!deleted) return std::unexpected(fmt::format("retention: {}", deleted.error()));
  result.chunks_deleted = deleted->chunks_deleted;
  head_.drop_persisted_before(now_ms - options_.in_memory_ms);
  result.series_deleted = head_.forget_series_before(retention_min_t);
  return result;
}

std::expected<FlushResult, std::string> Tsdb::flush_if_due(std::int64_t now_ms) {
  if (now_ms < next_flush_ms_.load(std::memory_order_relaxed)) return FlushResult{};
  return flush(now_ms);
}

TsdbStats Tsdb::stats(bool count_chunks) const {
  TsdbStats st;
  st.head = head_.stats(count_chunks);
  st.disk_bytes = count_chunks ? database()->file_bytes() : disk_bytes_.load(std::memory_order_relaxed);
  st.damaged_chunks_skipped = st.head.damaged_chunks_skipped;
  st.flushes = flushes_.load(std::memory_order_relaxed);
  st.flush_failures = flush_failures_.load(std::memory_order_relaxed);
  st.flush_seconds_sum = static_cast<double>(flush_ns_sum_.load(std::memory_order_relaxed)) * 1e-9;
  st.flush_seconds_count = st.flushes + st.flush_failures;
  st.last_flush_ms = last_flush_ms_.load(std::memory_order_relaxed);
  st.flush_failing = failing_.load(std::memory_order_relaxed);
  st.databases_moved_aside = moved_aside_.load(std::memory_order_relaxed);
  st.databases_recreated = recreated_.load(std::memory_order_relaxed);
  return st;
}

std::expected<std::vector<SeriesSamples>, std::string> Tsdb::select(std::span<const LabelMatcher> matchers,
                                                                    std::int64_t mint_ms,
                                                                    std::int64_t maxt_ms) const {
  std::vector<SeriesSamples> out;
  auto ok = select_each(matchers, mint_ms, maxt_ms, {{}, [&out](SeriesSamples&& s) {
                                                      out.push_back(std::move(s));
                                                      return true;
                                                    }});
  if (!ok) return std::unexpected(std::move(ok.error()));
  return out;
}

std::expected<void, std::string> Tsdb::select_each(std::span<const LabelMatcher> matchers, std::int64_t mint_ms,
                                                   std::int64_t maxt_ms, const SeriesVisitor& visitor) const {
  // Asked after each chunk, so a reader over its limits stops within one chunk's samples.
  const auto go_on = [&visitor](const SeriesSamples& ss) { return !visitor.progress || visitor.progress(ss.samples.size()); };
  const auto db = database();
  for (auto& sc : head_.chunks_for(matchers, mint_ms, maxt_ms)) {
    SeriesSamples ss{std::move(sc.labels), {}};
    // Older samples than memory holds come from disk; both parts are in time order and disjoint.
    if (mint_ms < sc.memory_min_t) {
      auto read = db->read(sc.id, mint_ms, std::min(maxt_ms, sc.memory_min_t - 1));
      if (!read) return std::unexpected(read.error());
      for (std::size_t i = 0; i < read->damaged.size(); ++i) {
        skip_damaged(read->damaged_keys[i].first, read->damaged_keys[i].second, read->damaged[i]);
      }
      for (const auto& c : read->chunks) {
        if (c.min_t >= sc.memory_min_t) continue;
        if (auto ok = decode_chunk(c.data, c.samples, mint_ms, maxt_ms, ss.samples); !ok) {
          skip_damaged(c.series_id, c.min_t,
                       fmt::format("chunk of series {} from {} to {}: {}", c.series_id, c.min_t, c.max_t, ok.error()));
        }
        if (!go_on(ss)) return {};
      }
    }
    for (const auto& c : sc.chunks) {
      if (auto ok = decode_chunk(c->data(), c->samples(), mint_ms, maxt_ms, ss.samples); !ok) {
        skip_damaged(sc.id, c->first_time(), fmt::format("in-memory chunk of series {}: {}", sc.id, ok.error()));
      }
      if (!go_on(ss)) return {};
    }
    if (!ss.samples.empty() && !visitor.each(std::move(ss))) return {};
  }
  return {};
}

std::expected<std::vector<std::string>, std::string> Tsdb::label_names(std::span<const LabelMatcher> matchers,
                                                                       std::int64_t mint_ms,
                                                                       std::int64_t maxt_ms) const {
  return head_.label_names(matchers, mint_ms, maxt_ms);
}

std::expected<std::vector<std::string>, std::string> Tsdb::label_values(const std::string& name,
                                                                        std::span<const LabelMatcher> matchers,
                                                                        std::int64_t mint_ms,
                                                                        std::int64_t maxt_ms) const {
  return head_.label_values(name, matchers, mint_ms, maxt_ms);
}

}  // namespace gpuscope::store
