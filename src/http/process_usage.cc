#include "http/process_usage.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

namespace gpuscope::http {

std::optional<exporter::ProcessUsage> read_process_usage(const std::string& proc_root) try {
  std::ifstream stat_file(proc_root + "/self/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return std::nullopt;
  // Fields after the command name, which is in parentheses and may hold spaces.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(rest), std::istream_iterator<std::string>()};
  // f[0] is field 3 (state): field N is f[N - 3].
  if (f.size() < 22) return std::nullopt;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  exporter::ProcessUsage u;
  u.cpu_seconds = (std::stod(f[14 - 3]) + std::stod(f[15 - 3])) / ticks;
  u.virtual_memory_bytes = std::stod(f[23 - 3]);
  u.resident_memory_bytes = std::stod(f[24 - 3]) * page;
  double boot_time = 0;
  std::ifstream proc_stat(proc_root + "/stat");
  for (std::string line; std::getline(proc_stat, line);) {
    if (line.starts_with("btime ")) boot_time = std::stod(line.substr(6));
  }
  u.start_time_seconds = boot_time + std::stod(f[22 - 3]) / ticks;
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator(proc_root + "/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  u.open_fds = fds;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) u.max_fds = static_cast<double>(lim.rlim_cur);
  return u;
} catch (const std::exception&) {
  return std::nullopt;  // a /proc that does not read as Linux's
}

}  // namespace gpuscope::http
