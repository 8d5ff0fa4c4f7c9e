// WebConfigWatcher: re-reads `serve --web.config.file` when the file, or a certificate, key or CA file
// it names, changes (mtime, size or inode: a rename over the file, as cert-manager and kubelet's
// secret volumes do, counts), so certificates rotate without a restart. A file that no longer loads
// keeps the previous settings and is logged once per change.
#pragma once

#include <chrono>
#include <condition_variable>
#include <expected>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "http/tls_material.h"
#include "http/web_config.h"
#include "log/logger.h"

namespace gpuscope::agent {

class WebConfigWatcher {
 public:
  // A stat() of a few files this often: nothing to measure, and a rotated certificate is in use within it.
  static constexpr std::chrono::seconds kPollInterval{1};

  // Puts a loaded config to use; an error (one line) means the previous settings stay.
  using Apply = std::function<std::expected<void, std::string>(const http::WebConfig&, const std::optional<http::TlsMaterial>&)>;
  // Called after each reload attempt: whether it succeeded.
  using Report = std::function<void(bool success)>;

  WebConfigWatcher(std::string path, const http::WebConfig& current, Apply apply, Report report, log::Logger& log,
                   std::chrono::milliseconds interval = kPollInterval);
  ~WebConfigWatcher();  // stop()
  WebConfigWatcher(const WebConfigWatcher&) = delete;
  WebConfigWatcher& operator=(const WebConfigWatcher&) = delete;

  // One look at the files; reloads when they changed. True when a reload was attempted.
  bool poll();
  void stop();

 private:
  struct FileStamp {
    std::string path;
    long long mtime_ns = -1, size = -1, inode = -1;
    bool operator==(const FileStamp&) const = default;
  };
  static std::vector<FileStamp> stamps_of(const std::string& path, const http::WebConfig& config);
  static void restamp(std::vector<FileStamp>& stamps);

  std::string path_;
  Apply apply_;
  Report report_;
  log::Logger& log_;
  std::chrono::milliseconds interval_;
  std::vector<FileStamp> stamps_;  // of the files as last read (good or bad)
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuscope::agent
