#include "store/tsdb.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <fstream>
#include <iterator>

#include "store/series_set.h"
#include "store_test_support.h"

namespace gpuscope::store {
namespace {

using testing::kT0;
using testing::select_all;
using testing::reading_of;
using testing::series_labels;
using testing::series_value;
using testing::TempDir;

using testing::kMinute;

TsdbOptions options_in(const TempDir& dir) {
  TsdbOptions o;
  o.data_dir = dir.path();
  return o;
}

std::unique_ptr<Tsdb> open_tsdb(TsdbOptions o, std::int64_t now_ms) {
  auto t = Tsdb::open(std::move(o), now_ms);
  EXPECT_TRUE(t) << t.error();
  return t ? std::move(*t) : nullptr;
}

// Every sample of a testing:: series holds its expected value, at 1 s steps from `from` to `to`.
void expect_contiguous(const SeriesSamples& s, int k, std::int64_t from, std::int64_t to, std::int64_t step = 1000) {
  ASSERT_FALSE(s.samples.empty()) << s.labels.to_string();
  EXPECT_EQ(s.samples.front().t_ms, from) << s.labels.to_string();
  EXPECT_EQ(s.samples.back().t_ms, to) << s.labels.to_string();
  ASSERT_EQ(s.samples.size(), static_cast<std::size_t>((to - from) / step + 1)) << s.labels.to_string();
  for (std::size_t i = 0; i < s.samples.size(); ++i) {
    ASSERT_EQ(s.samples[i].t_ms, from + static_cast<std::int64_t>(i) * step);
    ASSERT_EQ(s.samples[i].value, series_value(k, s.samples[i].t_ms));
  }
}

int series_index(const SeriesSamples& s) { return std::stoi(std::string(s.labels.get("gpu"))); }

TEST(Tsdb, TheCheapStatsAgreeWithTheFullOnesOnWhatTheAgentExports) {
  TempDir dir;
  auto db = open_tsdb(options_in(dir), kT0);
  for (std::int64_t t = kT0; t < kT0 + 2 * kMinute; t += 1000) db->append_reading(t, reading_of(4, t));
  ASSERT_TRUE(db->flush(kT0 + 2 * kMinute));
  const TsdbStats full = db->stats();
  const TsdbStats cheap = db->stats(false);
  EXPECT_EQ(cheap.head.series, 4u);
  EXPECT_EQ(cheap.head.series, full.head.series);
  EXPECT_EQ(cheap.head.samples_appended, full.head.samples_appended);
  EXPECT_EQ(cheap.head.oldest_sample_ms, full.head.oldest_sample_ms);
  EXPECT_EQ(cheap.head.oldest_sample_ms, kT0);
  EXPECT_GT(cheap.disk_bytes, 0u);
  EXPECT_EQ(cheap.disk_bytes, full.disk_bytes) << "the size as of the last flush is the size now";
  EXPECT_EQ(cheap.flushes, full.flushes);
  EXPECT_EQ(cheap.head.chunks, 0u) << "no walk of the chunks";
  EXPECT_GT(full.head.chunks, 0u);
}

TEST(Tsdb, ReadsBackEverythingFlushedAfterARestart) {
  TempDir dir;
  const std::int64_t end = kT0 + 10 * kMinute;
  std::vector<SeriesSamples> before;
  {
    auto db = open_tsdb(options_in(dir), kT0);
    ASSERT_TRUE(db);
    for (std::int64_t t = kT0; t < end; t += 1000) ASSERT_EQ(db->append_reading(t, reading_of(3, t)).appended, 3u);
    auto f = db->flush(end);
    ASSERT_TRUE(f) << f.error();
    EXPECT_EQ(f->chunks_written, 15u);  // 600 samples: 5 chunks a series, the last one open
    before = select_all(*db);
    EXPECT_EQ(db->stats().flushes, 1u);
  }
  auto db = open_tsdb(options_in(dir), end);
  ASSERT_TRUE(db);
  auto after = select_all(*db);
  ASSERT_EQ(after.size(), 3u);
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].labels, before[i].labels);
    expect_contiguous(after[i], series_index(after[i]), kT0, end - 1000);
  }
  const auto st = db->stats();
  EXPECT_EQ(st.head.series, 3u);
  EXPECT_EQ(st.head.samples, 1800u);  // within the in-memory window: all loaded
  EXPECT_EQ(st.damaged_chunks_skipped, 0u);
  auto gpus = db->label_values("gpu", {}, kT0, end);
  ASSERT_TRUE(gpus);
  EXPECT_EQ(*gpus, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_TRUE(db->database()->check_integrity());
}

