// DataDirLock: one agent per data directory. Two writers would interleave readings and reject each
// other's, so the agent holds an exclusive flock on <dir>/lock (with its pid in it) for its life.
#pragma once

#include <expected>
#include <memory>
#include <string>

namespace gpuscope::agent {

class DataDirLock {
 public:
  // Creates the directory if missing and takes the lock; the error names what failed, or which pid
  // holds the lock.
  static std::expected<std::unique_ptr<DataDirLock>, std::string> acquire(const std::string& dir);
  ~DataDirLock();  // releases the lock (on _Exit the kernel does)
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpuscope::agent
