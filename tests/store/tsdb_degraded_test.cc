// The store when the disk misbehaves: full (a real tmpfs filled up), read-only, the data directory
// deleted under the running agent, a damaged database file at start, a disk failed for longer than
// memory may hold. Readings and queries keep working from memory, each trouble is reported once, and
// the store recovers without a restart, losing nothing it had flushed or kept in memory.
#include <sqlite3.h>
#include <sys/mount.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "gate_vfs.h"
#include "store/tsdb.h"
#include "store_test_support.h"

namespace gpuscope::store {
namespace {

using testing::GateVfs;
using testing::kT0;
using testing::reading_of;
using testing::select_all;
using testing::TempDir;

using testing::kMinute;
constexpr int kDegradedSeries = 8;

// A tmpfs mounted for one test: a real filesystem that fills up and turns read-only. Mounting needs
// CAP_SYS_ADMIN (root in CI); without it the test is skipped, saying so.
class TmpfsMount {
 public:
  TmpfsMount(const std::filesystem::path& at, const std::string& size) : at_(at) {
    std::filesystem::create_directories(at_);
    if (::mount("tmpfs", at_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
      error_ = std::string("mount -t tmpfs ") + at_.string() + ": " + std::strerror(errno);
    } else {
      mounted_ = true;
    }
  }
  ~TmpfsMount() {
    if (mounted_) ::umount2(at_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  // A remount fails (EBUSY) while a file on it is open for writing.
  bool remount(bool read_only) {
    return ::mount(nullptr, at_.c_str(), nullptr, MS_REMOUNT | (read_only ? MS_RDONLY : 0), nullptr) == 0;
  }
  bool unmount() {
    mounted_ = mounted_ && ::umount2(at_.c_str(), MNT_DETACH) != 0;
    return !mounted_;
  }

 private:
  std::filesystem::path at_;
  bool mounted_ = false;
  std::string error_;
};

#define SKIP_UNLESS_MOUNTED(m)                                                                         \
  if (!(m).mounted()) GTEST_SKIP() << (m).error() << " (needs root with CAP_SYS_ADMIN; CI runs as root)"

class TsdbDegradedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GateVfs::instance().open_gate();
    GateVfs::instance().fail_writes_with(SQLITE_OK);
  }
  void TearDown() override { GateVfs::instance().fail_writes_with(SQLITE_OK); }

  TsdbOptions options(const std::filesystem::path& data_dir) {
    TsdbOptions o;
    o.data_dir = data_dir;
    o.warn = [this](std::string_view w) { warnings_.emplace_back(w); };
    o.info = [this](std::string_view i) { infos_.emplace_back(i); };
    return o;
  }
  std::unique_ptr<Tsdb> open(const TsdbOptions& o, std::int64_t now_ms) {
    auto t = Tsdb::open(o, now_ms);
    EXPECT_TRUE(t) << t.error();
    return t ? std::move(*t) : nullptr;
  }
  static void append(Tsdb& db, std::int64_t from, std::int64_t to) {
    for (std::int64_t t = from; t < to; t += 1000) {
      ASSERT_EQ(db.append_reading(t, reading_of(kDegradedSeries, t)).appended, std::size_t{kDegradedSeries});
    }
  }
  // Every series holds every second from `from` to `to` (inclusive), values checked.
  static void expect_all(const Queryable& q, std::int64_t from, std::int64_t to) {
    auto all = select_all(q);
    ASSERT_EQ(all.size(), std::size_t{kDegradedSeries});
    for (const auto& s : all) {
      const int k = std::stoi(std::string(s.labels.get("gpu")));
      ASSERT_EQ(s.samples.size(), static_cast<std::size_t>((to - from) / 1000 + 1)) << s.labels.to_string();
      for (std::size_t i = 0; i < s.samples.size(); ++i) {
        const std::int64_t t = from + static_cast<std::int64_t>(i) * 1000;
        ASSERT_EQ(s.samples[i].t_ms, t);
        ASSERT_EQ(s.samples[i].value, testing::series_value(k, t));
      }
    }
  }
  // Flushes at the times flush_if_due finds them due, from `from` to `to`; the number of attempts.
  static int flush_while_due(Tsdb& db, std::int64_t from, std::int64_t to) {
    int attempts = 0;
    for (std::int64_t t = from; t <= to; t += 1000) {
      if (t >= db.next_flush_ms()) {
        ++attempts;
        (void)db.flush_if_due(t);
      }
    }
    return attempts;
  }

  TempDir dir_;
  std::vector<std::string> warnings_, infos_;
};

// ENOSPC from a real filesystem: a tmpfs filled by another file. Flushes fail (SQLite: "database or
// disk is full"), readings and queries go on from memory, and once space is freed the next retry
// writes everything.
TEST_F(TsdbDegradedTest, AFullDiskKeepsSamplesInMemoryUntilSpaceIsBack) {
  const auto mnt = dir_.path() / "disk";
  TmpfsMount disk(mnt, "2m");
  SKIP_UNLESS_MOUNTED(disk);
  auto db = open(options(mnt / "data"), kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + 10 * kMinute);
  ASSERT_TRUE(db->flush(kT0 + 10 * kMinute));
  {
    // Fill what is left, to the last block.
    std::ofstream filler(mnt / "filler", std::ios::binary);
    const std::string block(4096, 'x');
    while (filler.write(block.data(), static_cast<std::streamsize>(block.size())) && filler.flush()) {
    }
  }
  append(*db, kT0 + 10 * kMinute, kT0 + 40 * kMinute);
  auto failed = db->flush(kT0 + 40 * kMinute);
  ASSERT_FALSE(failed) << "the disk was not full";
  EXPECT_NE(failed.error().find("full"), std::string::npos) << failed.error();
  EXPECT_TRUE(db->stats().flush_failing);
  append(*db, kT0 + 40 * kMinute, kT0 + 45 * kMinute);
  expect_all(*db, kT0, kT0 + 45 * kMinute - 1000);  // queries answer from memory
  EXPECT_GE(flush_while_due(*db, kT0 + 40 * kMinute, kT0 + 45 * kMinute - 1000), 2);
  EXPECT_EQ(warnings_.size(), 1u) << "reported once, not per attempt";

  std::filesystem::remove(mnt / "filler");
  const auto failures = db->stats().flush_failures;
  EXPECT_GE(flush_while_due(*db, kT0 + 45 * kMinute, kT0 + 60 * kMinute), 1);
  EXPECT_EQ(db->stats().flush_failures, failures) << "the first retry after the disk came back works";
  EXPECT_FALSE(db->stats().flush_failing);
  ASSERT_EQ(infos_.size(), 1u);
  db.reset();
  auto reopened = open(options(mnt / "data"), kT0 + 60 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 45 * kMinute - 1000);
}

// The data directory turns read-only (here: a read-only filesystem mounted over it, so the kernel
// answers EROFS; a filesystem cannot be remounted read-only under SQLite's open files without a
// block device to fail). The store cannot open its file there, keeps everything in memory, and
// writes it back into its own file once the directory is its own again.
TEST_F(TsdbDegradedTest, AReadOnlyDataDirectoryKeepsSamplesInMemoryUntilItIsWritable) {
  const auto data = dir_.path() / "data";
  auto db = open(options(data), kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + 10 * kMinute);
  ASSERT_TRUE(db->flush(kT0 + 10 * kMinute));
  TmpfsMount read_only(data, "1m");
  SKIP_UNLESS_MOUNTED(read_only);
  ASSERT_TRUE(read_only.remount(true));
  append(*db, kT0 + 10 * kMinute, kT0 + 20 * kMinute);
  auto failed = db->flush(kT0 + 20 * kMinute);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().find("unable to open"), std::string::npos) << failed.error();
  expect_all(*db, kT0, kT0 + 20 * kMinute - 1000);
  EXPECT_GE(flush_while_due(*db, kT0 + 20 * kMinute, kT0 + 25 * kMinute), 2);
  EXPECT_EQ(warnings_.size(), 1u);