TEST(Tsdb, ContinuesLiveSeriesAfterARestartAndKeepsEndedOnesEnded) {
  TempDir dir;
  const auto a = series_labels(0), b = series_labels(1), c = series_labels(2);
  auto reading = [&](std::int64_t t, std::initializer_list<int> which) {
    std::vector<LabeledValue> r;
    for (int k : which) r.push_back({series_labels(k), series_value(k, t)});
    return r;
  };
  {
    auto db = open_tsdb(options_in(dir), kT0);
    for (int i = 0; i < 100; ++i) db->append_reading(kT0 + i * 1000, reading(kT0 + i * 1000, {0, 1, 2}));
    // c ends (a process exited) and gets its marker.
    for (int i = 100; i < 200; ++i) db->append_reading(kT0 + i * 1000, reading(kT0 + i * 1000, {0, 1}));
    ASSERT_TRUE(db->flush(kT0 + 200 * 1000));
  }
  {
    auto db = open_tsdb(options_in(dir), kT0 + 200 * 1000);
    // The first reading after the restart: a continues (not rejected as out of order), b is gone and
    // gets its marker, c had ended and gets none.
    auto r = db->append_reading(kT0 + 200 * 1000, reading(kT0 + 200 * 1000, {0}));
    EXPECT_EQ(r.appended, 1u);
    EXPECT_EQ(r.rejected, 0u);
    EXPECT_EQ(r.stale_markers, 1u);
    EXPECT_EQ(db->append_reading(kT0 + 201 * 1000, reading(kT0 + 201 * 1000, {0})).stale_markers, 0u);
    // What the database already holds cannot be appended again.
    auto old = db->append(a, kT0 + 150 * 1000, 1);
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error().reason, AppendError::Reason::kOutOfOrder);
    ASSERT_TRUE(db->flush(kT0 + 202 * 1000));
  }
  auto db = open_tsdb(options_in(dir), kT0 + 202 * 1000);
  auto all = select_all(*db);
  ASSERT_EQ(all.size(), 3u);
  for (const auto& s : all) {
    std::size_t markers = 0;
    for (const auto& smp : s.samples) markers += is_stale_marker(smp.value) ? 1 : 0;
    if (s.labels == a) {
      expect_contiguous(s, 0, kT0, kT0 + 201 * 1000);
      EXPECT_EQ(markers, 0u);
    } else if (s.labels == b) {
      EXPECT_EQ(markers, 1u);
      EXPECT_EQ(s.samples.size(), 201u);
      EXPECT_EQ(s.samples.back().t_ms, kT0 + 200 * 1000);
      EXPECT_TRUE(is_stale_marker(s.samples.back().value));
    } else {
      ASSERT_EQ(s.labels, c);
      EXPECT_EQ(markers, 1u);
      EXPECT_EQ(s.samples.size(), 101u);
      EXPECT_EQ(s.samples.back().t_ms, kT0 + 100 * 1000);
    }
  }
}

TEST(Tsdb, AppliesRetentionAndReadsWhatLeftMemoryFromDisk) {
  TempDir dir;
  auto o = options_in(dir);
  o.retention_ms = 60 * kMinute;
  o.in_memory_ms = 10 * kMinute;
  auto db = open_tsdb(o, kT0);
  const std::int64_t step = 10 * 1000, end = kT0 + 180 * kMinute;
  for (std::int64_t t = kT0; t <= end; t += step) {
    // Series 1 only lives for the first 30 minutes.
    db->append_reading(t, reading_of(t < kT0 + 30 * kMinute ? 2 : 1, t));
    ASSERT_TRUE(db->flush_if_due(t));
  }
  auto f = db->flush(end);
  ASSERT_TRUE(f) << f.error();

  // Series 1 is gone from disk and from the index; series 0 keeps the last hour, to the chunk.
  auto names = db->label_values("gpu", {}, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"0"});
  auto persisted = db->database()->series();
  ASSERT_TRUE(persisted);
  EXPECT_EQ(persisted->size(), 1u);
  auto all = select_all(*db);
  ASSERT_EQ(all.size(), 1u);
  const auto first = all[0].samples.front().t_ms;
  EXPECT_LE(first, end - 60 * kMinute);
  EXPECT_GT(first, end - 60 * kMinute - 120 * step);  // at most one chunk older than retention
  expect_contiguous(all[0], 0, first, end, step);

  // Memory holds only about the in-memory window; the rest of the hour is read from disk.
  EXPECT_LT(db->stats().head.samples, static_cast<std::size_t>(30 * kMinute / step));
  auto last_50m = db->select({}, end - 50 * kMinute, end);
  ASSERT_TRUE(last_50m);
  ASSERT_EQ(last_50m->size(), 1u);
  expect_contiguous((*last_50m)[0], 0, end - 50 * kMinute, end, step);
}

