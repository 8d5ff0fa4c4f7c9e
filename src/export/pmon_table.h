// `gpuscope pmon`: nvidia-smi pmon's scrolling per-process table. Layout of nvidia-smi 580
// (../shared/reference/real-h100/nvidia-smi/pmon.txt and pmon -s um output seen elsewhere):
//   # gpu         pid   type     sm    mem    enc    dec    jpg    ofa     fb   ccpm    command 
//   # Idx           #    C/G      %      %      %      %      %      %     MB     MB    name 
//       0     883875     G      -      -      -      -      -      -    112      -    Xorg           
// The rows sit 1-2 characters left of the header cells, as nvidia-smi's do; the command is its first 15
// characters, padded to 15. A GPU without processes gets one row of '-'.
#pragma once

#include <chrono>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "export/time_columns.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

// One process on one GPU in one interval. An engine figure is absent ('-') when NVML had no sample for
// the process in the interval (an idle process) or does not report it (jpg/ofa from older drivers).
struct PmonProcessRow {
  unsigned pid = 0;
  model::ProcessKind kind = model::ProcessKind::kCompute;
  std::optional<unsigned> sm, mem, enc, dec, jpg, ofa;
  std::optional<double> fb_mib;    // the process's device memory
  std::optional<double> ccpm_mib;  // its confidential-compute protected memory
  std::string command;             // the process name
};

// The letter -s could not use (one character, or "" for an empty list).
struct UnknownPmonGroup {
  std::string letter;
};

class PmonTable {
 public:
  // u: sm mem enc dec jpg ofa; m: fb ccpm. Groups in the order of the letters, as dmon's (nvidia-smi's
  // dmon does so; its pmon is taken to do the same).
  static std::expected<PmonTable, UnknownPmonGroup> from_groups(std::string_view letters);
  static constexpr std::string_view kAllGroups = "um";

  std::string header(TimeColumns time = {}) const;
  // The rows of GPU `gpu_index` for one interval (one '-' row when `processes` is empty); `when` fills
  // the Date/Time columns.
  std::string rows(TimeColumns time, std::chrono::system_clock::time_point when, unsigned gpu_index,
                   std::span<const PmonProcessRow> processes) const;

 private:
  PmonTable(bool utilization, bool memory, bool memory_first)
      : utilization_(utilization), memory_(memory), memory_first_(memory_first) {}
  bool utilization_;
  bool memory_;
  bool memory_first_;
};

// nvidia-smi's type column: C compute, G graphics, C+G both.
std::string_view pmon_type(model::ProcessKind kind);

}  // namespace gpuscope::exporter
