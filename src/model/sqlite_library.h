// SQLite, opened with dlopen by what opens a database (the store's persisted history, `gpuscope trace` on an
// Nsight Systems export) rather than linked: `serve --no-history` and most verbs never open one, and a linked
// libsqlite3 cost each of them ~0.25 MB resident and its relocations at start-up (issue 23). Types and
// constants come from <sqlite3.h>. Header-only: gpuscope_trace links nothing of gpuscope_model.
#pragma once

#include <sqlite3.h>

#include <expected>
#include <string>

#include "model/optional_library.h"

namespace gpuscope::model {

// The functions gpuscope calls, by their SQLite names less "sqlite3_", with the header's own types
// (decltype names no symbol, so nothing is linked).
struct SqliteApi {
  decltype(&::sqlite3_open_v2) open_v2;
  decltype(&::sqlite3_close_v2) close_v2;
  decltype(&::sqlite3_busy_timeout) busy_timeout;
  decltype(&::sqlite3_exec) exec;
  decltype(&::sqlite3_free) free;
  decltype(&::sqlite3_errmsg) errmsg;
  decltype(&::sqlite3_errcode) errcode;
  decltype(&::sqlite3_changes) changes;
  decltype(&::sqlite3_prepare_v2) prepare_v2;
  decltype(&::sqlite3_step) step;
  decltype(&::sqlite3_reset) reset;
  decltype(&::sqlite3_finalize) finalize;
  decltype(&::sqlite3_clear_bindings) clear_bindings;
  decltype(&::sqlite3_bind_int64) bind_int64;
  decltype(&::sqlite3_bind_text) bind_text;
  decltype(&::sqlite3_bind_blob) bind_blob;
  decltype(&::sqlite3_column_type) column_type;
  decltype(&::sqlite3_column_int64) column_int64;
  decltype(&::sqlite3_column_text) column_text;
  decltype(&::sqlite3_column_bytes) column_bytes;
  decltype(&::sqlite3_column_blob) column_blob;
};

// libsqlite3 loaded (once, thread-safely), or one line saying why it cannot be. Never unloaded.
inline std::expected<const SqliteApi*, std::string> sqlite_api() {
  return OptionalLibrary::once(+[]() -> std::expected<SqliteApi, std::string> {
    auto library = OptionalLibrary::open({"libsqlite3.so.0"}, "SQLite (libsqlite3-0)");
    if (!library) return std::unexpected(library.error());
    SqliteApi api{};
    library->bind("sqlite3_open_v2", api.open_v2);
    library->bind("sqlite3_close_v2", api.close_v2);
    library->bind("sqlite3_busy_timeout", api.busy_timeout);
    library->bind("sqlite3_exec", api.exec);
    library->bind("sqlite3_free", api.free);
    library->bind("sqlite3_errmsg", api.errmsg);
    library->bind("sqlite3_errcode", api.errcode);
    library->bind("sqlite3_changes", api.changes);
    library->bind("sqlite3_prepare_v2", api.prepare_v2);
    library->bind("sqlite3_step", api.step);
    library->bind("sqlite3_reset", api.reset);
    library->bind("sqlite3_finalize", api.finalize);
    library->bind("sqlite3_clear_bindings", api.clear_bindings);
    library->bind("sqlite3_bind_int64", api.bind_int64);
    library->bind("sqlite3_bind_text", api.bind_text);
    library->bind("sqlite3_bind_blob", api.bind_blob);
    library->bind("sqlite3_column_type", api.column_type);
    library->bind("sqlite3_column_int64", api.column_int64);
    library->bind("sqlite3_column_text", api.column_text);
    library->bind("sqlite3_column_bytes", api.column_bytes);
    library->bind("sqlite3_column_blob", api.column_blob);
    return library->finish(api);
  });
}

// The loaded API, for what holds a database handle: every handle came from open_v2, so sqlite_api() succeeded.
inline const SqliteApi& sqlite() { return **sqlite_api(); }

}  // namespace gpuscope::model
