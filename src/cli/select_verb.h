// `gpuscope select`: which GPUs a new job should get — the N least busy healthy ones, printed as
// CUDA_VISIBLE_DEVICES=... for a launch script (by UUID, which survives renumbering), or as JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/invocation.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::cli {

struct SelectOptions {
  std::size_t count = 1;
  std::optional<std::uint64_t> min_free_memory_bytes;
  std::optional<double> max_utilization_percent;
  std::string ids;  // -i: the candidates, resolved once the GPUs are known
  bool by_index = false;
  bool json = false;
};

// One GPU, or one MIG device of a GPU in MIG mode, as select judged it.
struct GpuCandidate {
  unsigned index = 0;  // the GPU's (a MIG device's parent)
  std::string uuid;    // "GPU-..." or, for a MIG device, "MIG-..." (what CUDA_VISIBLE_DEVICES takes)
  std::optional<unsigned> gpu_instance_id;  // set for a MIG device
  std::string mig_profile;                  // "3g.40gb" for a MIG device
  std::string pci_bus_id;
  std::optional<double> utilization_percent;
  std::optional<double> memory_free_mib;
  std::optional<std::size_t> compute_processes;  // absent when the process list could not be read
  std::vector<std::string> reasons;              // why it does not qualify; empty when it does
};

struct GpuSelection {
  std::vector<GpuCandidate> chosen;      // best first
  std::vector<GpuCandidate> not_chosen;  // qualified, but `count` better ones were found
  std::vector<GpuCandidate> left_out;    // did not qualify (reasons set), in index order
  bool enough = false;                   // chosen.size() == count
};

// Healthy (kCriticalHealthChecks pass, up, not in MIG mode) and within the limits qualify; among them,
// GPUs without compute processes first, then the lowest utilization, then the most free memory. A GPU
// in MIG mode is left out and its MIG devices are candidates instead (their memory, their processes,
// their graphics-engine activity as utilization), only for --count 1 by UUID: a CUDA process uses one
// MIG device, and names it by its MIG UUID.
GpuSelection select_least_busy(const model::Snapshot& snapshot, std::span<const model::GpuInfo> gpus,
                               const SelectOptions& options);

// "CUDA_VISIBLE_DEVICES=GPU-...,GPU-..." (or indices with by_index), quoted for a POSIX shell where an id
// holds anything but letters, digits and "-_.:".
std::string cuda_visible_devices_line(const GpuSelection& selection, bool by_index);

std::expected<SelectOptions, ParseExit> parse_select_args(std::span<const std::string> args);
int run_select(std::span<const std::string> args, const Invocation& inv);

}  // namespace gpuscope::cli
