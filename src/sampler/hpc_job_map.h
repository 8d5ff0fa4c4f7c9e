// HpcJobMap: which batch jobs use which GPU, as an HPC scheduler's prolog/epilog scripts record it for
// dcgm-exporter: a directory with one file per GPU, named by its index, holding one job ID per line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model/snapshot.h"

namespace gpuscope::sampler {

class HpcJobMap {
 public:
  explicit HpcJobMap(std::string dir) : dir_(std::move(dir)) {}

  // GPU index → job IDs. Files whose name is not a GPU index, sub-directories and blank lines are
  // ignored; a missing or unreadable directory gives no jobs and sets `error`.
  std::map<unsigned, std::vector<std::string>> read(std::string* error = nullptr) const;

  // Sets every GPU's hpc_jobs in `snapshot`; the read's error, if any, in `error`.
  void label(model::Snapshot& snapshot, std::string* error = nullptr) const;

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace gpuscope::sampler
