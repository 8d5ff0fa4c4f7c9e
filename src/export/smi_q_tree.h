// The tree behind `query -q` (smi_q_report.h): one node per line of nvidia-smi -q's GPU block, carrying
// both what the text prints and what the JSON holds, so the two outputs cannot drift apart.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "export/smi_q_report.h"

namespace gpuscope::exporter {

struct SmiQNode {
  std::string label;      // nvidia-smi's key ("Average Power Draw")
  std::string json_name;  // -q -x's element name, unit suffix included ("average_power_draw_watts")
  // The value after " : "; nullopt for a section header (a line with no value).
  std::optional<std::string> text;
  nlohmann::ordered_json json;  // the leaf's JSON value; null: absent from the JSON
  std::string error;            // NVML's error text when the read failed (the GPU's JSON "errors")
  std::vector<SmiQNode> children;
  bool trailing_space = false;  // nvidia-smi 580 prints "GPU Memory Power Readings " with one
};

// The lines under "GPU <bus id>", in nvidia-smi 580's order (smi_q_sections.cc).
std::vector<SmiQNode> smi_q_gpu_nodes(const SmiQGpu& gpu);

}  // namespace gpuscope::exporter