TEST(Tsdb, SelectEachStreamsSeriesAndStopsWithinAChunkWhenTheReaderSaysSo) {
  // What PromQL's sample limit and deadline rest on: a reader sees one series at a time, from disk and
  // memory alike, and can stop a read long before all of it is decoded.
  TempDir dir;
  auto o = options_in(dir);
  o.in_memory_ms = 10 * kMinute;
  auto db = open_tsdb(o, kT0);
  const std::int64_t step = 10 * 1000, end = kT0 + 180 * kMinute;
  for (std::int64_t t = kT0; t <= end; t += step) {
    db->append_reading(t, reading_of(2, t));
    ASSERT_TRUE(db->flush_if_due(t));
  }
  ASSERT_TRUE(db->flush(end));
  const std::size_t per_series = static_cast<std::size_t>((end - kT0) / step) + 1;

  std::vector<std::string> seen;
  std::size_t most_decoded = 0;
  Queryable::SeriesVisitor all{[&](std::size_t decoded) {
                                 most_decoded = std::max(most_decoded, decoded);
                                 return true;
                               },
                               [&](SeriesSamples&& s) {
                                 EXPECT_EQ(s.samples.size(), per_series);
                                 seen.emplace_back(s.labels.get("gpu"));
                                 return true;
                               }};
  ASSERT_TRUE(db->select_each({}, INT64_MIN, INT64_MAX, all));
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(most_decoded, per_series) << "progress counts one series' samples, not all";

  // Stopped at 200 samples: within one chunk (120 samples) past it, and no series is handed over.
  std::size_t stopped_at = 0;
  bool got_series = false;
  Queryable::SeriesVisitor capped{[&](std::size_t decoded) {
                                    stopped_at = decoded;
                                    return decoded <= 200;
                                  },
                                  [&](SeriesSamples&&) {
                                    got_series = true;
                                    return true;
                                  }};
  ASSERT_TRUE(db->select_each({}, INT64_MIN, INT64_MAX, capped));
  EXPECT_GT(stopped_at, 200u);
  EXPECT_LE(stopped_at, 200u + 120u);
  EXPECT_FALSE(got_series);

  // A reader that has had enough after the first series stops the select there.
  seen.clear();
  Queryable::SeriesVisitor first_only{{}, [&](SeriesSamples&& s) {
                                        seen.emplace_back(s.labels.get("gpu"));
                                        return false;
                                      }};
  ASSERT_TRUE(db->select_each({}, INT64_MIN, INT64_MAX, first_only));
  EXPECT_EQ(seen, std::vector<std::string>{"0"});
  // select() still reads it all.
  auto whole = db->select({}, INT64_MIN, INT64_MAX);
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->size(), 2u);
  EXPECT_EQ((*whole)[1].samples.size(), per_series);
}

// Runs a writer process that continues the series from `from`, flushing every 10 s of its virtual
// time, and kills it with SIGKILL after `flushes` flushes and `delay_us` more. Returns the time of the
// last flush it reported.
std::int64_t run_writer_and_kill_it(const TempDir& dir, int series, std::int64_t from, int flushes, int delay_us) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return 0;
  const pid_t child = fork();
  if (child == 0) {
    close(pipe_fds[0]);
    auto o = options_in(dir);
    o.flush_interval_ms = 10 * 1000;
    auto db = Tsdb::open(o, from);
    if (!db) _exit(2);
    for (std::int64_t t = from; t < from + 1000LL * 3600 * 24; t += 1000) {
      (*db)->append_reading(t, reading_of(series, t));
      auto f = (*db)->flush_if_due(t);
      if (!f) _exit(3);
      if (f->chunks_written > 0 && write(pipe_fds[1], &t, sizeof t) != sizeof t) _exit(4);
    }
    _exit(0);
  }
  close(pipe_fds[1]);
  std::int64_t flushed_at = 0;
  for (int i = 0; i < flushes; ++i) {
    if (read(pipe_fds[0], &flushed_at, sizeof flushed_at) != ssize_t{sizeof flushed_at}) break;
  }
  // Let it run into a later flush, then kill it wherever it is.
  usleep(static_cast<useconds_t>(delay_us));
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status)) << "the writer exited with " << WEXITSTATUS(status);
  while (read(pipe_fds[0], &flushed_at, sizeof flushed_at) == ssize_t{sizeof flushed_at}) {
  }
  close(pipe_fds[0]);
  return flushed_at;
}

