#include "store/head.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "store/series_set.h"

namespace gpuscope::store {
namespace {

std::size_t heap_bytes(const std::string& s) {
  // Short strings live inside the std::string itself (small-string optimisation).
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

std::size_t labels_bytes(const Labels& labels) {
  std::size_t bytes = sizeof(Label) * labels.size();
  for (const auto& l : labels) bytes += heap_bytes(l.name) + heap_bytes(l.value);
  return bytes;
}

bool overlaps(const XorChunk& c, std::int64_t mint, std::int64_t maxt) {
  return c.samples() > 0 && c.first_time() <= maxt && c.last_time() >= mint;
}

}  // namespace

std::expected<void, std::string> decode_chunk(std::span<const std::uint8_t> data, std::size_t samples,
                                              std::int64_t mint_ms, std::int64_t maxt_ms, std::vector<Sample>& out) {
  XorChunk::Iterator it(data, samples);
  while (it.next()) {
    const std::int64_t t = it.time();
    if (t > maxt_ms) return {};
    if (t < mint_ms || (!out.empty() && t <= out.back().t_ms)) continue;
    out.push_back({t, it.value()});
  }
  if (!it.error().empty()) return std::unexpected(it.error());
  return {};
}

std::int64_t Head::Series::memory_min_t() const {
  if (!sealed.empty()) return sealed.front().chunk->first_time();
  if (open.samples() > 0) return open.first_time();
  return has_samples ? last_t + 1 : first_t;
}

Head::Series& Head::series_for(const Labels& labels) {
  if (auto it = by_labels_.find(labels); it != by_labels_.end()) return **it;
  auto s = std::make_unique<Series>();
  s->id = next_id_++;
  s->labels = labels;
  s->label_bytes = labels_bytes(s->labels);
  Series& ref = *s;
  by_labels_.insert(&ref);
  by_id_.emplace(ref.id, std::move(s));
  return ref;
}

std::expected<void, AppendError> Head::append_locked(Series& s, std::int64_t t_ms, double value) {
  if (s.has_samples && t_ms <= s.last_t) {
    if (t_ms == s.last_t) {
      ++duplicates_;
      return std::unexpected(AppendError{AppendError::Reason::kDuplicate,
                                         fmt::format("duplicate sample for timestamp {} of {}", t_ms,
                                                     s.labels.to_string())});
    }
    ++out_of_order_;
    return std::unexpected(AppendError{
        AppendError::Reason::kOutOfOrder,
        fmt::format("out of order sample at {} for {}: its last sample is at {}", t_ms, s.labels.to_string(), s.last_t)});
  }
  if (s.open.samples() >= kChunkMaxSamples ||
      (s.open.samples() > 0 && t_ms - s.open.first_time() > kChunkMaxSpanMs)) {
    // A copy, not a move: the copy's buffer is exactly as large as its data.
    const bool persisted = s.open_persisted_samples == s.open.samples();
    s.sealed.push_back({std::make_shared<const XorChunk>(s.open), persisted});
    s.open = XorChunk();
    s.open_persisted_samples = 0;
  }
  s.open.append(t_ms, value);
  ++appended_;
  if (!s.has_samples) s.first_t = t_ms;
  s.has_samples = true;
  s.last_t = t_ms;
  s.ended = is_stale_marker(value);
  return {};
}

namespace {

// Counts an append waiting for (or holding) the head's lock, so flush walks step aside.
class AppendTicket {
 public:
  explicit AppendTicket(std::atomic<int>& waiting) : waiting_(waiting) { waiting_.fetch_add(1, std::memory_order_relaxed); }
  ~AppendTicket() { waiting_.fetch_sub(1, std::memory_order_relaxed); }
  AppendTicket(const AppendTicket&) = delete;
  AppendTicket& operator=(const AppendTicket&) = delete;

