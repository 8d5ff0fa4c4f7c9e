// GateVfs: a SQLite VFS over the operating system's that a test controls, standing in for a disk that
// blocks (every write waits at a gate until the test opens it) or fails (every write returns an error
// code, as SQLite reports ENOSPC or EIO). A store opened with TsdbOptions::sqlite_vfs = kGateVfsName
// goes through it; reads are never held.
#pragma once

#include <condition_variable>
#include <mutex>

namespace gpuscope::store::testing {

inline constexpr const char* kGateVfsName = "gpuscope-test-gate";

class GateVfs {
 public:
  // The one instance, registered with SQLite on first use.
  static GateVfs& instance();

  // Writes wait from now on, until open_gate().
  void close_gate();
  void open_gate();
  // Waits until a write is held at the closed gate. Returns false after `hang_guard_s` real seconds
  // (a broken test would otherwise hang; no test relies on how fast this happens).
  bool wait_until_held(int hang_guard_s = 60);
  int held() const;

  // Writes fail with `sqlite_code` (SQLITE_FULL is what SQLite returns for ENOSPC) from now on; 0
  // (the default) lets them through.
  void fail_writes_with(int sqlite_code);

  // Called by the VFS's write: waits while the gate is closed, then the code to return (0: write).
  int before_write();

 private:
  GateVfs();
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool closed_ = false;
  int held_ = 0;
  int fail_code_ = 0;
};

}  // namespace gpuscope::store::testing