  ASSERT_TRUE(read_only.unmount());
  const auto failures = db->stats().flush_failures;
  EXPECT_GE(flush_while_due(*db, kT0 + 25 * kMinute, kT0 + 35 * kMinute), 1);
  EXPECT_EQ(db->stats().flush_failures, failures) << "the first retry after the directory came back works";
  EXPECT_FALSE(db->stats().flush_failing);
  EXPECT_EQ(db->stats().databases_recreated, 0u) << "its own file was back: nothing to recreate";
  db.reset();
  auto reopened = open(options(data), kT0 + 40 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 20 * kMinute - 1000);
}

// rm -rf of the data directory under the running agent: SQLite would go on writing into the deleted
// file; the store notices, recreates the directory and a database, and rewrites what memory holds.
TEST_F(TsdbDegradedTest, ADeletedDataDirectoryIsRecreatedWithWhatMemoryHolds) {
  const auto data = dir_.path() / "data";
  auto db = open(options(data), kT0);
  ASSERT_TRUE(db);
  append(*db, kT0, kT0 + 10 * kMinute);
  ASSERT_TRUE(db->flush(kT0 + 10 * kMinute));
  std::filesystem::remove_all(data);
  append(*db, kT0 + 10 * kMinute, kT0 + 20 * kMinute);
  auto flushed = db->flush(kT0 + 20 * kMinute);
  ASSERT_TRUE(flushed) << flushed.error();
  EXPECT_TRUE(std::filesystem::exists(data / kChunkDatabaseFileName));
  EXPECT_EQ(db->stats().databases_recreated, 1u);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("deleted under the running agent"), std::string::npos) << warnings_[0];
  expect_all(*db, kT0, kT0 + 20 * kMinute - 1000);
  // The next flush writes into the new file as usual.
  append(*db, kT0 + 20 * kMinute, kT0 + 21 * kMinute);
  ASSERT_TRUE(db->flush(kT0 + 21 * kMinute));
  EXPECT_EQ(db->stats().databases_recreated, 1u);
  db.reset();
  auto reopened = open(options(data), kT0 + 22 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 21 * kMinute - 1000);
}

// A file that is not a database at all (a disk that lost it, a stray copy) at start: the agent used to
// refuse to start on every restart. It is moved aside, kept, and a new database started.
TEST_F(TsdbDegradedTest, ADamagedDatabaseAtStartIsMovedAsideAndANewOneStarted) {
  const auto data = dir_.path() / "data";
  std::filesystem::create_directories(data);
  const std::string garbage(64 * 1024, '\x5a');
  std::ofstream(data / kChunkDatabaseFileName, std::ios::binary) << garbage;
  auto db = open(options(data), kT0);
  ASSERT_TRUE(db);
  const auto aside = data / (std::string(kChunkDatabaseFileName) + ".corrupt-" + std::to_string(kT0));
  ASSERT_TRUE(std::filesystem::exists(aside));
  EXPECT_EQ(std::filesystem::file_size(aside), garbage.size());
  EXPECT_EQ(db->stats().databases_moved_aside, 1u);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("moved it aside to " + aside.string()), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("not a database"), std::string::npos) << warnings_[0];
  append(*db, kT0, kT0 + 2 * kMinute);
  ASSERT_TRUE(db->flush(kT0 + 2 * kMinute));
  db.reset();
  auto reopened = open(options(data), kT0 + 3 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kT0, kT0 + 2 * kMinute - 1000);
  EXPECT_EQ(reopened->stats().databases_moved_aside, 0u);
}

