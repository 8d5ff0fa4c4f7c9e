#include "agent/web_config_watcher.h"

#include <sys/stat.h>

#include <fmt/format.h>

namespace gpuscope::agent {

WebConfigWatcher::WebConfigWatcher(std::string path, const http::WebConfig& current, Apply apply, Report report,
                                   log::Logger& log, std::chrono::milliseconds interval)
    : path_(std::move(path)), apply_(std::move(apply)), report_(std::move(report)), log_(log), interval_(interval) {
  stamps_ = stamps_of(path_, current);
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, interval_, [this] { return stopping_; });
      if (stopping_) break;
      lock.unlock();
      poll();
      lock.lock();
    }
  });
}

WebConfigWatcher::~WebConfigWatcher() { stop(); }

void WebConfigWatcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<WebConfigWatcher::FileStamp> WebConfigWatcher::stamps_of(const std::string& path, const http::WebConfig& config) {
  std::vector<FileStamp> out{{path}};
  if (config.tls) {
    for (const auto* s : {&config.tls->cert, &config.tls->key, &config.tls->client_ca}) {
      if (!s->file.empty()) out.push_back({s->file});
    }
  }
  restamp(out);
  return out;
}

void WebConfigWatcher::restamp(std::vector<FileStamp>& stamps) {
  for (auto& s : stamps) {
    struct stat st{};
    if (::stat(s.path.c_str(), &st) != 0) {
      s.mtime_ns = s.size = s.inode = -1;
      continue;
    }
    s.mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
    s.size = static_cast<long long>(st.st_size);
    s.inode = static_cast<long long>(st.st_ino);
  }
}

bool WebConfigWatcher::poll() {
  auto now = stamps_;
  restamp(now);
  if (now == stamps_) return false;
  // What is read next is judged against these stamps: a bad file is reported once, not every poll.
  stamps_ = now;
  auto fail = [&](const std::string& why) {
    log_.error("web config reload failed; keeping the previous settings", {{"err", why}});
    if (report_) report_(false);
    return true;
  };
  auto config = http::load_web_config(path_);
  if (!config) return fail(config.error());
  std::optional<http::TlsMaterial> tls;
  if (config->tls) {
    auto material = http::load_tls_material(*config->tls, path_);
    if (!material) return fail(material.error());
    tls = std::move(*material);
  }
  // The files the new config names (a cert_file renamed in it) are watched from now on.
  stamps_ = stamps_of(path_, *config);
  if (auto applied = apply_(*config, tls); !applied) return fail(fmt::format("{}: {}", path_, applied.error()));
  log_.info("web config reloaded", {{"file", path_},
                                    {"tls", tls ? "on" : "off"},
                                    {"basic_auth_users", std::to_string(config->basic_auth_users.size())}});
  if (report_) report_(true);
  return true;
}

}  // namespace gpuscope::agent
