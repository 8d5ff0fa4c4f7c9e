#include "trace/nsys_reader.h"

#include "model/sqlite_library.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "trace/rank_timeline.h"

namespace gpuscope::trace {
namespace {

// "SQLite format 3" and its NUL: the first 16 bytes of every SQLite 3 database file.
constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
// The database header is the first 100 bytes of the file (sqlite.org/fileformat.html, "The Database Header").
constexpr std::size_t kHeaderBytes = 100;

// NVTX_EVENTS.eventType of the ranges (the schema reference's NvtxPushPopRange and NvtxStartEndRange);
// marks, domain and category registrations have no duration.
constexpr std::int64_t kNvtxPushPopRange = 59;
constexpr std::int64_t kNvtxStartEndRange = 60;

// Lenient mode keeps the first few problems, as the JSON parser does.
constexpr std::size_t kMaxNsysProblems = 5;

// CUpti_ActivityMemcpyKind (CUPTI's activity API) in CUPTI_ACTIVITY_KIND_MEMCPY.copyKind, named the way
// Kineto names copies, so direction_of_memcpy() reads both alike ("A" is a CUDA array).
std::string_view memcpy_name(std::int64_t copy_kind) {
  switch (copy_kind) {
    case 1: return "Memcpy HtoD";
    case 2: return "Memcpy DtoH";
    case 3: return "Memcpy HtoA";
    case 4: return "Memcpy AtoH";
    case 5: return "Memcpy AtoA";
    case 6: return "Memcpy AtoD";
    case 7: return "Memcpy DtoA";
    case 8: return "Memcpy DtoD";
    case 9: return "Memcpy HtoH";
    case 10: return "Memcpy PtoP";
    default: return "Memcpy";
  }
}

std::uint64_t big_endian(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

// SQLite's URI form, so that the file can be opened immutable (no locks, no journal looked for or made:
// a report is read, never written) whatever characters its path holds.
std::string immutable_uri(const std::string& file) {
  std::string path = std::filesystem::absolute(file).string();
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

class Statement {
 public:
  Statement() = default;
  explicit Statement(sqlite3_stmt* statement) : statement_(statement) {}
  Statement(Statement&& other) noexcept : statement_(std::exchange(other.statement_, nullptr)) {}
  Statement& operator=(Statement&& other) noexcept {
    std::swap(statement_, other.statement_);
    return *this;
  }
  ~Statement() {
    if (statement_ != nullptr) model::sqlite().finalize(statement_);
  }
  sqlite3_stmt* get() const { return statement_; }

 private:
  sqlite3_stmt* statement_ = nullptr;
};

// A row's value that must be an integer; NULL is allowed (as `fallback`) only where `optional`.
struct ColumnError {
  std::string message;
};

std::expected<std::int64_t, ColumnError> integer_column(sqlite3_stmt* row, int index, std::string_view name,
                                                        std::optional<std::int64_t> null_value = std::nullopt) {
  switch (model::sqlite().column_type(row, index)) {
    case SQLITE_INTEGER: return model::sqlite().column_int64(row, index);
    case SQLITE_NULL:
      if (null_value) return *null_value;
      return std::unexpected(ColumnError{fmt::format("{} is NULL", name)});
    default: return std::unexpected(ColumnError{fmt::format("{} is not an integer", name)});
  }
}

class NsysReader {
 public:
  NsysReader(const std::string& file, TraceEventSink& sink, TraceHeader& header, const NsysReadOptions& options)
      : file_(file), sink_(sink), header_(header), options_(options) {}
  // _v2: the connection closes once the statements still held by members (destroyed after this body) are finalized.
  ~NsysReader() {
    if (db_ != nullptr) model::sqlite().close_v2(db_);
  }

  std::expected<ParseSummary, TraceError> read() {
    if (auto checked = check_header(); !checked) return std::unexpected(checked.error());
    if (auto api = model::sqlite_api(); !api) return fail(TraceErrorKind::kIo, api.error());
    const model::SqliteApi& sqlite = model::sqlite();
    if (sqlite.open_v2(immutable_uri(file_).c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr) != SQLITE_OK) {
      return fail(TraceErrorKind::kIo, fmt::format("cannot open the database: {}", db_ ? sqlite.errmsg(db_) : "out of memory"));
    }
    if (summary_.truncated) {
      // SQLite refuses a file shorter than its header's page count as corrupt unless writable_schema is on,
      // and then reads the pages there are (the connection is read-only and immutable: nothing is written).
      model::sqlite().exec(db_, "PRAGMA writable_schema = ON", nullptr, nullptr, nullptr);
    }
    auto tables = list_tables();
    if (!tables) return std::unexpected(tables.error());
    if (!tables->contains("StringIds")) {
      return fail(TraceErrorKind::kNotATrace,
                  "an SQLite database without a StringIds table: not an Nsight Systems export (nsys export --type sqlite)");
    }
    const bool kernels = tables->contains("CUPTI_ACTIVITY_KIND_KERNEL");
    const bool copies = tables->contains("CUPTI_ACTIVITY_KIND_MEMCPY");
    const bool memsets = tables->contains("CUPTI_ACTIVITY_KIND_MEMSET");
    if (!kernels && !copies && !memsets) {
      return fail(TraceErrorKind::kNotATrace,
                  "an Nsight Systems export with no CUDA activity (no CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY or _MEMSET table): "
                  "profile with CUDA tracing on (nsys profile -t cuda)");
    }
    if (auto prepared = prepare("SELECT value FROM StringIds WHERE id = ?"); prepared) {
      string_lookup_ = std::move(*prepared);
    } else {
      return std::unexpected(prepared.error());
    }
    if (tables->contains("TARGET_INFO_GPU")) {
      if (auto r = read_device_names(); !r) return std::unexpected(r.error());
    }
    if (kernels) {
      if (auto r = read_kernels(); !r) return std::unexpected(r.error());
    }
    if (copies) {
      if (auto r = read_copies(); !r) return std::unexpected(r.error());
    }
    if (memsets) {
      if (auto r = read_memsets(); !r) return std::unexpected(r.error());
    }
    if (tables->contains("CUPTI_ACTIVITY_KIND_RUNTIME")) {
      if (auto r = read_runtime(); !r) return std::unexpected(r.error());
    }
    if (tables->contains("NVTX_EVENTS")) {
      if (auto r = read_nvtx(); !r) return std::unexpected(r.error());
    }
    return summary_;
  }

 private:
  std::unexpected<TraceError> fail(TraceErrorKind kind, std::string message, std::int64_t offset = -1) const {
    return std::unexpected(TraceError{kind, offset, std::move(message), file_});
  }

  // The header says how many pages the database has; a file shorter than that was cut short (a copy that
  // stopped, a full disk). SQLite would notice only when it reached a missing page, as "malformed".
  std::expected<void, TraceError> check_header() {
    std::ifstream in(file_, std::ios::binary);
    if (!in) return fail(TraceErrorKind::kIo, "cannot open the file");
    std::array<unsigned char, kHeaderBytes> h{};
    in.read(reinterpret_cast<char*>(h.data()), h.size());
    const auto got = static_cast<std::size_t>(in.gcount());
    std::error_code ec;
    const auto size = std::filesystem::file_size(file_, ec);
    if (ec) return fail(TraceErrorKind::kIo, fmt::format("cannot read the size: {}", ec.message()));
    summary_.json_bytes = size;
    summary_.input = "nsys SQLite";
    if (got < kSqliteMagic.size() || std::memcmp(h.data(), kSqliteMagic.data(), kSqliteMagic.size()) != 0) {
      return fail(TraceErrorKind::kNotATrace, "not an SQLite database (no \"SQLite format 3\" header)", 0);
    }
    if (got < kHeaderBytes) {
      return fail(TraceErrorKind::kTruncated, "the SQLite database is cut short inside its header", static_cast<std::int64_t>(got));
    }
    std::uint64_t page_size = big_endian(&h[16], 2);
    if (page_size == 1) page_size = 65536;
    const std::uint64_t pages = big_endian(&h[28], 4);
    // The page count is valid only when the change counter equals the version-valid-for number (older
    // writers left it stale); then the file must hold every page.
    const bool count_valid = pages != 0 && big_endian(&h[24], 4) == big_endian(&h[92], 4);
    if (count_valid && size < pages * page_size) {
      if (!options_.lenient) {
        return fail(TraceErrorKind::kTruncated,
                    fmt::format("the SQLite database is cut short: its header says {} pages of {} bytes ({} bytes), the file ends",
                                pages, page_size, pages * page_size),
                    static_cast<std::int64_t>(size));
      }
      summary_.truncated = true;
      summary_.skipped_bytes = pages * page_size - size;
      note(fmt::format("the database is cut short: {} of its {} bytes are missing", pages * page_size - size, pages * page_size));
    }
    return {};
  }

  void note(std::string problem) {
    if (summary_.problems.size() < kMaxNsysProblems) summary_.problems.push_back(std::move(problem));
  }

  std::expected<Statement, TraceError> prepare(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (model::sqlite().prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      return damaged(fmt::format("cannot query ({})", sql.substr(0, 60)));
    }
    return Statement(statement);
  }

  // An SQLite error while reading: the file is damaged or cut short, or not a database at all.
  std::unexpected<TraceError> damaged(const std::string& doing) const {
    const int code = model::sqlite().errcode(db_);
    const TraceErrorKind kind = code == SQLITE_NOTADB ? TraceErrorKind::kNotATrace
                                : code == SQLITE_CORRUPT || code == SQLITE_IOERR ? TraceErrorKind::kTruncated
                                                                                 : TraceErrorKind::kIo;
    const char* hint = kind == TraceErrorKind::kTruncated ? " (the report is cut short or damaged)" : "";
    return fail(kind, fmt::format("{}: SQLite: {}{}", doing, model::sqlite().errmsg(db_), hint));
  }

  std::expected<std::set<std::string, std::less<>>, TraceError> list_tables() {
    auto statement = prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
    if (!statement) return std::unexpected(statement.error());
    std::set<std::string, std::less<>> tables;
    int rc;
    while ((rc = model::sqlite().step(statement->get())) == SQLITE_ROW) {
      if (const auto* name = model::sqlite().column_text(statement->get(), 0)) tables.emplace(reinterpret_cast<const char*>(name));
    }
    if (rc != SQLITE_DONE) return damaged("reading the list of tables");
    return tables;
  }

  std::expected<std::set<std::string, std::less<>>, TraceError> columns_of(std::string_view table) {
    auto statement = prepare(fmt::format("PRAGMA table_info(\"{}\")", table));
    if (!statement) return std::unexpected(statement.error());
    std::set<std::string, std::less<>> columns;
    int rc;
    while ((rc = model::sqlite().step(statement->get())) == SQLITE_ROW) {
      if (const auto* name = model::sqlite().column_text(statement->get(), 1)) columns.emplace(reinterpret_cast<const char*>(name));
    }
    if (rc != SQLITE_DONE) return damaged(fmt::format("reading the columns of {}", table));
    return columns;
  }

  // The columns a table must have; the one-line error names the first missing one.
  std::expected<std::set<std::string, std::less<>>, TraceError> require_columns(std::string_view table,
                                                                                 std::initializer_list<std::string_view> needed) {
    auto columns = columns_of(table);
    if (!columns) return columns;
    for (const auto name : needed) {
      if (!columns->contains(name)) {
        return fail(TraceErrorKind::kBadField, fmt::format("table {} has no column {}: not an Nsight Systems export this reader knows",
                                                           table, name));
      }
    }
    return columns;
  }

  std::string_view string_of(std::int64_t id) {
    if (auto it = strings_.find(id); it != strings_.end()) return it->second;
    std::string value;
    sqlite3_stmt* lookup = string_lookup_.get();
    model::sqlite().bind_int64(lookup, 1, id);
    if (model::sqlite().step(lookup) == SQLITE_ROW) {
      if (const auto* text = model::sqlite().column_text(lookup, 0)) value = reinterpret_cast<const char*>(text);
    }
    model::sqlite().reset(lookup);
    return strings_.emplace(id, std::move(value)).first->second;
  }

  // Steps through `sql`, handing each row to `on_row`. A malformed row (on_row's error) fails the read,
  // or is skipped and counted when lenient; an SQLite error in the middle (a damaged or missing page)
  // fails it, or keeps the rows read so far when lenient.
  std::expected<void, TraceError> read_rows(std::string_view table, const std::string& sql,
                                            const std::function<std::expected<void, ColumnError>(sqlite3_stmt*)>& on_row) {
    auto statement = prepare(sql);
    if (!statement) return std::unexpected(statement.error());
    std::uint64_t row = 0;
    int rc;
    while ((rc = model::sqlite().step(statement->get())) == SQLITE_ROW) {
      ++row;
      ++summary_.event_objects;
      if (auto ok = on_row(statement->get()); !ok) {
        std::string problem = fmt::format("{} row {}: {}", table, row, ok.error().message);
        if (!options_.lenient) return fail(TraceErrorKind::kBadValue, std::move(problem));
        ++summary_.skipped_events;
        note(std::move(problem));
      }
    }
    if (rc == SQLITE_DONE) return {};
    if (!options_.lenient) return damaged(fmt::format("reading {} after row {}", table, row));
    summary_.truncated = true;
    note(fmt::format("{}: stopped after row {}: SQLite: {}", table, row, model::sqlite().errmsg(db_)));
    return {};
  }

  std::expected<void, ColumnError> emit(TraceEvent& event, std::int64_t start, std::int64_t end) {
    if (end < start) return std::unexpected(ColumnError{fmt::format("end {} before start {}", end, start)});
    if (event.category == EventCategory::kCudaRuntime) {
      // The syncs launch nothing but are kept: the critical path waits on them.
      if (!launches_something(event.correlation) && !is_synchronizing_call(event.name)) return {};
    } else if (event.category != EventCategory::kUserAnnotation) {
      note_launched(event.correlation);
    }
    event.start_ns = start;
    event.duration_ns = end - start;
    sink_.on_event(event);
    ++summary_.complete_events;
    return {};
  }

  // The GPU activities' correlation ids, so that the runtime calls that launched nothing (cudaEventRecord,
  // cudaStreamSynchronize, ...: half the table or more) are dropped as they are read instead of kept for
  // the launch join, which would set them aside anyway; an export holds 50x the events of a Kineto trace
  // of the same size, and each kept call is 24 bytes. Ids past kMaxBitmapIds switch the filter off.
  static constexpr std::int64_t kMaxBitmapIds = std::int64_t{1} << 28;  // a 32 MiB bitmap at most
  void note_launched(std::int64_t correlation) {
    if (correlation < 0 || !filter_calls_) return;
    if (correlation >= kMaxBitmapIds) {
      filter_calls_ = false;
      launched_ = {};
      return;
    }
    if (static_cast<std::size_t>(correlation) >= launched_.size()) launched_.resize(static_cast<std::size_t>(correlation) * 2 + 1024);
    launched_[static_cast<std::size_t>(correlation)] = true;
  }
  bool launches_something(std::int64_t correlation) const {
    if (!filter_calls_) return true;
    return correlation >= 0 && static_cast<std::size_t>(correlation) < launched_.size() && launched_[static_cast<std::size_t>(correlation)];
  }

  std::expected<void, TraceError> read_device_names() {
    auto columns = columns_of("TARGET_INFO_GPU");
    if (!columns) return std::unexpected(columns.error());
    if (!columns->contains("name")) return {};
    // cuDevice is the CUDA ordinal the activity tables' deviceId holds; exports without it number the GPUs by id.
    const char* id = columns->contains("cuDevice") ? "cuDevice" : columns->contains("id") ? "id" : nullptr;
    if (id == nullptr) return {};
    auto statement = prepare(fmt::format("SELECT {}, name FROM TARGET_INFO_GPU", id));
    if (!statement) return std::unexpected(statement.error());
    while (model::sqlite().step(statement->get()) == SQLITE_ROW) {
      const auto* name = model::sqlite().column_text(statement->get(), 1);
      if (model::sqlite().column_type(statement->get(), 0) == SQLITE_INTEGER && name != nullptr) {
        header_.device_names[model::sqlite().column_int64(statement->get(), 0)] = reinterpret_cast<const char*>(name);
      }
    }
    return {};  // device names are a nicety: a damaged table is not worth failing the report for
  }

  // The columns every activity table starts its SELECT with: start, end, deviceId, streamId, correlationId.
  struct Activity {
    TraceEvent event;
    std::int64_t start = 0, end = 0;
  };
  static std::expected<Activity, ColumnError> activity_columns(sqlite3_stmt* row, EventCategory category) {
    auto start = integer_column(row, 0, "start");
    auto end = integer_column(row, 1, "end");
    auto device = integer_column(row, 2, "deviceId", -1);
    auto stream = integer_column(row, 3, "streamId", -1);
    auto correlation = integer_column(row, 4, "correlationId", -1);
    for (const auto* v : {&start, &end, &device, &stream, &correlation}) {
      if (!*v) return std::unexpected(v->error());
    }
    Activity a;
    a.event.category = category;
    a.event.device = *device;
    a.event.stream = *stream;
    a.event.correlation = *correlation;
    a.start = *start;
    a.end = *end;
    return a;
  }

  std::expected<void, TraceError> read_kernels() {
    constexpr std::string_view kTable = "CUPTI_ACTIVITY_KIND_KERNEL";
    auto columns = require_columns(kTable, {"start", "end", "deviceId", "streamId", "correlationId"});
    if (!columns) return std::unexpected(columns.error());
    // cuda_gpu_kern_sum names kernels by demangledName unless asked for the base (short) name.
    const char* name = columns->contains("demangledName") ? "demangledName" : columns->contains("shortName") ? "shortName" : nullptr;
    if (name == nullptr) return fail(TraceErrorKind::kBadField, fmt::format("table {} has no column demangledName or shortName", kTable));
    return read_rows(kTable, fmt::format("SELECT start, end, deviceId, streamId, correlationId, {} FROM {}", name, kTable),
                     [&](sqlite3_stmt* row) -> std::expected<void, ColumnError> {
                       auto activity = activity_columns(row, EventCategory::kKernel);
                       if (!activity) return std::unexpected(activity.error());
                       auto name_id = integer_column(row, 5, "the kernel's name id");
                       if (!name_id) return std::unexpected(name_id.error());
                       activity->event.name = string_of(*name_id);
                       return emit(activity->event, activity->start, activity->end);
                     });
  }

  std::expected<void, TraceError> read_copies() {
    constexpr std::string_view kTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
    auto columns = require_columns(kTable, {"start", "end", "deviceId", "streamId", "correlationId", "copyKind", "bytes"});
    if (!columns) return std::unexpected(columns.error());
    return read_rows(kTable, fmt::format("SELECT start, end, deviceId, streamId, correlationId, copyKind, bytes FROM {}", kTable),
                     [&](sqlite3_stmt* row) -> std::expected<void, ColumnError> {
                       auto activity = activity_columns(row, EventCategory::kGpuMemcpy);
                       if (!activity) return std::unexpected(activity.error());
                       auto kind = integer_column(row, 5, "copyKind", 0);
                       if (!kind) return std::unexpected(kind.error());
                       auto bytes = integer_column(row, 6, "bytes", -1);
                       if (!bytes) return std::unexpected(bytes.error());
                       activity->event.name = memcpy_name(*kind);
                       activity->event.bytes = *bytes;
                       return emit(activity->event, activity->start, activity->end);
                     });
  }

  std::expected<void, TraceError> read_memsets() {
    constexpr std::string_view kTable = "CUPTI_ACTIVITY_KIND_MEMSET";
    auto columns = require_columns(kTable, {"start", "end", "deviceId", "streamId", "correlationId", "bytes"});
    if (!columns) return std::unexpected(columns.error());
    return read_rows(kTable, fmt::format("SELECT start, end, deviceId, streamId, correlationId, bytes FROM {}", kTable),
                     [&](sqlite3_stmt* row) -> std::expected<void, ColumnError> {
                       auto activity = activity_columns(row, EventCategory::kGpuMemset);
                       if (!activity) return std::unexpected(activity.error());
                       auto bytes = integer_column(row, 5, "bytes", -1);
                       if (!bytes) return std::unexpected(bytes.error());
                       activity->event.name = "Memset";
                       activity->event.bytes = *bytes;
                       return emit(activity->event, activity->start, activity->end);
                     });
  }

  // The launch side (start, duration, correlation id), the API's name (nameId) and its thread
  // (globalTid), where the export has them.
  std::expected<void, TraceError> read_runtime() {
    constexpr std::string_view kTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
    auto columns = require_columns(kTable, {"start", "end", "correlationId"});
    if (!columns) return std::unexpected(columns.error());
    const bool named = columns->contains("nameId");
    return read_rows(kTable,
                     fmt::format("SELECT start, end, correlationId, {}, {} FROM {}",
                                 columns->contains("globalTid") ? "globalTid" : "NULL", named ? "nameId" : "NULL", kTable),
                     [&](sqlite3_stmt* row) -> std::expected<void, ColumnError> {
                       auto start = integer_column(row, 0, "start");
                       auto end = integer_column(row, 1, "end");
                       auto correlation = integer_column(row, 2, "correlationId", -1);
                       auto global_tid = integer_column(row, 3, "globalTid", -1);
                       auto name_id = integer_column(row, 4, "nameId", -1);
                       for (const auto* v : {&start, &end, &correlation, &global_tid, &name_id}) {
                         if (!*v) return std::unexpected(v->error());
                       }
                       TraceEvent event;
                       event.category = EventCategory::kCudaRuntime;
                       event.correlation = *correlation;
                       event.tid = thread_of(*global_tid);
                       if (named && *name_id >= 0) event.name = string_of(*name_id);
                       return emit(event, *start, *end);
                     });
  }

  // nsys's globalTid packs the process and thread ids; the thread id is its low 24 bits.
  static std::int64_t thread_of(std::int64_t global_tid) { return global_tid < 0 ? -1 : global_tid & 0xFFFFFF; }

  // Ranges only; a range still open when the profile stopped (end NULL) has no length and is left out.
  // The text is inline (`text`) or registered (`textId` -> StringIds), depending on how it was made.
  std::expected<void, TraceError> read_nvtx() {
    constexpr std::string_view kTable = "NVTX_EVENTS";
    auto columns = require_columns(kTable, {"start", "end", "eventType"});
    if (!columns) return std::unexpected(columns.error());
    const bool inline_text = columns->contains("text");
    const bool registered = columns->contains("textId");
    const std::string text = inline_text && registered ? "coalesce(n.text, s.value)"
                             : inline_text             ? "n.text"
                             : registered              ? "s.value"
                                                       : "NULL";
    const std::string join = registered ? "LEFT JOIN StringIds s ON s.id = n.textId" : "";
    return read_rows(kTable,
                     fmt::format("SELECT n.start, n.end, {}, {} FROM {} n {} WHERE n.eventType IN ({}, {}) AND n.end IS NOT NULL",
                                 text, columns->contains("globalTid") ? "n.globalTid" : "NULL", kTable, join,
                                 kNvtxPushPopRange, kNvtxStartEndRange),
                     [&](sqlite3_stmt* row) -> std::expected<void, ColumnError> {
                       auto start = integer_column(row, 0, "start");
                       auto end = integer_column(row, 1, "end");
                       auto global_tid = integer_column(row, 3, "globalTid", -1);
                       for (const auto* v : {&start, &end, &global_tid}) {
                         if (!*v) return std::unexpected(v->error());
                       }
                       const auto* text_value = model::sqlite().column_text(row, 2);
                       TraceEvent event;
                       event.category = EventCategory::kUserAnnotation;
                       event.tid = thread_of(*global_tid);
                       if (text_value != nullptr) {
                         event.name = std::string_view(reinterpret_cast<const char*>(text_value),
                                                       static_cast<std::size_t>(model::sqlite().column_bytes(row, 2)));
                       }
                       return emit(event, *start, *end);
                     });
  }

  const std::string& file_;
  TraceEventSink& sink_;
  TraceHeader& header_;
  const NsysReadOptions& options_;
  sqlite3* db_ = nullptr;
  Statement string_lookup_;
  std::unordered_map<std::int64_t, std::string> strings_;
  std::vector<bool> launched_;  // by correlation id
  bool filter_calls_ = true;
  ParseSummary summary_;
};

}  // namespace

bool has_sqlite_magic(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::array<char, kSqliteMagic.size()> head{};
  in.read(head.data(), head.size());
  return in.gcount() == static_cast<std::streamsize>(head.size()) && std::string_view(head.data(), head.size()) == kSqliteMagic;
}

std::expected<ParseSummary, TraceError> read_nsys_report(const std::string& file, TraceEventSink& sink, TraceHeader& header,
                                                         const NsysReadOptions& options) {
  NsysReader reader(file, sink, header, options);
  return reader.read();
}

}  // namespace gpuscope::trace
