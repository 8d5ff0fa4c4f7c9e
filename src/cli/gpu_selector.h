// `-i` for every verb: comma-separated GPU indices, UUIDs or PCI bus ids (in any of NVML's spellings),
// resolved against the discovered GPUs, and the pairing of the chosen GPUs with a Snapshot's samples.
#pragma once

#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "export/gpu_view.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::cli {

// Checks the list's shape before any GPU is known; the error is a one-line usage message.
std::expected<std::vector<std::string>, std::string> split_gpu_ids(std::string_view list);

// Positions into `gpus` of the GPUs `list` names, in discovery (index) order, each once; every GPU when
// `list` is empty. The error is the first id that names no GPU.
std::expected<std::vector<std::size_t>, std::string> select_gpus(std::string_view list,
                                                                 std::span<const model::GpuInfo> gpus);

// The chosen GPUs paired with their samples in `snapshot`. A GPU the snapshot lacks is shown as down.
std::vector<exporter::GpuView> views_of(std::span<const model::GpuInfo> gpus, const model::Snapshot& snapshot,
                                        std::span<const std::size_t> selected);

}  // namespace gpuscope::cli
