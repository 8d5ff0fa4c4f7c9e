#include "nvml/process_resolver.h"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_set>
#include <vector>

namespace gpuscope::nvml {
namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string user_name(uid_t uid) {
  passwd pw{};
  passwd* result = nullptr;
  std::vector<char> buf(4096);
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr) return pw.pw_name;
  return std::to_string(uid);
}

bool is_hex_id(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(c) && !std::isupper(c); });
}

}  // namespace

ProcessResolver::ProcessResolver(std::string proc_root, std::function<std::optional<model::ProcessIdentity>(unsigned)> fallback)
    : proc_root_(std::move(proc_root)), fallback_(std::move(fallback)) {}

model::ProcessIdentity ProcessResolver::resolve(unsigned pid) {
  if (auto it = cache_.find(pid); it != cache_.end()) return it->second;
  auto identity = read(pid);
  cache_.emplace(pid, identity);
  return identity;
}

void ProcessResolver::retain_only(const std::vector<unsigned>& live) {
  std::unordered_set<unsigned> keep(live.begin(), live.end());
  std::erase_if(cache_, [&](const auto& kv) { return !keep.contains(kv.first); });
}

model::ProcessIdentity ProcessResolver::read(unsigned pid) const {
  model::ProcessIdentity id;
  // The simulator's pids live in no PID namespace here: it is the authority for them, and a host
  // process that happens to have the same pid must not lend them its name.
  if (fallback_) {
    if (auto simulated = fallback_(pid)) return *simulated;
  }
  const std::string dir = proc_root_ + "/" + std::to_string(pid);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return id;  // not in this PID namespace
  id.visible = true;
  id.user = user_name(st.st_uid);
  if (auto comm = read_file(dir + "/comm")) {
    id.name = *comm;
    while (!id.name.empty() && (id.name.back() == '\n' || id.name.back() == '\r')) id.name.pop_back();
  }
  if (auto cmdline = read_file(dir + "/cmdline")) {
    std::string s = *cmdline;
    while (!s.empty() && s.back() == '\0') s.pop_back();
    std::replace(s.begin(), s.end(), '\0', ' ');
    id.command_line = s;
  }
  if (auto cgroup = read_file(dir + "/cgroup")) {
    id.container_id = container_id_from_cgroup(*cgroup);
    id.pod_uid = pod_uid_from_cgroup(*cgroup);
  }
  return id;
}

std::string ProcessResolver::container_id_from_cgroup(const std::string& text) {
  std::string found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // "0::/system.slice/docker-<id>.scope", "12:memory:/kubepods/burstable/pod<uid>/<id>",
    // ".../cri-containerd-<id>.scope", ".../crio-<id>.scope", ".../libpod-<id>.scope".
    std::size_t start = 0;
    while (start <= line.size()) {
      std::size_t end = line.find_first_of("/-:.", start);
      if (end == std::string::npos) end = line.size();
      std::string_view part(line.data() + start, end - start);
      if (is_hex_id(part)) found = std::string(part);
      start = end + 1;
    }
  }
  return found;
}

std::string ProcessResolver::pod_uid_from_cgroup(const std::string& text) {
  // "pod" then a UUID, 8-4-4-4-12 hex digits separated by '-' (cgroupfs) or '_' (the systemd driver).
  constexpr std::size_t kUuidLength = 36;
  auto uuid_at = [&](std::size_t at) -> std::string {
    if (at + kUuidLength > text.size()) return {};
    std::string out = text.substr(at, kUuidLength);
    for (std::size_t i = 0; i < kUuidLength; ++i) {
      const char c = out[i];
      if (i == 8 || i == 13 || i == 18 || i == 23) {
        if (c != '-' && c != '_') return {};
        out[i] = '-';
      } else if (!std::isxdigit(static_cast<unsigned char>(c))) {
        return {};
      }
    }
    // The UUID ends the path element: "/", ".slice", or the line's end.
    const std::size_t after = at + kUuidLength;
    if (after < text.size() && text[after] != '/' && text[after] != '.' && text[after] != '\n') return {};
    return out;
  };
  for (std::size_t at = text.find("pod"); at != std::string::npos; at = text.find("pod", at + 1)) {
    // Only a path element that starts with "pod" ("/pod<uid>", "-pod<uid>"): not "kubepods".
    if (at > 0 && text[at - 1] != '/' && text[at - 1] != '-') continue;
    if (std::string uid = uuid_at(at + 3); !uid.empty()) return uid;
  }
  return {};
}

}  // namespace gpuscope::nvml
