#include "remote_write/send_cursor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/file_text.h"

namespace gpuscope::remote_write {

namespace {

// The file is named by a hash of the whole URL: two receivers on one host differ, and no credential
// in the URL reaches a file name.
std::string cursor_file_name(const std::string& url) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : url) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}.json", h);
}

std::expected<void, std::string> write_whole(const std::filesystem::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return std::unexpected(fmt::format("{}: {}", path.string(), std::strerror(error)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return std::unexpected(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  return {};
}

}  // namespace

SendCursor::SendCursor(std::filesystem::path data_dir, const std::string& url, std::string display_url)
    : display_url_(std::move(display_url)) {
  if (!data_dir.empty()) path_ = data_dir / "remote_write" / cursor_file_name(url);
}

std::expected<std::optional<std::int64_t>, std::string> SendCursor::load() const {
  if (path_.empty()) return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) return std::nullopt;
  auto text = model::read_file_text(path_.string());
  if (!text) return std::unexpected(fmt::format("{}: {}", path_.string(), text.error()));
  const auto json = nlohmann::json::parse(*text, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("cursor_ms") || !json["cursor_ms"].is_number_integer()) {
    return std::unexpected(fmt::format("{}: not a remote-write cursor file", path_.string()));
  }
  return json["cursor_ms"].get<std::int64_t>();
}

std::expected<void, std::string> SendCursor::save(std::int64_t cursor_ms) {
  if (path_.empty()) return {};
  std::error_code ec;
  std::filesystem::create_directories(path_.parent_path(), ec);
  if (ec) return std::unexpected(fmt::format("{}: {}", path_.parent_path().string(), ec.message()));
  const nlohmann::json json = {{"url", display_url_}, {"cursor_ms", cursor_ms}};
  std::filesystem::path tmp = path_;
  tmp += ".tmp";
  if (auto written = write_whole(tmp, json.dump() + "\n"); !written) return written;
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    return std::unexpected(fmt::format("{}: rename: {}", path_.string(), std::strerror(errno)));
  }
  return {};
}

}  // namespace gpuscope::remote_write
