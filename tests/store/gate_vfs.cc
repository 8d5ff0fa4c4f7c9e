#include "gate_vfs.h"

#include <sqlite3.h>

#include <chrono>
#include <stdexcept>

namespace gpuscope::store::testing {
namespace {

// A file of the gate VFS: the OS VFS's file object lives right after this header.
struct GateFile {
  sqlite3_file base;
  sqlite3_file* real;
};

sqlite3_vfs* os_vfs = nullptr;
sqlite3_vfs gate_vfs;
sqlite3_io_methods gate_methods;

sqlite3_file* real_of(sqlite3_file* f) { return reinterpret_cast<GateFile*>(f)->real; }

int gate_close(sqlite3_file* f) { return real_of(f)->pMethods->xClose(real_of(f)); }
int gate_read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
  return real_of(f)->pMethods->xRead(real_of(f), buf, n, off);
}
int gate_write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
  if (const int rc = GateVfs::instance().before_write(); rc != SQLITE_OK) return rc;
  return real_of(f)->pMethods->xWrite(real_of(f), buf, n, off);
}
int gate_truncate(sqlite3_file* f, sqlite3_int64 size) { return real_of(f)->pMethods->xTruncate(real_of(f), size); }
int gate_sync(sqlite3_file* f, int flags) { return real_of(f)->pMethods->xSync(real_of(f), flags); }
int gate_file_size(sqlite3_file* f, sqlite3_int64* size) { return real_of(f)->pMethods->xFileSize(real_of(f), size); }
int gate_lock(sqlite3_file* f, int l) { return real_of(f)->pMethods->xLock(real_of(f), l); }
int gate_unlock(sqlite3_file* f, int l) { return real_of(f)->pMethods->xUnlock(real_of(f), l); }
int gate_check_reserved(sqlite3_file* f, int* out) { return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out); }
int gate_file_control(sqlite3_file* f, int op, void* arg) { return real_of(f)->pMethods->xFileControl(real_of(f), op, arg); }
int gate_sector_size(sqlite3_file* f) { return real_of(f)->pMethods->xSectorSize(real_of(f)); }
int gate_device_characteristics(sqlite3_file* f) { return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f)); }
int gate_shm_map(sqlite3_file* f, int page, int size, int extend, void volatile** out) {
  return real_of(f)->pMethods->xShmMap(real_of(f), page, size, extend, out);
}
int gate_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
  return real_of(f)->pMethods->xShmLock(real_of(f), offset, n, flags);
}
void gate_shm_barrier(sqlite3_file* f) { real_of(f)->pMethods->xShmBarrier(real_of(f)); }
int gate_shm_unmap(sqlite3_file* f, int del) { return real_of(f)->pMethods->xShmUnmap(real_of(f), del); }
int gate_fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** out) {
  return real_of(f)->pMethods->xFetch(real_of(f), off, n, out);
}
int gate_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) { return real_of(f)->pMethods->xUnfetch(real_of(f), off, p); }

int gate_open(sqlite3_vfs*, sqlite3_filename name, sqlite3_file* file, int flags, int* out_flags) {
  auto* g = reinterpret_cast<GateFile*>(file);
  g->real = reinterpret_cast<sqlite3_file*>(g + 1);
  const int rc = os_vfs->xOpen(os_vfs, name, g->real, flags, out_flags);
  // SQLite calls xClose only when pMethods is set, so it is set only when the real open set its own.
  g->base.pMethods = g->real->pMethods != nullptr ? &gate_methods : nullptr;
  return rc;
}

}  // namespace

GateVfs::GateVfs() {
  os_vfs = sqlite3_vfs_find(nullptr);
  if (os_vfs == nullptr) throw std::runtime_error("no default SQLite VFS");
  // The OS VFS's other methods are used as they are (they see the same pAppData and limits).
  gate_vfs = *os_vfs;
  gate_vfs.pNext = nullptr;
  gate_vfs.zName = kGateVfsName;
  gate_vfs.szOsFile = static_cast<int>(sizeof(GateFile)) + os_vfs->szOsFile;
  gate_vfs.xOpen = gate_open;
  gate_methods = sqlite3_io_methods{3,
                                    gate_close,
                                    gate_read,
                                    gate_write,
                                    gate_truncate,
                                    gate_sync,
                                    gate_file_size,
                                    gate_lock,
                                    gate_unlock,
                                    gate_check_reserved,
                                    gate_file_control,
                                    gate_sector_size,
                                    gate_device_characteristics,
                                    gate_shm_map,
                                    gate_shm_lock,
                                    gate_shm_barrier,
                                    gate_shm_unmap,
                                    gate_fetch,
                                    gate_unfetch};
  sqlite3_vfs_register(&gate_vfs, 0);
}

GateVfs& GateVfs::instance() {
  static GateVfs vfs;
  return vfs;
}

void GateVfs::close_gate() {
  std::lock_guard lock(mutex_);
  closed_ = true;
}

void GateVfs::open_gate() {
  {
    std::lock_guard lock(mutex_);
    closed_ = false;
  }
  cv_.notify_all();
}

bool GateVfs::wait_until_held(int hang_guard_s) {
  std::unique_lock lock(mutex_);
  return cv_.wait_for(lock, std::chrono::seconds(hang_guard_s), [&] { return held_ > 0; });
}

int GateVfs::held() const {
  std::lock_guard lock(mutex_);
  return held_;
}

void GateVfs::fail_writes_with(int sqlite_code) {
  std::lock_guard lock(mutex_);
  fail_code_ = sqlite_code;
}

int GateVfs::before_write() {
  std::unique_lock lock(mutex_);
  if (closed_) {
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !closed_; });
    --held_;
  }
  return fail_code_;
}

}  // namespace gpuscope::store::testing
