#include "cli/gpu_selector.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>

#include "analysis/kernel_xid_log.h"
#include "export/gpu_query.h"

namespace gpuscope::cli {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool names(std::string_view id, const model::GpuInfo& gpu) {
  if (all_digits(id)) {
    unsigned index = 0;
    auto [ptr, ec] = std::from_chars(id.data(), id.data() + id.size(), index);
    return ec == std::errc{} && ptr == id.data() + id.size() && index == gpu.index;
  }
  if (!gpu.uuid.empty() && iequals(id, gpu.uuid)) return true;
  if (gpu.pci_bus_id.empty()) return false;
  if (iequals(id, gpu.pci_bus_id)) return true;
  // NVML writes "00000000:18:00.0", users "0000:18:00.0" or "18:00.0": compared as numbers, the
  // function included (a bus id names one).
  const auto wanted = analysis::parse_pci_address(id);
  const auto have = analysis::parse_pci_address(gpu.pci_bus_id);
  return wanted && have && wanted->function && *wanted == *have && wanted->function == have->function;
}

}  // namespace

std::expected<std::vector<std::string>, std::string> split_gpu_ids(std::string_view list) {
  std::vector<std::string> ids;
  for (std::string_view id : exporter::split_name_list(list)) {
    if (id.empty()) return std::unexpected(std::string("empty GPU id in -i"));
    ids.emplace_back(id);
  }
  return ids;
}

std::expected<std::vector<std::size_t>, std::string> select_gpus(std::string_view list,
                                                                 std::span<const model::GpuInfo> gpus) {
  std::vector<std::size_t> chosen;
  if (list.empty()) {
    for (std::size_t i = 0; i < gpus.size(); ++i) chosen.push_back(i);
    return chosen;
  }
  auto ids = split_gpu_ids(list);
  if (!ids) return std::unexpected(std::string(list));
  for (const auto& id : *ids) {
    bool found = false;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (names(id, gpus[i])) {
        chosen.push_back(i);
        found = true;
      }
    }
    if (!found) return std::unexpected(id);
  }
  std::sort(chosen.begin(), chosen.end());
  chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
  return chosen;
}

std::vector<exporter::GpuView> views_of(std::span<const model::GpuInfo> gpus, const model::Snapshot& snapshot,
                                        std::span<const std::size_t> selected) {
  static const model::GpuSample kMissing = [] {
    model::GpuSample s;
    s.up = false;
    s.down_error_code = 15;  // NVML_ERROR_GPU_IS_LOST: the reading has no trace of the GPU
    return s;
  }();
  std::vector<exporter::GpuView> views;
  views.reserve(selected.size());
  for (std::size_t pos : selected) {
    const auto& info = gpus[pos];
    // The backend keeps samples in discovery order; the index check guards a snapshot built otherwise.
    const model::GpuSample* sample = nullptr;
    if (pos < snapshot.gpus.size() && snapshot.gpus[pos].index == info.index) {
      sample = &snapshot.gpus[pos];
    } else {
      auto it = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(),
                             [&](const model::GpuSample& s) { return s.index == info.index; });
      if (it != snapshot.gpus.end()) sample = &*it;
    }
    views.push_back({info, sample != nullptr ? *sample : kMissing});
  }
  return views;
}

}  // namespace gpuscope::cli
