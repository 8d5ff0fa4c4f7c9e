#include "store/chunk_database.h"

#include "model/sqlite_library.h"
#include <zlib.h>

#include <array>
#include <map>
#include <system_error>
#include <unordered_set>

#include <fmt/format.h>

#include "store/head.h"

namespace gpuscope::store {
namespace {

constexpr int kSchemaVersion = 1;

// The schema. Labels are normalized rows, so any byte in a value round-trips and the file can be
// inspected with the sqlite3 shell. Chunks are keyed by (series, first time): an open chunk's snapshot
// is rewritten under the same key until it is sealed.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS series (id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS series_labels (
  series_id INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,
  PRIMARY KEY (series_id, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
  series_id INTEGER NOT NULL, min_t INTEGER NOT NULL, max_t INTEGER NOT NULL,
  samples INTEGER NOT NULL, encoding INTEGER NOT NULL, crc32 INTEGER NOT NULL, data BLOB NOT NULL,
  PRIMARY KEY (series_id, min_t));
)sql";
// Every lookup goes through the primary key, per series: a chunk spans at most kChunkMaxSpanMs, and a
// series' chunks do not overlap, so bounds on min_t find those overlapping a range without a second
// index on max_t (which would cost disk on every chunk) and without scanning the table (whose rows
// hold the data).

std::string error_of(sqlite3* db, std::string_view what) {
  return fmt::format("chunk database: {}: {}", what, model::sqlite().errmsg(db));
}

// A prepared statement, finalized when it goes out of scope.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (model::sqlite().prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Statement() { model::sqlite().finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }
  void bind(int i, std::int64_t v) { model::sqlite().bind_int64(stmt_, i, v); }
  void bind(int i, std::string_view v) {
    model::sqlite().bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind_blob(int i, std::span<const std::uint8_t> v) {
    model::sqlite().bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return model::sqlite().step(stmt_); }
  void reset() {
    model::sqlite().reset(stmt_);
    model::sqlite().clear_bindings(stmt_);
  }
  std::int64_t int64(int col) const { return model::sqlite().column_int64(stmt_, col); }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(model::sqlite().column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(model::sqlite().column_bytes(stmt_, col))) : std::string();
  }
  std::vector<std::uint8_t> blob(int col) const {
    const auto* p = static_cast<const std::uint8_t*>(model::sqlite().column_blob(stmt_, col));
    return p ? std::vector<std::uint8_t>(p, p + model::sqlite().column_bytes(stmt_, col)) : std::vector<std::uint8_t>();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

std::expected<void, std::string> exec(sqlite3* db, const char* sql) {
  char* msg = nullptr;
  if (model::sqlite().exec(db, sql, nullptr, nullptr, &msg) != SQLITE_OK) {
    std::string e = fmt::format("chunk database: {}", msg ? msg : "error");
    model::sqlite().free(msg);
    return std::unexpected(e);
  }
  return {};
}

std::expected<sqlite3*, std::string> open_connection(const std::filesystem::path& file, int flags,
                                                     const std::string& vfs = {}) {
  if (auto api = model::sqlite_api(); !api) return std::unexpected(fmt::format("chunk database: {}", api.error()));
  sqlite3* db = nullptr;
  const char* vfs_name = vfs.empty() ? nullptr : vfs.c_str();
  if (model::sqlite().open_v2(file.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, vfs_name) != SQLITE_OK) {
    std::string e = fmt::format("chunk database: cannot open {}: {}", file.string(),
                                db ? model::sqlite().errmsg(db) : "out of memory");
    model::sqlite().close_v2(db);
    return std::unexpected(e);
  }
  // A reader may meet the writer's checkpoint, a second agent on the same directory a lock: wait a while.
  model::sqlite().busy_timeout(db, 5000);
  return db;
}

// Reads chunk rows (series_id, min_t, max_t, samples, encoding, crc32, data), verifying each.
std::expected<ChunkRead, std::string> read_rows(sqlite3* db, Statement& q) {
  ChunkRead out;
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    ChunkRecord c{static_cast<std::uint64_t>(q.int64(0)), q.int64(1), q.int64(2),
                  static_cast<std::uint32_t>(q.int64(3)), q.blob(6)};
    const auto encoding = q.int64(4);
    const auto stored_crc = static_cast<std::uint32_t>(q.int64(5));
    std::string damage;
    if (encoding != static_cast<int>(ChunkEncoding::kXor)) {
      damage = fmt::format("unknown encoding {}", encoding);
    } else if (chunk_crc32(c.samples, c.data) != stored_crc) {
      damage = "CRC32 mismatch";
    }
    if (!damage.empty()) {
      out.damaged.push_back(fmt::format("chunk of series {} from {} to {}: {}", c.series_id, c.min_t, c.max_t, damage));
      out.damaged_keys.emplace_back(c.series_id, c.min_t);
      continue;
    }
    out.chunks.push_back(std::move(c));
  }
  if (rc != SQLITE_DONE) return std::unexpected(error_of(db, "reading chunks"));
  return out;
}

}  // namespace

