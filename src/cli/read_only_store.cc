#include "cli/read_only_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <limits>
#include <optional>
#include <ostream>

namespace gpuscope::cli {
namespace {

// Whether an agent holds the data directory's lock (serve takes it with flock for its whole life and
// writes its pid in it); its pid, or nullopt. The lock file is only opened, never created.
std::optional<std::string> live_agent(const std::string& data_dir) {
  const std::string path = data_dir + "/lock";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> pid;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    char text[32] = {0};
    const auto n = ::pread(fd, text, sizeof text - 1, 0);
    std::string who = n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string("?");
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    pid = who;
  }
  ::close(fd);  // also releases a shared lock taken above
  return pid;
}

}  // namespace

std::expected<std::unique_ptr<store::Tsdb>, int> open_read_only_store(const std::string& data_dir,
                                                                      const Invocation& inv, std::int64_t now_ms) {
  std::error_code ec;
  if (!std::filesystem::exists(data_dir, ec)) {
    inv.err << "gpuscope: --data-dir " << data_dir << ": no such directory\n";
    return std::unexpected(kExitUsage);
  }
  if (!std::filesystem::is_directory(data_dir, ec)) {
    inv.err << "gpuscope: --data-dir " << data_dir << ": not a directory\n";
    return std::unexpected(kExitUsage);
  }
  // Read-only commands never create a store: a directory without one is not a data directory.
  if (!std::filesystem::exists(std::filesystem::path(data_dir) / store::kChunkDatabaseFileName, ec)) {
    inv.err << "gpuscope: --data-dir " << data_dir << ": holds no history (no " << store::kChunkDatabaseFileName
            << "; is it the directory an agent's --data-dir names?)\n";
    return std::unexpected(kExitUsage);
  }
  if (auto pid = live_agent(data_dir)) {
    inv.err << "gpuscope: note: an agent (pid " << *pid << ") is recording into " << data_dir
            << "; its newest readings (up to its --flush-interval, 60s by default) are only in its memory: "
               "--url with its address (e.g. http://127.0.0.1:9400) includes them\n";
  }
  store::TsdbOptions so;
  so.data_dir = data_dir;
  so.read_only = true;
  so.warn = [&inv](std::string_view what) { inv.err << "gpuscope: warning: damaged chunk skipped: " << what << '\n'; };
  // Reading must not shorten the agent's history: retention is the agent's business.
  so.retention_ms = std::numeric_limits<std::int64_t>::max() / 4;
  auto tsdb = store::Tsdb::open(std::move(so), now_ms);
  if (!tsdb) {
    inv.err << "gpuscope: --data-dir " << data_dir << ": " << tsdb.error() << '\n';
    return std::unexpected(kExitRuntime);
  }
  return std::move(*tsdb);
}

}  // namespace gpuscope::cli
