#include "export/smi_q_report.h"

#include <ctime>

#include <fmt/format.h>

#include "export/smi_q_tree.h"
#include "export/timestamp_text.h"

namespace gpuscope::exporter {
namespace {

using Json = nlohmann::ordered_json;

// nvidia-smi pads every key, indentation included, to 54 characters, so " : " lines up in column 55.
constexpr std::size_t kSqKeyWidth = 54;

void sq_line(std::string& out, std::size_t depth, std::string_view label, std::string_view value) {
  std::string key(depth * 4, ' ');
  key += label;
  if (key.size() < kSqKeyWidth) key.resize(kSqKeyWidth, ' ');
  out += fmt::format("{} : {}\n", key, value);
}

void sq_text_node(std::string& out, const SmiQNode& n, std::size_t depth) {
  if (n.label.empty()) {  // an array element: its lines sit at the list's depth
    for (const auto& c : n.children) sq_text_node(out, c, depth);
    return;
  }
  if (n.text) {
    sq_line(out, depth, n.label, *n.text);
  } else {
    out += fmt::format("{}{}{}\n", std::string(depth * 4, ' '), n.label, n.trailing_space ? " " : "");
  }
  for (const auto& c : n.children) sq_text_node(out, c, depth + 1);
}

void sq_json_node(Json& parent, Json& errors, const SmiQNode& n, const std::string& path) {
  const std::string here = path.empty() ? n.json_name : path + "." + n.json_name;
  if (n.text) {
    if (!n.json.is_null()) parent[n.json_name] = n.json;
    if (!n.error.empty()) errors[here] = n.error;
    // A line with a value and lines under it (HW Slowdown, Process ID): -q -x makes them siblings.
    for (const auto& c : n.children) sq_json_node(parent, errors, c, path);
    return;
  }
  if (n.json.is_array()) {
    Json list = Json::array();
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      Json element = Json::object();
      for (const auto& c : n.children[i].children) sq_json_node(element, errors, c, fmt::format("{}.{}", here, i));
      list.push_back(std::move(element));
    }
    parent[n.json_name] = std::move(list);
    return;
  }
  Json object = Json::object();
  for (const auto& c : n.children) sq_json_node(object, errors, c, here);
  if (!object.empty()) parent[n.json_name] = std::move(object);
}

// "Wed Nov 25 10:49:46 2026": ctime's form, in local time (TZ), as nvidia-smi prints it.
std::string sq_timestamp(std::chrono::system_clock::time_point t) {
  const std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, "%a %b %e %H:%M:%S %Y", &tm);
  return std::string(buf, n);
}

}  // namespace

std::string smi_q_text(const SmiQInput& input) {
  std::string out = "\n==============NVSMI LOG==============\n\n";
  sq_line(out, 0, "Timestamp", sq_timestamp(input.time));
  sq_line(out, 0, "Driver Version", input.system.driver_version.empty() ? "N/A" : input.system.driver_version);
  const std::string cuda = input.system.cuda_version_string();
  sq_line(out, 0, "CUDA Version", cuda.empty() ? "N/A" : cuda);
  out += '\n';
  sq_line(out, 0, "Attached GPUs", fmt::format("{}", input.attached_gpus));
  for (const auto& gpu : input.gpus) {
    out += fmt::format("GPU {}\n", gpu.info.pci_bus_id);
    for (const auto& n : smi_q_gpu_nodes(gpu)) sq_text_node(out, n, 1);
    out += '\n';
  }
  return out;
}

Json smi_q_json(const SmiQInput& input) {
  Json doc = Json::object();
  doc["timestamp"] = iso_timestamp(input.time);
  doc["timestamp_unix_seconds"] = unix_seconds(input.time);
  if (!input.system.driver_version.empty()) doc["driver_version"] = input.system.driver_version;
  if (const std::string cuda = input.system.cuda_version_string(); !cuda.empty()) doc["cuda_version"] = cuda;
  doc["attached_gpus"] = input.attached_gpus;
  Json gpus = Json::array();
  for (const auto& gpu : input.gpus) {
    Json g = Json::object();
    g["id"] = gpu.info.pci_bus_id;
    g["index"] = gpu.info.index;
    Json errors = Json::object();
    for (const auto& n : smi_q_gpu_nodes(gpu)) sq_json_node(g, errors, n, "");
    if (!errors.empty()) g["errors"] = std::move(errors);
    gpus.push_back(std::move(g));
  }
  doc["gpus"] = std::move(gpus);
  return doc;
}

}  // namespace gpuscope::exporter