// What is not damaged is not moved: a database from a newer gpuscope stays an error, untouched.
TEST_F(TsdbDegradedTest, ANewerSchemaIsAnErrorNotMovedAside) {
  const auto data = dir_.path() / "data";
  std::filesystem::create_directories(data);
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open((data / kChunkDatabaseFileName).c_str(), &raw), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(raw, "PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
  }
  auto db = Tsdb::open(options(data), kT0);
  ASSERT_FALSE(db);
  EXPECT_NE(db.error().find("newer"), std::string::npos) << db.error();
  for (const auto& e : std::filesystem::directory_iterator(data)) {
    EXPECT_EQ(e.path().filename().string().find(".corrupt-"), std::string::npos) << e.path();
  }
}

// A disk that stays broken: memory keeps what was not written for max_unpersisted_ms, then drops the
// oldest (counted, reported once) instead of growing for as long as the disk is down.
TEST_F(TsdbDegradedTest, MemoryIsBoundedWhileTheDiskStaysBroken) {
  auto o = options(dir_.path() / "data");
  o.sqlite_vfs = testing::kGateVfsName;
  o.max_unpersisted_ms = 20 * kMinute;
  auto db = open(o, kT0);
  ASSERT_TRUE(db);
  GateVfs::instance().fail_writes_with(SQLITE_IOERR_WRITE);
  for (std::int64_t t = kT0; t < kT0 + 60 * kMinute; t += 1000) {
    db->append_reading(t, reading_of(kDegradedSeries, t));
    (void)db->flush_if_due(t);
  }
  const auto st = db->stats();
  EXPECT_TRUE(st.flush_failing);
  EXPECT_GT(st.head.unpersisted_samples_dropped, 0u);
  // At most the bound plus one chunk per series (a chunk leaves whole) plus the 5 min longest backoff.
  EXPECT_LE(st.head.samples, static_cast<std::size_t>(kDegradedSeries) * (20 * 60 + 120 + 300));
  EXPECT_EQ(st.head.samples + st.head.unpersisted_samples_dropped, 3600u * kDegradedSeries);
  ASSERT_EQ(warnings_.size(), 2u);
  EXPECT_NE(warnings_[1].find("dropped"), std::string::npos) << warnings_[1];

  GateVfs::instance().fail_writes_with(SQLITE_OK);
  ASSERT_TRUE(db->flush(kT0 + 60 * kMinute));
  const auto kept_from = select_all(*db)[0].samples.front().t_ms;
  db.reset();
  auto reopened = open(o, kT0 + 61 * kMinute);
  ASSERT_TRUE(reopened);
  expect_all(*reopened, kept_from, kT0 + 60 * kMinute - 1000);
}

}  // namespace
}  // namespace gpuscope::store
