#include "store/tsdb.h"

#include <algorithm>
#include <limits>
#include <map>
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

}  // namespace

std::expected<std::unique_ptr<Tsdb>, std::string> Tsdb::open(TsdbOptions options, std::int64_t now_ms) {
  if (!options.read_only) {
    std::error_code ec;
    std::filesystem::create_directories(options.data_dir, ec);
    if (ec) return std::unexpected(fmt::format("cannot create data directory {}: {}", options.data_dir.string(), ec.message()));
  }
  const auto file = options.data_dir / kChunkDatabaseFileName;
  auto db = options.read_only ? ChunkDatabase::open_read_only(file) : ChunkDatabase::open(file);
  if (!db) return std::unexpected(db.error());
  std::unique_ptr<Tsdb> tsdb(new Tsdb(std::move(options), std::move(*db), now_ms));

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

void Tsdb::skip_damaged(std::uint64_t series_id, std::int64_t min_t, std::string_view what) const {
  {
    std::lock_guard lock(damaged_mutex_);
    if (!damaged_.emplace(series_id, min_t).second) return;
  }
  head_.count_damaged_chunk();
  if (options_.warn) options_.warn(fmt::format("skipping a damaged chunk: {}", what));
}

std::expected<FlushResult, std::string> Tsdb::flush(std::int64_t now_ms) {
  std::lock_guard lock(flush_mutex_);
  FlushResult result;
  const auto pending = head_.unpersisted_chunks();
  std::vector<ChunkToWrite> writes;
  writes.reserve(pending.size());
  for (const auto& u : pending) {
    writes.push_back({u.series_id, &u.labels, u.chunk->first_time(), u.chunk->last_time(),
                      static_cast<std::uint32_t>(u.chunk->samples()), u.chunk->data()});
  }
  if (auto ok = db_->write(writes); !ok) {
    flush_failures_.fetch_add(1, std::memory_order_relaxed);
    return std::unexpected(ok.error());
  }
  head_.mark_persisted(pending);
  result.chunks_written = writes.size();

  const std::int64_t retention_min_t = now_ms - options_.retention_ms;
  auto deleted = db_->delete_before(retention_min_t);
  if (!deleted) {
    // The new chunks are safe; retention simply runs again at the next flush.
    flush_failures_.fetch_add(1, std::memory_order_relaxed);
    return std::unexpected(deleted.error());
  }
  result.chunks_deleted = deleted->chunks_deleted;
  head_.drop_persisted_before(now_ms - options_.in_memory_ms);
  result.series_deleted = head_.forget_series_before(retention_min_t);
  last_flush_ms_.store(now_ms, std::memory_order_relaxed);
  flushes_.fetch_add(1, std::memory_order_relaxed);
  return result;
}

std::expected<FlushResult, std::string> Tsdb::flush_if_due(std::int64_t now_ms) {
  if (now_ms - last_flush_ms_.load(std::memory_order_relaxed) < options_.flush_interval_ms) return FlushResult{};
  return flush(now_ms);
}

TsdbStats Tsdb::stats() const {
  TsdbStats st;
  st.head = head_.stats();
  st.disk_bytes = db_->file_bytes();
  st.damaged_chunks_skipped = st.head.damaged_chunks_skipped;
  st.flushes = flushes_.load(std::memory_order_relaxed);
  st.flush_failures = flush_failures_.load(std::memory_order_relaxed);
  st.last_flush_ms = last_flush_ms_.load(std::memory_order_relaxed);
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
  for (auto& sc : head_.chunks_for(matchers, mint_ms, maxt_ms)) {
    SeriesSamples ss{std::move(sc.labels), {}};
    // Older samples than memory holds come from disk; both parts are in time order and disjoint.
    if (mint_ms < sc.memory_min_t) {
      auto read = db_->read(sc.id, mint_ms, std::min(maxt_ms, sc.memory_min_t - 1));
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
