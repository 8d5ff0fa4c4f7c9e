// Head: the store's in-memory part, each series' recent samples in compressed XorChunks (sealed ones
// plus one open chunk that takes appends). One writer (the sampler) and any number of readers (queries).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/queryable.h"
#include "store/xor_chunk.h"

namespace gpuscope::store {

// A chunk is sealed at 120 samples (2 min at 1 s) or when it would span more than 2 h, as Prometheus
// cuts them. The span bound also lets persisted-chunk lookups use an index range (see ChunkDatabase).
inline constexpr std::size_t kChunkMaxSamples = 120;
inline constexpr std::int64_t kChunkMaxSpanMs = 2 * 3600 * 1000;

struct AppendError {
  enum class Reason { kOutOfOrder, kDuplicate, kNoLabels };
  Reason reason;
  std::string message;
};

// One series' value in a reading.
struct LabeledValue {
  Labels labels;
  double value;
};

struct ReadingResult {
  std::size_t appended = 0;
  std::size_t rejected = 0;       // out of order or duplicate (counted in HeadStats too)
  std::size_t stale_markers = 0;  // series of the previous reading absent from this one
  std::string first_error;        // the first rejection's message, empty when none
};

struct HeadStats {
  std::size_t series = 0;
  std::size_t samples = 0;      // in memory
  std::size_t chunks = 0;       // in memory, sealed and open
  std::size_t chunk_bytes = 0;  // compressed sample bytes in memory
  std::size_t label_bytes = 0;  // the series' labels, heap included
  double bytes_per_sample = 0;  // chunk_bytes / samples
  std::uint64_t samples_appended = 0;  // since start, staleness markers included
  std::uint64_t out_of_order_rejected = 0;
  std::uint64_t duplicates_rejected = 0;
  std::uint64_t stale_markers_written = 0;
  std::uint64_t damaged_chunks_skipped = 0;  // in-memory chunks that failed to decode (a bug if ever > 0)
  std::uint64_t unpersisted_samples_dropped = 0;  // never written to disk, dropped by drop_unpersisted_before
  std::optional<std::int64_t> oldest_sample_ms;   // the oldest sample kept anywhere (memory or disk)
};

// One series' chunks as a reader sees them: immutable copies that stay valid whatever the writer does.
struct SeriesChunks {
  std::uint64_t id;
  Labels labels;
  // Memory holds every sample of this series at or after this time; older ones are only persisted.
  std::int64_t memory_min_t;
  std::vector<std::shared_ptr<const XorChunk>> chunks;  // by time
};

// A chunk not yet (fully) in the database, as flush collects it.
struct UnpersistedChunk {
  std::uint64_t series_id;
  std::shared_ptr<const Labels> labels;  // one copy per series, shared by its chunks
  std::shared_ptr<const XorChunk> chunk;
  bool sealed;  // false: a snapshot of the open chunk, rewritten at every flush while it grows
};

// A persisted series handed back to the head at startup.
struct RestoredSeries {
  std::uint64_t id;
  Labels labels;
  std::int64_t first_t;  // its oldest persisted sample
  std::int64_t last_t;   // its newest persisted sample
  // Its most recent persisted chunks (those the in-memory window keeps), decoded and verified, by time.
  std::vector<std::vector<Sample>> recent_chunks;
};

class Head : public Queryable {
 public:
  Head() = default;
  Head(const Head&) = delete;
  Head& operator=(const Head&) = delete;

  // Appends one sample. Rejected (and counted) when t_ms is not after the series' last sample.
  std::expected<void, AppendError> append(const Labels& labels, std::int64_t t_ms, double value);

  // Appends one reading: every series present at t_ms. A series present in the previous reading and
  // absent from this one gets a staleness marker at t_ms, once (Prometheus's rule when a target's
  // series disappears: a GPU lost, a process exited); when it comes back it simply continues.
  ReadingResult append_reading(std::int64_t t_ms, std::span<const LabeledValue> values);

  // Startup only, before any append: series and recent chunks loaded from the database. The last chunk
  // of a series becomes its open chunk again (see head.cc); a series whose newest sample is recent and
  // not a staleness marker counts as present in the "previous reading", so if it is gone after the
  // restart it still gets its marker.
  void restore(std::vector<RestoredSeries> series);

  // Flush support: every chunk whose samples are not all in the database yet (by series), then, once
  // they are, marking them so (the head may then drop them from memory). Both take the lock one series
  // at a time: a backlog of hours (a disk that failed) never keeps the sampler's append waiting for
  // more than one series' worth of work.
  std::vector<UnpersistedChunk> unpersisted_chunks() const;
  void mark_persisted(std::span<const UnpersistedChunk> chunks);
  // The database was lost (its file deleted, a new one started): every chunk memory holds is
  // unpersisted again, each series' history now starts at its oldest chunk in memory, and series with
  // nothing in memory are forgotten. Returns the samples memory holds (to be rewritten).
  std::size_t forget_persisted();
  // While flushes fail: drops chunks (persisted or not) whose samples are all before min_t, so memory
  // stays bounded however long the disk is gone. Returns the unpersisted samples dropped (also counted
  // in HeadStats).
  std::size_t drop_unpersisted_before(std::int64_t min_t);
  // Drops from memory persisted chunks whose samples are all before min_t (a series keeps its identity
  // and last timestamp). Unpersisted chunks always stay.
  void drop_persisted_before(std::int64_t min_t);
  // Forgets series whose newest sample is before min_t and that hold nothing unpersisted (retention).
  std::size_t forget_series_before(std::int64_t min_t);