std::uint32_t chunk_crc32(std::uint32_t samples, std::span<const std::uint8_t> data) {
  const std::array<Bytef, 4> count{static_cast<Bytef>(samples), static_cast<Bytef>(samples >> 8),
                                   static_cast<Bytef>(samples >> 16), static_cast<Bytef>(samples >> 24)};
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, count.data(), static_cast<uInt>(count.size()));
  crc = crc32(crc, data.data(), static_cast<uInt>(data.size()));
  return static_cast<std::uint32_t>(crc);
}

std::expected<std::unique_ptr<ChunkDatabase>, std::string> ChunkDatabase::open(const std::filesystem::path& file,
                                                                                const std::string& vfs) {
  auto writer = open_connection(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
  if (!writer) return std::unexpected(writer.error());
  auto fail = [&](std::string e) {
    model::sqlite().close_v2(*writer);
    return std::unexpected(std::move(e));
  };
  // WAL with synchronous=NORMAL: a commit is atomic and survives a crash of the process (kill -9);
  // only a power loss may lose the last commits, never corrupt the file.
  if (auto ok = exec(*writer, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"); !ok) return fail(ok.error());
  {
    Statement v(*writer, "PRAGMA user_version");
    if (!v.ok() || v.step() != SQLITE_ROW) return fail(error_of(*writer, "reading the schema version"));
    if (v.int64(0) > kSchemaVersion) {
      return fail(fmt::format("chunk database: {} has schema version {}, newer than this gpuscope's {}",
                              file.string(), v.int64(0), kSchemaVersion));
    }
  }
  if (auto ok = exec(*writer, kSchema); !ok) return fail(ok.error());
  if (auto ok = exec(*writer, fmt::format("PRAGMA user_version={}", kSchemaVersion).c_str()); !ok) {
    return fail(ok.error());
  }
  auto reader = open_connection(file, SQLITE_OPEN_READONLY, vfs);
  if (!reader) return fail(reader.error());
  return std::unique_ptr<ChunkDatabase>(new ChunkDatabase(file, *writer, *reader));
}

std::expected<std::unique_ptr<ChunkDatabase>, std::string> ChunkDatabase::open_read_only(const std::filesystem::path& file) {
  // Without SQLITE_OPEN_CREATE a missing file is an error rather than a new, empty store.
  auto reader = open_connection(file, SQLITE_OPEN_READONLY);
  if (!reader) return std::unexpected(reader.error());
  std::string error;
  {
    Statement v(*reader, "PRAGMA user_version");
    if (!v.ok() || v.step() != SQLITE_ROW) {
      error = error_of(*reader, fmt::format("reading {}", file.string()));
    } else if (v.int64(0) > kSchemaVersion) {
      error = fmt::format("chunk database: {} has schema version {}, newer than this gpuscope's {}", file.string(),
                          v.int64(0), kSchemaVersion);
    } else if (v.int64(0) == 0) {
      // The agent writes the schema and its version together when it creates the file.
      error = fmt::format("chunk database: {} holds no gpuscope history", file.string());
    }
  }
  if (!error.empty()) {
    model::sqlite().close_v2(*reader);
    return std::unexpected(error);
  }
  return std::unique_ptr<ChunkDatabase>(new ChunkDatabase(file, nullptr, *reader));
}

ChunkDatabase::~ChunkDatabase() {
  model::sqlite().close_v2(reader_);
  if (writer_ != nullptr) model::sqlite().close_v2(writer_);  // the last connection checkpoints the log into the file
}

std::expected<void, std::string> ChunkDatabase::write(std::span<const ChunkToWrite> chunks) {
  std::lock_guard lock(writer_mutex_);
  sqlite3* db = writer_;
  if (db == nullptr) return std::unexpected(fmt::format("chunk database: {} is open read-only", file_.string()));
  if (auto ok = exec(db, "BEGIN IMMEDIATE"); !ok) return ok;
  auto rollback = [&](std::string e) {
    exec(db, "ROLLBACK");
    return std::unexpected(std::move(e));
  };
  Statement add_series(db, "INSERT OR IGNORE INTO series (id) VALUES (?)");
  Statement add_label(db, "INSERT OR REPLACE INTO series_labels (series_id, name, value) VALUES (?, ?, ?)");
  Statement add_chunk(db,
                      "INSERT OR REPLACE INTO chunks (series_id, min_t, max_t, samples, encoding, crc32, data) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  if (!add_series.ok() || !add_label.ok() || !add_chunk.ok()) return rollback(error_of(db, "preparing a write"));
  std::unordered_set<std::uint64_t> series_seen;
  for (const auto& c : chunks) {
    const auto id = static_cast<std::int64_t>(c.series_id);
    if (series_seen.insert(c.series_id).second) {
      add_series.bind(1, id);
      if (add_series.step() != SQLITE_DONE) return rollback(error_of(db, "writing a series"));
      add_series.reset();
      if (model::sqlite().changes(db) > 0 && c.labels != nullptr) {
        for (const auto& l : *c.labels) {
          add_label.bind(1, id);
          add_label.bind(2, l.name);
          add_label.bind(3, l.value);
          if (add_label.step() != SQLITE_DONE) return rollback(error_of(db, "writing a label"));
          add_label.reset();
        }
      }
    }
    add_chunk.bind(1, id);
    add_chunk.bind(2, c.min_t);
    add_chunk.bind(3, c.max_t);
    add_chunk.bind(4, static_cast<std::int64_t>(c.samples));
    add_chunk.bind(5, static_cast<std::int64_t>(ChunkEncoding::kXor));
    add_chunk.bind(6, static_cast<std::int64_t>(chunk_crc32(c.samples, c.data)));
    add_chunk.bind_blob(7, c.data);
    if (add_chunk.step() != SQLITE_DONE) return rollback(error_of(db, "writing a chunk"));
    add_chunk.reset();
  }
  if (auto ok = exec(db, "COMMIT"); !ok) return rollback(ok.error());
  return {};
}

std::expected<RetentionResult, std::string> ChunkDatabase::delete_before(std::int64_t min_t) {
  std::lock_guard lock(writer_mutex_);
  sqlite3* db = writer_;
  if (db == nullptr) return std::unexpected(fmt::format("chunk database: {} is open read-only", file_.string()));
  if (auto ok = exec(db, "BEGIN IMMEDIATE"); !ok) return std::unexpected(ok.error());
  auto rollback = [&](std::string e) {
    exec(db, "ROLLBACK");
    return std::unexpected(std::move(e));
  };
  RetentionResult result;
  Statement del(db, "DELETE FROM chunks WHERE series_id IN (SELECT id FROM series) AND min_t < ? AND max_t < ?");
  if (!del.ok()) return rollback(error_of(db, "preparing retention"));
  del.bind(1, min_t);
  del.bind(2, min_t);
  if (del.step() != SQLITE_DONE) return rollback(error_of(db, "deleting old chunks"));
  result.chunks_deleted = static_cast<std::size_t>(model::sqlite().changes(db));
  if (result.chunks_deleted > 0) {
    Statement empty(db, "SELECT id FROM series WHERE NOT EXISTS (SELECT 1 FROM chunks WHERE series_id = series.id)");
    if (!empty.ok()) return rollback(error_of(db, "preparing retention"));
    int rc;
    while ((rc = empty.step()) == SQLITE_ROW) result.series_deleted.push_back(static_cast<std::uint64_t>(empty.int64(0)));
    if (rc != SQLITE_DONE) return rollback(error_of(db, "finding empty series"));
    Statement del_series(db, "DELETE FROM series WHERE id = ?");
    Statement del_labels(db, "DELETE FROM series_labels WHERE series_id = ?");
    if (!del_series.ok() || !del_labels.ok()) return rollback(error_of(db, "preparing retention"));
    for (auto id : result.series_deleted) {
      for (auto* s : {&del_series, &del_labels}) {
        s->bind(1, static_cast<std::int64_t>(id));
        if (s->step() != SQLITE_DONE) return rollback(error_of(db, "deleting a series"));
        s->reset();
      }
    }
  }
  if (auto ok = exec(db, "COMMIT"); !ok) return rollback(ok.error());
  return result;
}

std::expected<std::vector<PersistedSeries>, std::string> ChunkDatabase::series() const {
  std::lock_guard lock(reader_mutex_);
  sqlite3* db = reader_;
  // One read transaction, so labels and time ranges come from the same snapshot.
  if (auto ok = exec(db, "BEGIN"); !ok) return std::unexpected(ok.error());
  struct EndRead {
    sqlite3* db;
    ~EndRead() { exec(db, "COMMIT"); }
  } end_read{db};
  std::map<std::uint64_t, std::vector<Label>> labels;
  {
    Statement q(db, "SELECT series_id, name, value FROM series_labels ORDER BY series_id");
    if (!q.ok()) return std::unexpected(error_of(db, "preparing to read series"));
    int rc;
    while ((rc = q.step()) == SQLITE_ROW) {
      labels[static_cast<std::uint64_t>(q.int64(0))].push_back({q.text(1), q.text(2)});
    }
    if (rc != SQLITE_DONE) return std::unexpected(error_of(db, "reading series"));
  }
  std::vector<PersistedSeries> out;
  // The first chunk's min_t and the last one's max_t, by primary key (a series' chunks do not overlap).
  Statement q(db,
              "SELECT id, (SELECT min_t FROM chunks WHERE series_id = series.id ORDER BY min_t LIMIT 1), "
              "(SELECT max_t FROM chunks WHERE series_id = series.id ORDER BY min_t DESC LIMIT 1) "
              "FROM series ORDER BY id");
  if (!q.ok()) return std::unexpected(error_of(db, "preparing to read series"));
  int rc;
  while ((rc = q.step()) == SQLITE_ROW) {
    if (model::sqlite().column_type(q.get(), 1) == SQLITE_NULL) continue;  // no chunk left
    const auto id = static_cast<std::uint64_t>(q.int64(0));
    auto it = labels.find(id);
    if (it == labels.end()) continue;  // chunks of a series without labels cannot be queried
    out.push_back({id, Labels(std::move(it->second)), q.int64(1), q.int64(2)});
  }
  if (rc != SQLITE_DONE) return std::unexpected(error_of(db, "reading series"));
  return out;
}

std::expected<ChunkRead, std::string> ChunkDatabase::read(std::uint64_t series_id, std::int64_t mint,
                                                          std::int64_t maxt) const {
  std::lock_guard lock(reader_mutex_);
  Statement q(reader_,
              "SELECT series_id, min_t, max_t, samples, encoding, crc32, data FROM chunks "
              "WHERE series_id = ? AND min_t >= ? AND min_t <= ? AND max_t >= ? ORDER BY min_t");
  if (!q.ok()) return std::unexpected(error_of(reader_, "preparing to read chunks"));
  q.bind(1, static_cast<std::int64_t>(series_id));
  q.bind(2, mint > INT64_MIN + kChunkMaxSpanMs ? mint - kChunkMaxSpanMs : INT64_MIN);
  q.bind(3, maxt);
  q.bind(4, mint);
  return read_rows(reader_, q);
}

std::expected<ChunkRead, std::string> ChunkDatabase::read_all_since(std::int64_t min_t) const {
  std::lock_guard lock(reader_mutex_);
  Statement q(reader_,
              "SELECT series_id, min_t, max_t, samples, encoding, crc32, data FROM chunks "
              "WHERE series_id IN (SELECT id FROM series) AND min_t >= ? AND max_t >= ? ORDER BY series_id, min_t");
  if (!q.ok()) return std::unexpected(error_of(reader_, "preparing to read chunks"));
  q.bind(1, min_t > INT64_MIN + kChunkMaxSpanMs ? min_t - kChunkMaxSpanMs : INT64_MIN);
  q.bind(2, min_t);
  return read_rows(reader_, q);
}

std::expected<void, std::string> ChunkDatabase::check_integrity() const {
  std::lock_guard lock(reader_mutex_);
  Statement q(reader_, "PRAGMA integrity_check");
  if (!q.ok()) return std::unexpected(error_of(reader_, "integrity check"));
  std::string result;
  while (q.step() == SQLITE_ROW) result += (result.empty() ? "" : "; ") + q.text(0);
  if (result != "ok") return std::unexpected(fmt::format("chunk database: integrity check: {}", result));
  return {};
}

bool ChunkDatabase::is_damaged(const std::filesystem::path& file, const std::string& vfs) {
  auto db = open_connection(file, SQLITE_OPEN_READONLY, vfs);
  if (!db) return false;  // cannot be read at all: the disk or the directory, not the file's content
  bool damaged = false;
  {
    Statement q(*db, "PRAGMA quick_check");
    int rc = q.ok() ? q.step() : model::sqlite().errcode(*db);
    if (rc == SQLITE_ROW) {
      damaged = q.text(0) != "ok";
    } else {
      const int primary = model::sqlite().errcode(*db) & 0xff;
      damaged = primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT;
    }
  }
  model::sqlite().close_v2(*db);
  return damaged;
}

std::uint64_t ChunkDatabase::file_bytes() const {
  std::uint64_t total = 0;
  for (const auto& p : {file_, std::filesystem::path(file_.string() + "-wal")}) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(p, ec);
    if (!ec) total += n;
  }
  return total;
}

}  // namespace gpuscope::store