// kill -9 at any moment, mid-flush included, several times over: what was flushed is there, nothing
// is corrupted, and each restart carries on from where the last flush left the series.
TEST(Tsdb, SurvivesKillNineDuringFlushes) {
  TempDir dir;
  constexpr int kSeries = 50;
  std::int64_t next = kT0;
  for (int delay_us : {0, 700, 3000}) {
    const std::int64_t flushed_at = run_writer_and_kill_it(dir, kSeries, next, 10, delay_us);
    ASSERT_GE(flushed_at, next);
    auto db = open_tsdb(options_in(dir), flushed_at + 1000);
    ASSERT_TRUE(db);
    EXPECT_TRUE(db->database()->check_integrity());
    auto all = select_all(*db);
    ASSERT_EQ(all.size(), static_cast<std::size_t>(kSeries));
    for (const auto& s : all) {
      // At least everything up to the last flush reported; a flush under way may have committed more.
      ASSERT_GE(s.samples.back().t_ms, flushed_at);
      expect_contiguous(s, series_index(s), kT0, s.samples.back().t_ms);
    }
    EXPECT_EQ(db->stats().damaged_chunks_skipped, 0u);
    next = all[0].samples.back().t_ms + 1000;
    // The agent carries on from there (this sample is not flushed: the next writer appends it again).
    EXPECT_EQ(db->append_reading(next, reading_of(kSeries, next)).rejected, 0u);
  }
}

// The files as a crash leaves them (copied while the store is open): the last flush and nothing after.
TEST(Tsdb, FilesLeftOpenHoldExactlyWhatWasFlushed) {
  TempDir dir, copy;
  auto db = open_tsdb(options_in(dir), kT0);
  for (std::int64_t t = kT0; t < kT0 + 5 * kMinute; t += 1000) db->append_reading(t, reading_of(4, t));
  ASSERT_TRUE(db->flush(kT0 + 5 * kMinute));
  for (std::int64_t t = kT0 + 5 * kMinute; t < kT0 + 7 * kMinute; t += 1000) db->append_reading(t, reading_of(4, t));
  for (const char* suffix : {"", "-wal"}) {
    const std::string name = std::string(kChunkDatabaseFileName) + suffix;
    std::filesystem::copy_file(dir.path() / name, copy.path() / name);
  }
  auto crashed = open_tsdb(options_in(copy), kT0 + 10 * kMinute);
  ASSERT_TRUE(crashed);
  auto all = select_all(*crashed);
  ASSERT_EQ(all.size(), 4u);
  for (const auto& s : all) expect_contiguous(s, series_index(s), kT0, kT0 + 5 * kMinute - 1000);
}

// Flips one byte of the first chunk of series 1 in the database file, as bad disk sectors would.
void damage_first_chunk_of_series_1(const std::filesystem::path& file) {
  XorChunk expected;
  for (int i = 0; i < 120; ++i) expected.append(kT0 + i * 1000, series_value(1, kT0 + i * 1000));
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string pattern(expected.data().begin(), expected.data().end());
  const auto at = bytes.find(pattern);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(pattern, at + 1), std::string::npos);
  const auto target = at + pattern.size() / 2;
  f.seekp(static_cast<std::streamoff>(target));
  f.put(static_cast<char>(bytes[target] ^ 0x5a));
}

TEST(Tsdb, SkipsADamagedChunkWithAWarningAndACounter) {
  TempDir dir;
  const std::int64_t end = kT0 + 5 * kMinute;
  {
    auto db = open_tsdb(options_in(dir), kT0);
    for (std::int64_t t = kT0; t < end; t += 1000) db->append_reading(t, reading_of(3, t));
    ASSERT_TRUE(db->flush(end));
  }
  damage_first_chunk_of_series_1(dir.path() / kChunkDatabaseFileName);

  for (const std::int64_t in_memory : {kMinute, 3 * 60 * kMinute}) {
    // A short window reads the damaged chunk at query time; a long one meets it while loading.
    std::vector<std::string> warnings;
    auto o = options_in(dir);
    o.in_memory_ms = in_memory;
    o.warn = [&](std::string_view w) { warnings.emplace_back(w); };
    auto db = open_tsdb(o, end);
    ASSERT_TRUE(db);
    for (int query = 0; query < 2; ++query) {
      auto all = select_all(*db);
      ASSERT_EQ(all.size(), 3u);
      for (const auto& s : all) {
        const int k = series_index(s);
        expect_contiguous(s, k, k == 1 ? kT0 + 120 * 1000 : kT0, end - 1000);
      }
    }
    EXPECT_EQ(db->stats().damaged_chunks_skipped, 1u) << "window " << in_memory;  // once per chunk
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("CRC32 mismatch"), std::string::npos) << warnings[0];
  }
}