  // The chunks of matching series that overlap [mint_ms, maxt_ms], sorted by labels. Also series with
  // no chunk in memory in that range but persisted samples before memory_min_t there.
  std::vector<SeriesChunks> chunks_for(std::span<const LabelMatcher> matchers, std::int64_t mint_ms,
                                       std::int64_t maxt_ms) const;

  // With `count_chunks` false the in-memory chunks are not walked (samples, chunks, bytes stay 0): what
  // the agent exports at every reading, where a walk of every chunk would cost more than the rest.
  HeadStats stats(bool count_chunks = true) const;
  void count_damaged_chunk() const { damaged_chunks_skipped_.fetch_add(1, std::memory_order_relaxed); }

  // Queryable over what is in memory only (Tsdb adds the persisted history).
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
  struct SealedChunk {
    std::shared_ptr<const XorChunk> chunk;
    bool persisted;
  };
  struct Series {
    std::uint64_t id;
    Labels labels;
    std::vector<SealedChunk> sealed;  // by time
    XorChunk open;
    std::size_t open_persisted_samples = 0;  // how many of `open`'s samples the database has
    std::int64_t first_t = 0;                // oldest sample kept anywhere (memory or database)
    std::int64_t last_t = 0;                 // valid when has_samples
    bool has_samples = false;
    bool ended = false;             // the last sample is a staleness marker
    std::uint64_t last_reading = 0;  // number of the last reading it was in
    std::size_t label_bytes = 0;
    std::int64_t memory_min_t() const;
  };
  // The series index is keyed by the labels each Series holds, so labels are stored once.
  struct SeriesLabelsHash {
    using is_transparent = void;
    std::size_t operator()(const Series* s) const { return s->labels.hash(); }
    std::size_t operator()(const Labels& l) const { return l.hash(); }
  };
  struct SeriesLabelsEqual {
    using is_transparent = void;
    bool operator()(const Series* a, const Series* b) const { return a->labels == b->labels; }
    bool operator()(const Labels& a, const Series* b) const { return a == b->labels; }
    bool operator()(const Series* a, const Labels& b) const { return a->labels == b; }
  };

  Series& series_for(const Labels& labels);  // creates it; writer lock held
  std::expected<void, AppendError> append_locked(Series& s, std::int64_t t_ms, double value);
  void forget(Series& s);

  mutable std::shared_mutex mutex_;
  mutable std::atomic<int> appends_waiting_{0};  // appends asking for mutex_ (see let_appends_in)
  std::unordered_map<std::uint64_t, std::unique_ptr<Series>> by_id_;
  std::unordered_set<Series*, SeriesLabelsHash, SeriesLabelsEqual> by_labels_;
  std::uint64_t next_id_ = 1;
  std::uint64_t reading_ = 0;                  // number of the last reading
  // The series of the last reading, in its order: readings list the same series in the same order, so
  // the series at the same position is tried before the index (a label compare instead of a hash).
  std::vector<Series*> previous_reading_;
  // The ids of every series, taken under the lock, so a walk can then lock one series at a time.
  std::vector<std::uint64_t> series_ids() const;
  // A flush's walk: `visit(id, Series&)` for each series still there, under a lock of type Lock
  // (std::shared_lock to read, std::unique_lock to change it) held for that series alone, appends let
  // in between two series. Const: the head's maps do not change; a visitor under the unique lock may
  // change the series.
  template <class Lock, class Visit>
  void each_series_alone(Visit&& visit) const;
  // A flush's walk calls this before locking its next series. The lock (glibc's rwlock under
  // std::shared_mutex) prefers readers, and a walk that unlocks and relocks at once would take it
  // again before a woken append does, series after series: the append would wait for the whole walk.
  void let_appends_in() const;

  std::uint64_t appended_ = 0, out_of_order_ = 0, duplicates_ = 0, stale_markers_ = 0;  // writer lock
  std::uint64_t unpersisted_dropped_ = 0;                                               // writer lock
  mutable std::atomic<std::uint64_t> damaged_chunks_skipped_{0};
};

// Decodes the samples of `chunk` within [mint_ms, maxt_ms] onto `out`, keeping times strictly
// increasing (a sample not after out's last is dropped). An error when the data is damaged.
std::expected<void, std::string> decode_chunk(std::span<const std::uint8_t> data, std::size_t samples,
                                              std::int64_t mint_ms, std::int64_t maxt_ms, std::vector<Sample>& out);

}  // namespace gpuscope::store
