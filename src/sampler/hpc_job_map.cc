#include "sampler/hpc_job_map.h"

#include <charconv>
#include <filesystem>
#include <fstream>

namespace gpuscope::sampler {

std::map<unsigned, std::vector<std::string>> HpcJobMap::read(std::string* error) const {
  std::map<unsigned, std::vector<std::string>> jobs;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir_, ec);
  if (ec) {
    if (error != nullptr) *error = dir_ + ": " + ec.message();
    return jobs;
  }
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    unsigned index = 0;
    const auto [end, parse] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (parse != std::errc() || end != name.data() + name.size() || !it->is_regular_file(ec)) continue;
    std::ifstream in(it->path());
    for (std::string line; std::getline(in, line);) {
      const auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos) continue;
      const auto e = line.find_last_not_of(" \t\r");
      jobs[index].push_back(line.substr(b, e - b + 1));
    }
  }
  if (error != nullptr) error->clear();
  return jobs;
}

void HpcJobMap::label(model::Snapshot& snapshot, std::string* error) const {
  auto jobs = read(error);
  for (auto& g : snapshot.gpus) {
    auto it = jobs.find(g.index);
    g.hpc_jobs = it == jobs.end() ? std::vector<std::string>{} : std::move(it->second);
  }
}

}  // namespace gpuscope::sampler
