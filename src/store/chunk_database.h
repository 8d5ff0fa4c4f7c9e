// ChunkDatabase: the store's persisted history, one SQLite file (WAL mode) of series and their
// compressed chunks, each chunk with a CRC32 so damage on disk is detected and skipped, not served.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "store/labels.h"

struct sqlite3;

namespace gpuscope::store {

// How a chunk's data is encoded; only XorChunk's format exists so far.
enum class ChunkEncoding : int { kXor = 1 };

struct ChunkRecord {
  std::uint64_t series_id;
  std::int64_t min_t, max_t;
  std::uint32_t samples;
  std::vector<std::uint8_t> data;
};

struct ChunkToWrite {
  std::uint64_t series_id;
  const Labels* labels;  // the series' labels, written with its first chunk
  std::int64_t min_t, max_t;
  std::uint32_t samples;
  std::span<const std::uint8_t> data;
};

struct PersistedSeries {
  std::uint64_t id;
  Labels labels;
  std::int64_t min_t, max_t;  // over its chunks
};

// Chunks read back, and those skipped because their CRC did not match (one line each, for a warning).
struct ChunkRead {
  std::vector<ChunkRecord> chunks;
  std::vector<std::string> damaged;
  std::vector<std::pair<std::uint64_t, std::int64_t>> damaged_keys;  // (series id, min_t) of each
};

struct RetentionResult {
  std::size_t chunks_deleted = 0;
  std::vector<std::uint64_t> series_deleted;  // series left without chunks
};

class ChunkDatabase {
 public:
  // Opens (creating when absent) the database file; its directory must exist. `vfs` names a registered
  // SQLite VFS (empty: the operating system's); tests pass one that blocks or fails writes.
  static std::expected<std::unique_ptr<ChunkDatabase>, std::string> open(const std::filesystem::path& file,
                                                                         const std::string& vfs = {});
  // Opens an existing database file for reading only (what `eval --data-dir` reads, perhaps while an
  // agent writes it): nothing is created or changed, and write() and delete_before() fail.
  static std::expected<std::unique_ptr<ChunkDatabase>, std::string> open_read_only(const std::filesystem::path& file);
  ~ChunkDatabase();
  ChunkDatabase(const ChunkDatabase&) = delete;
  ChunkDatabase& operator=(const ChunkDatabase&) = delete;

  // Writes chunks (a chunk with the same series and min_t replaces the stored one: an open chunk's
  // snapshot grows flush after flush) and any series not stored yet, in one transaction.
  std::expected<void, std::string> write(std::span<const ChunkToWrite> chunks);
  // Deletes chunks whose max_t < min_t, then series with no chunk left, in one transaction.
  std::expected<RetentionResult, std::string> delete_before(std::int64_t min_t);

  std::expected<std::vector<PersistedSeries>, std::string> series() const;
  // Chunks of one series overlapping [mint, maxt], by time, CRC verified.
  std::expected<ChunkRead, std::string> read(std::uint64_t series_id, std::int64_t mint, std::int64_t maxt) const;
  // Chunks of all series with max_t >= min_t, by series then time, CRC verified (startup).
  std::expected<ChunkRead, std::string> read_all_since(std::int64_t min_t) const;

  // SQLite's own check of the file ("ok" as success).
  std::expected<void, std::string> check_integrity() const;
  // Whether `file` is damaged as a database (not a database at all, or its pages malformed), as opposed
  // to a disk or a directory that refuses access: a file that opens but fails SQLite's quick check.
  // Reads the whole file; for when opening or loading it already failed.
  static bool is_damaged(const std::filesystem::path& file, const std::string& vfs = {});
  // The database file plus its write-ahead log, in bytes.
  std::uint64_t file_bytes() const;

 private:
  ChunkDatabase(std::filesystem::path file, sqlite3* writer, sqlite3* reader)
      : file_(std::move(file)), writer_(writer), reader_(reader) {}
  std::filesystem::path file_;
  // Two connections: with WAL a query reads a consistent snapshot while a flush writes.
  mutable std::mutex writer_mutex_;
  sqlite3* writer_;  // null when opened read-only
  mutable std::mutex reader_mutex_;
  sqlite3* reader_;
};

// The CRC32 stored with a chunk: over the sample count (little endian) and the data, so a damaged
// count is caught as well as damaged bytes.
std::uint32_t chunk_crc32(std::uint32_t samples, std::span<const std::uint8_t> data);

}  // namespace gpuscope::store