TEST(Tsdb, SkipsAChunkThatDoesNotDecode) {
  TempDir dir;
  const Labels l = series_labels(0);
  XorChunk good;
  for (int i = 100; i < 110; ++i) good.append(kT0 + i * 1000, series_value(0, kT0 + i * 1000));
  {
    auto raw = ChunkDatabase::open(dir.path() / kChunkDatabaseFileName);
    ASSERT_TRUE(raw);
    // Bytes that pass the CRC (it is computed over them) but are no XorChunk.
    const std::vector<std::uint8_t> garbage(40, 0xff);
    const ChunkToWrite w[] = {{1, &l, kT0, kT0 + 99000, 100, garbage},
                              {1, &l, good.first_time(), good.last_time(), 10, good.data()}};
    ASSERT_TRUE((*raw)->write(w));
  }
  std::vector<std::string> warnings;
  auto o = options_in(dir);
  o.warn = [&](std::string_view w) { warnings.emplace_back(w); };
  auto db = open_tsdb(o, kT0 + 110 * 1000);
  ASSERT_TRUE(db);
  EXPECT_EQ(db->stats().damaged_chunks_skipped, 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("damaged chunk"), std::string::npos) << warnings[0];
  auto all = select_all(*db);
  ASSERT_EQ(all.size(), 1u);
  expect_contiguous(all[0], 0, kT0 + 100 * 1000, kT0 + 109 * 1000);
  EXPECT_TRUE(db->append(l, kT0 + 110 * 1000, 1));
}

TEST(Tsdb, RefusesADataDirectoryItCannotCreate) {
  TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  TsdbOptions o;
  o.data_dir = dir.path() / "file" / "data";
  auto db = Tsdb::open(o, kT0);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().find("data directory"), std::string::npos) << db.error();
}


// A reader (eval --data-dir) never creates a store: no directory, no database file, no schema.
TEST(Tsdb, ReadOnlyCreatesNothingWhereThereIsNoStore) {
  TempDir dir;
  TsdbOptions o = options_in(dir);
  o.read_only = true;
  o.data_dir = dir.path() / "absent";
  EXPECT_FALSE(Tsdb::open(o, kT0));
  EXPECT_FALSE(std::filesystem::exists(o.data_dir));
  o.data_dir = dir.path();
  auto db = Tsdb::open(o, kT0);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().find("unable to open database file"), std::string::npos) << db.error();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  // An empty file is not a store either, and stays empty.
  std::ofstream(dir.path() / kChunkDatabaseFileName).flush();
  db = Tsdb::open(o, kT0);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().find("holds no gpuscope history"), std::string::npos) << db.error();
  EXPECT_EQ(std::filesystem::file_size(dir.path() / kChunkDatabaseFileName), 0u);
}

// It reads what the writer flushed, and refuses to write: the agent's file is the agent's.
TEST(Tsdb, ReadOnlyReadsAStoreAndNeverWritesIt) {
  TempDir dir;
  const std::int64_t end = kT0 + 2 * kMinute;
  {
    auto writer = open_tsdb(options_in(dir), kT0);
    ASSERT_TRUE(writer);
    for (std::int64_t t = kT0; t < end; t += 1000) writer->append_reading(t, reading_of(2, t));
    ASSERT_TRUE(writer->flush(end));
  }
  const auto file = dir.path() / kChunkDatabaseFileName;
  const auto size = std::filesystem::file_size(file);
  const auto written = std::filesystem::last_write_time(file);
  TsdbOptions o = options_in(dir);
  o.read_only = true;
  o.retention_ms = 1;  // would delete everything, were it allowed to write
  auto reader = open_tsdb(o, end + 10 * kMinute);
  ASSERT_TRUE(reader);
  auto all = select_all(*reader);
  ASSERT_EQ(all.size(), 2u);
  for (const auto& s : all) expect_contiguous(s, series_index(s), kT0, end - 1000);
  auto flushed = reader->flush(end + 10 * kMinute);
  ASSERT_FALSE(flushed);
  EXPECT_NE(flushed.error().find("read-only"), std::string::npos) << flushed.error();
  reader.reset();
  EXPECT_EQ(std::filesystem::file_size(file), size);
  EXPECT_EQ(std::filesystem::last_write_time(file), written);
}

}  // namespace
}  // namespace gpuscope::store
