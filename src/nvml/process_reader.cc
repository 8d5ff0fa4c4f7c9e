#include "nvml/process_reader.h"

#include <algorithm>
#include <climits>

#include "nvml/nvml_library.h"
#include "nvml/process_resolver.h"

namespace gpuscope::nvml {
namespace {

// NVML's "value not available" marker for a process's memory (e.g. under MIG without privileges).
constexpr unsigned long long kProcessMemoryNotAvailable = ~0ULL;

bool process_reader_unsupported(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

// A process list in one call with room for kProcessListRoom entries; more processes than that answer
// INSUFFICIENT_SIZE with the count (NVML's count-probe protocol), and the read is retried with room for
// them (also when the list grew in between).
constexpr unsigned kProcessListRoom = 16;
template <class Info, class Fn>
nvmlReturn_t read_process_list(Fn fn, nvmlDevice_t d, std::vector<Info>& out) {
  out.resize(kProcessListRoom);
  unsigned count = kProcessListRoom;
  nvmlReturn_t rc = fn(d, &count, out.data());
  if (rc == NVML_SUCCESS) {
    out.resize(std::min(count, kProcessListRoom));
    return rc;
  }
  for (int attempt = 0; attempt < 5 && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    out.resize(count + 4);  // headroom: processes start between the probe and the read
    count = static_cast<unsigned>(out.size());
    rc = fn(d, &count, out.data());
    if (rc == NVML_SUCCESS) out.resize(count);
  }
  return rc;
}

}  // namespace

void ProcessReader::reset() {
  capacity_ = 0;
  read_at_.reset();
  pids_at_read_.clear();
}

void ProcessReader::read(nvmlDevice_t device, model::GpuSample& g, ProcessResolver& resolver,
                         const std::function<void(nvmlReturn_t)>& mark) {
  const NvmlLibrary& L = library_;
  struct Entry {
    unsigned pid;
    unsigned long long mem;
    unsigned gi, ci;
  };
  auto collect = [&](auto fn_v3, auto fn_v2, auto fn_v1, model::ProcessKind kind) -> nvmlReturn_t {
    std::vector<Entry> entries;
    nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
    // Newest first. Some drivers ship a symbol yet answer FUNCTION_NOT_FOUND (535.98 for _v3):
    // then the next older one is asked. Entries are kept only from the call that succeeded.
    if (fn_v3 != nullptr) {
      std::vector<nvmlProcessInfo_t> list;
      rc = read_process_list(fn_v3, device, list);
      if (rc == NVML_SUCCESS) {
        for (const auto& p : list) entries.push_back({p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId});
      }
    }
    if (process_reader_unsupported(rc) && fn_v2 != nullptr) {
      std::vector<nvmlProcessInfo_t> list;
      rc = read_process_list(fn_v2, device, list);
      if (rc == NVML_SUCCESS) {
        for (const auto& p : list) entries.push_back({p.pid, p.usedGpuMemory, p.gpuInstanceId, p.computeInstanceId});
      }
    }
    if (process_reader_unsupported(rc) && fn_v1 != nullptr) {
      std::vector<nvmlProcessInfo_v1_t> list;
      rc = read_process_list(fn_v1, device, list);
      if (rc == NVML_SUCCESS) {
        for (const auto& p : list) entries.push_back({p.pid, p.usedGpuMemory, UINT_MAX, UINT_MAX});
      }
    }
    mark(rc);
    if (rc != NVML_SUCCESS) return rc;
    for (const auto& e : entries) {
      auto it = std::find_if(g.processes.begin(), g.processes.end(), [&](const auto& p) { return p.pid == e.pid; });
      if (it != g.processes.end()) {
        it->kind = model::ProcessKind::kComputeAndGraphics;
        continue;
      }
      model::ProcessSample p;
      p.pid = e.pid;
      p.kind = kind;
      if (e.mem != kProcessMemoryNotAvailable) p.used_memory_bytes = e.mem;
      if (e.gi != UINT_MAX) p.gpu_instance_id = e.gi;
      if (e.ci != UINT_MAX) p.compute_instance_id = e.ci;
      g.processes.push_back(std::move(p));
    }
    return rc;
  };
  nvmlReturn_t compute = collect(L.nvmlDeviceGetComputeRunningProcesses_v3, L.nvmlDeviceGetComputeRunningProcesses_v2,
                                 L.nvmlDeviceGetComputeRunningProcesses, model::ProcessKind::kCompute);
  nvmlReturn_t graphics =
      collect(L.nvmlDeviceGetGraphicsRunningProcesses_v3, L.nvmlDeviceGetGraphicsRunningProcesses_v2,
              L.nvmlDeviceGetGraphicsRunningProcesses, model::ProcessKind::kGraphics);
  if (compute != NVML_SUCCESS && !process_reader_unsupported(compute)) g.processes_error_code = static_cast<int>(compute);
  if (graphics != NVML_SUCCESS && !process_reader_unsupported(graphics) && !g.processes_error_code) {
    g.processes_error_code = static_cast<int>(graphics);
  }

  read_utilization(device, g, mark);
  std::unordered_map<unsigned, std::pair<unsigned, unsigned>> still_running;
  for (auto& p : g.processes) {
    if (auto it = util_.find(p.pid); it != util_.end()) {
      p.sm_util_percent = it->second.first;
      p.mem_util_percent = it->second.second;
      still_running.insert(*it);
    }
    p.identity = resolver.resolve(p.pid);
  }
  util_ = std::move(still_running);
}

void ProcessReader::read_utilization(nvmlDevice_t device, model::GpuSample& g,
                                     const std::function<void(nvmlReturn_t)>& mark) {
  const NvmlLibrary& L = library_;
  if (L.nvmlDeviceGetProcessUtilization == nullptr || g.processes.empty() || g.mig_enabled) return;
  std::vector<unsigned> pids;
  pids.reserve(g.processes.size());
  for (const auto& p : g.processes) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  const bool due = [&] {
    if (interval_.count() == 0 || !read_at_) return true;
    if (!std::includes(pids_at_read_.begin(), pids_at_read_.end(), pids.begin(), pids.end())) return true;
    const auto now = now_();
    return now < *read_at_ || now - *read_at_ >= interval_;  // a clock set back is no reason to wait
  }();
  if (!due) return;
  read_at_ = now_();
  pids_at_read_ = std::move(pids);
  // Room for as many samples as last time or one per process, whichever is more: usually one call.
  // Too little room answers INSUFFICIENT_SIZE with the count needed, and the read is retried.
  std::vector<nvmlProcessUtilizationSample_t> samples(std::max<std::size_t>(capacity_, g.processes.size()) + 4);
  unsigned count = static_cast<unsigned>(samples.size());
  nvmlReturn_t rc = L.nvmlDeviceGetProcessUtilization(device, samples.data(), &count, last_seen_us_);
  for (int attempt = 0; attempt < 5 && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    samples.resize(count + 4);
    count = static_cast<unsigned>(samples.size());
    rc = L.nvmlDeviceGetProcessUtilization(device, samples.data(), &count, last_seen_us_);
  }
  mark(rc);
  if (rc != NVML_SUCCESS) return;
  samples.resize(count);
  capacity_ = count;
  // Keep each pid's newest sample; a pid with no new sample keeps its last known figures.
  std::unordered_map<unsigned, unsigned long long> newest;
  for (const auto& u : samples) {
    if (u.timeStamp >= newest[u.pid]) {
      newest[u.pid] = u.timeStamp;
      util_[u.pid] = {u.smUtil, u.memUtil};
    }
    last_seen_us_ = std::max(last_seen_us_, u.timeStamp);
  }
}

}  // namespace gpuscope::nvml
