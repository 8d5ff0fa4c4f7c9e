// SendCursor: how far one receiver has acknowledged the agent's history (every sample with t <= the
// cursor), kept in <data dir>/remote_write/<receiver>.json and replaced atomically (a new file renamed
// over the old one) after each acknowledged request, so a restart, a kill -9 included, resumes where the
// receiver stands. Not fsynced: a catch-up acknowledges hundreds of requests a second, and a kill -9
// loses nothing the kernel holds; after a power loss the cursor may be a little older, and the receiver
// rejects that resent stretch as out of order (counted failed, no gap).
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>

namespace gpuscope::remote_write {

class SendCursor {
 public:
  // The cursor file of the receiver with this URL under `data_dir` (empty: kept in memory only).
  SendCursor(std::filesystem::path data_dir, const std::string& url, std::string display_url);

  // The persisted cursor; nullopt when there is none (a new receiver). An unreadable or damaged file is
  // an error: the caller decides (the agent logs it and starts from now).
  std::expected<std::optional<std::int64_t>, std::string> load() const;
  // Writes the file (a temporary one renamed over it).
  std::expected<void, std::string> save(std::int64_t cursor_ms);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;  // empty: no data directory
  std::string display_url_;
};

}  // namespace gpuscope::remote_write