 private:
  std::atomic<int>& waiting_;
};

}  // namespace

// An append takes tens of microseconds; this many yields is well past one, and bounds the wait where
// appends come back to back (a backfill, a benchmark), so a flush is slowed there but never starved.
constexpr int kMaxYieldsToAppends = 1000;

void Head::let_appends_in() const {
  for (int i = 0; i < kMaxYieldsToAppends && appends_waiting_.load(std::memory_order_relaxed) > 0; ++i) {
    std::this_thread::yield();
  }
}

std::expected<void, AppendError> Head::append(const Labels& labels, std::int64_t t_ms, double value) {
  if (labels.empty()) return std::unexpected(AppendError{AppendError::Reason::kNoLabels, "a series needs labels"});
  AppendTicket ticket(appends_waiting_);
  std::unique_lock lock(mutex_);
  return append_locked(series_for(labels), t_ms, value);
}

ReadingResult Head::append_reading(std::int64_t t_ms, std::span<const LabeledValue> values) {
  ReadingResult result;
  std::vector<Series*> present;
  present.reserve(values.size());
  AppendTicket ticket(appends_waiting_);
  std::unique_lock lock(mutex_);
  const std::uint64_t reading = ++reading_;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto& v = values[i];
    if (v.labels.empty()) {
      ++result.rejected;
      continue;
    }
    Series* s = present.size() < previous_reading_.size() ? previous_reading_[present.size()] : nullptr;
    if (s == nullptr || s->labels != v.labels) s = &series_for(v.labels);
    if (s->last_reading == reading) continue;  // the same series twice in one reading: the first wins
    s->last_reading = reading;
    present.push_back(s);
    if (auto ok = append_locked(*s, t_ms, v.value); ok) {
      ++result.appended;
    } else {
      if (result.rejected++ == 0) result.first_error = ok.error().message;
    }
  }
  for (Series* s : previous_reading_) {
    if (s->last_reading == reading || s->ended) continue;
    if (append_locked(*s, t_ms, stale_marker())) {
      ++result.stale_markers;
      ++stale_markers_;
    }
  }
  previous_reading_ = std::move(present);
  return result;
}

void Head::restore(std::vector<RestoredSeries> restored) {
  std::unique_lock lock(mutex_);
  std::int64_t newest = 0;
  for (const auto& r : restored) newest = std::max(newest, r.last_t);
  for (auto& r : restored) {
    auto s = std::make_unique<Series>();
    s->id = r.id;
    s->labels = std::move(r.labels);
    s->label_bytes = labels_bytes(s->labels);
    s->first_t = r.first_t;
    s->last_t = r.last_t;
    s->has_samples = true;
    // Chunks are re-encoded from their decoded samples (byte for byte the same data), because the
    // encoder's state is not persisted. The last one goes back to being the open chunk rather than
    // staying sealed next to a fresh one: a restart then costs no extra chunk header, and the
    // database row keyed by (series, first time) is simply rewritten at the next flush.
    for (std::size_t i = 0; i < r.recent_chunks.size(); ++i) {
      XorChunk chunk;
      for (const auto& sample : r.recent_chunks[i]) chunk.append(sample.t_ms, sample.value);
      if (chunk.samples() == 0) continue;
      if (i + 1 == r.recent_chunks.size()) {
        s->open_persisted_samples = chunk.samples();
        s->open = std::move(chunk);
        s->last_t = std::max(s->last_t, s->open.last_time());
        s->ended = is_stale_marker(r.recent_chunks[i].back().value);
      } else {
        s->sealed.push_back({std::make_shared<const XorChunk>(std::move(chunk)), true});
      }
    }
    // A series whose last chunk fell out of the in-memory window ended long ago as far as staleness
    // goes (its last sample is older than any lookback), so it gets no marker after the restart.
    if (r.recent_chunks.empty()) s->ended = true;
    next_id_ = std::max(next_id_, s->id + 1);
    Series& ref = *s;
    by_labels_.insert(&ref);
    by_id_.emplace(ref.id, std::move(s));
    // Series stamped at the newest time were in the last reading before the restart.
    if (!ref.ended && ref.last_t == newest) previous_reading_.push_back(&ref);
  }
}

std::vector<std::uint64_t> Head::series_ids() const {
  std::vector<std::uint64_t> ids;
  std::shared_lock lock(mutex_);
  ids.reserve(by_id_.size());
  for (const auto& [id, s] : by_id_) ids.push_back(id);
  return ids;
}

template <class Lock, class Visit>
void Head::each_series_alone(Visit&& visit) const {
  for (const std::uint64_t id : series_ids()) {
    let_appends_in();
    Lock lock(mutex_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) continue;
    visit(id, *it->second);
  }
}

std::vector<UnpersistedChunk> Head::unpersisted_chunks() const {
  std::vector<UnpersistedChunk> out;
  each_series_alone<std::shared_lock<std::shared_mutex>>([&](std::uint64_t id, const Series& s) {
    std::shared_ptr<const Labels> labels;
    auto add = [&](std::shared_ptr<const XorChunk> chunk, bool sealed) {
      if (!labels) labels = std::make_shared<const Labels>(s.labels);
      out.push_back({id, labels, std::move(chunk), sealed});
    };
    for (const auto& c : s.sealed) {
      if (!c.persisted) add(c.chunk, true);
    }
    if (s.open.samples() > s.open_persisted_samples) add(std::make_shared<const XorChunk>(s.open), false);
  });
  return out;
}

void Head::mark_persisted(std::span<const UnpersistedChunk> chunks) {
  // unpersisted_chunks() lists a series' chunks together: one lock and one pass per series.
  std::unordered_set<const XorChunk*> sealed_written;
  for (std::size_t begin = 0; begin < chunks.size();) {
    const std::uint64_t id = chunks[begin].series_id;
    std::size_t end = begin;
    while (end < chunks.size() && chunks[end].series_id == id) ++end;
    let_appends_in();
    std::unique_lock lock(mutex_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) {
      begin = end;
      continue;
    }
    Series& s = *it->second;
    sealed_written.clear();
    for (std::size_t i = begin; i < end; ++i) {
      const auto& u = chunks[i];
      if (u.sealed) {
        sealed_written.insert(u.chunk.get());
        continue;
      }
      // The open chunk may have grown since the snapshot, or been sealed: what the snapshot held is in.
      if (s.open.samples() > 0 && s.open.first_time() == u.chunk->first_time()) {
        s.open_persisted_samples = std::max(s.open_persisted_samples, u.chunk->samples());
      } else {
        for (auto& c : s.sealed) {
          if (c.chunk->first_time() == u.chunk->first_time() && c.chunk->samples() == u.chunk->samples()) {
            c.persisted = true;
          }
        }
      }
    }
    if (!sealed_written.empty()) {
      for (auto& c : s.sealed) {
        if (sealed_written.contains(c.chunk.get())) c.persisted = true;
      }
    }
    begin = end;
  }
}

void Head::drop_persisted_before(std::int64_t min_t) {
  each_series_alone<std::unique_lock<std::shared_mutex>>([&](std::uint64_t, Series& s) {
    std::erase_if(s.sealed, [&](const SealedChunk& c) { return c.persisted && c.chunk->last_time() < min_t; });
    // An idle series' open chunk (an ended series) leaves memory too once it is all in the database;
    // the next sample, if any, starts a new chunk.
    if (s.sealed.empty() && s.open.samples() > 0 && s.open.last_time() < min_t &&
        s.open_persisted_samples == s.open.samples()) {
      s.open = XorChunk();
      s.open_persisted_samples = 0;
    }
  });
}

std::size_t Head::drop_unpersisted_before(std::int64_t min_t) {
  std::size_t dropped = 0;
  each_series_alone<std::unique_lock<std::shared_mutex>>([&](std::uint64_t, Series& s) {
    // Sealed chunks are in time order: the old ones are a prefix.
    std::size_t n = 0;
    while (n < s.sealed.size() && s.sealed[n].chunk->last_time() < min_t) {
      if (!s.sealed[n].persisted) dropped += s.sealed[n].chunk->samples();
      ++n;
    }
    s.sealed.erase(s.sealed.begin(), s.sealed.begin() + static_cast<std::ptrdiff_t>(n));
    if (s.sealed.empty() && s.open.samples() > 0 && s.open.last_time() < min_t) {
      dropped += s.open.samples() - s.open_persisted_samples;
      s.open = XorChunk();
      s.open_persisted_samples = 0;
    }
  });
  std::unique_lock lock(mutex_);
  unpersisted_dropped_ += dropped;
  return dropped;
}

std::size_t Head::forget_persisted() {
  std::size_t samples = 0;
  std::unique_lock lock(mutex_);
  std::vector<Series*> empty;
  for (auto& [id, s] : by_id_) {
    for (auto& c : s->sealed) {
      c.persisted = false;
      samples += c.chunk->samples();
    }
    s->open_persisted_samples = 0;
    samples += s->open.samples();
    if (s->sealed.empty() && s->open.samples() == 0) {
      empty.push_back(s.get());
    } else {
      s->first_t = s->memory_min_t();
    }
  }
  for (Series* s : empty) forget(*s);
  return samples;
}

void Head::forget(Series& s) {
  by_labels_.erase(&s);
  std::erase(previous_reading_, &s);
  by_id_.erase(s.id);
}

std::size_t Head::forget_series_before(std::int64_t min_t) {
  std::unique_lock lock(mutex_);
  std::vector<Series*> old;
  for (auto& [id, s] : by_id_) {
    if (!s->has_samples || s->last_t >= min_t) continue;  // the cheap test first: most series are live
    const bool all_persisted = s->open_persisted_samples == s->open.samples() &&
                               std::all_of(s->sealed.begin(), s->sealed.end(), [](const SealedChunk& c) { return c.persisted; });
    if (all_persisted) old.push_back(s.get());
  }
  for (Series* s : old) forget(*s);
  return old.size();
}

std::vector<SeriesChunks> Head::chunks_for(std::span<const LabelMatcher> matchers, std::int64_t mint_ms,
                                           std::int64_t maxt_ms) const {
  std::vector<SeriesChunks> out;
  {
    std::shared_lock lock(mutex_);
    for (const auto& [id, s] : by_id_) {
      if (!s->has_samples || s->first_t > maxt_ms || s->last_t < mint_ms) continue;
      if (!matches_all(s->labels, matchers)) continue;
      SeriesChunks sc{id, s->labels, s->memory_min_t(), {}};
      for (const auto& c : s->sealed) {
        if (overlaps(*c.chunk, mint_ms, maxt_ms)) sc.chunks.push_back(c.chunk);
      }
      // Readers get their own copy of the open chunk: the writer keeps appending to the original.
      if (overlaps(s->open, mint_ms, maxt_ms)) sc.chunks.push_back(std::make_shared<const XorChunk>(s->open));
      out.push_back(std::move(sc));
    }
  }
  std::sort(out.begin(), out.end(), [](const SeriesChunks& a, const SeriesChunks& b) { return a.labels < b.labels; });
  return out;
}

HeadStats Head::stats(bool count_chunks) const {
  HeadStats st;
  std::shared_lock lock(mutex_);
  st.series = by_id_.size();
  for (const auto& [id, s] : by_id_) {
    if (s->has_samples && (!st.oldest_sample_ms || s->first_t < *st.oldest_sample_ms)) st.oldest_sample_ms = s->first_t;
    if (!count_chunks) continue;
    for (const auto& c : s->sealed) {
      st.samples += c.chunk->samples();
      st.chunk_bytes += c.chunk->bytes();
      ++st.chunks;
    }
    if (s->open.samples() > 0) {
      st.samples += s->open.samples();
      st.chunk_bytes += s->open.bytes();
      ++st.chunks;
    }
    st.label_bytes += s->label_bytes;
  }
  st.bytes_per_sample = st.samples > 0 ? static_cast<double>(st.chunk_bytes) / static_cast<double>(st.samples) : 0;
  st.samples_appended = appended_;
  st.unpersisted_samples_dropped = unpersisted_dropped_;
  st.out_of_order_rejected = out_of_order_;
  st.duplicates_rejected = duplicates_;
  st.stale_markers_written = stale_markers_;
  st.damaged_chunks_skipped = damaged_chunks_skipped_.load(std::memory_order_relaxed);
  return st;
}

std::expected<std::vector<SeriesSamples>, std::string> Head::select(std::span<const LabelMatcher> matchers,
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

std::expected<void, std::string> Head::select_each(std::span<const LabelMatcher> matchers, std::int64_t mint_ms,
                                                   std::int64_t maxt_ms, const SeriesVisitor& visitor) const {
  for (auto& sc : chunks_for(matchers, mint_ms, maxt_ms)) {
    SeriesSamples ss{std::move(sc.labels), {}};
    for (const auto& c : sc.chunks) {
      if (!decode_chunk(c->data(), c->samples(), mint_ms, maxt_ms, ss.samples)) count_damaged_chunk();
      // Asked after each chunk: a reader over its limits stops within one chunk's samples.
      if (visitor.progress && !visitor.progress(ss.samples.size())) return {};
    }
    if (!ss.samples.empty() && !visitor.each(std::move(ss))) return {};
  }
  return {};
}

std::expected<std::vector<std::string>, std::string> Head::label_names(std::span<const LabelMatcher> matchers,
                                                                       std::int64_t mint_ms,
                                                                       std::int64_t maxt_ms) const {
  std::set<std::string> names;
  std::shared_lock lock(mutex_);
  for (const auto& [id, s] : by_id_) {
    if (!s->has_samples || s->first_t > maxt_ms || s->last_t < mint_ms || !matches_all(s->labels, matchers)) continue;
    for (const auto& l : s->labels) names.insert(l.name);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::expected<std::vector<std::string>, std::string> Head::label_values(const std::string& name,
                                                                        std::span<const LabelMatcher> matchers,
                                                                        std::int64_t mint_ms,
                                                                        std::int64_t maxt_ms) const {
  std::set<std::string> values;
  std::shared_lock lock(mutex_);
  for (const auto& [id, s] : by_id_) {
    if (!s->has_samples || s->first_t > maxt_ms || s->last_t < mint_ms || !matches_all(s->labels, matchers)) continue;
    if (auto v = s->labels.get(name); !v.empty()) values.insert(std::string(v));
  }
  return std::vector<std::string>(values.begin(), values.end());
}

}  // namespace gpuscope::store
