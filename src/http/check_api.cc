#include "http/check_api.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/health_checks.h"
#include "analysis/health_report_format.h"
#include "analysis/kernel_xid_log.h"
#include "http/api_envelope.h"

namespace gpuscope::http {


CheckApi::CheckApi(std::vector<model::GpuInfo> gpus, model::SystemInfo system,
                   std::function<std::shared_ptr<const model::Snapshot>()> latest)
    : gpus_(std::move(gpus)), system_(std::move(system)), latest_(std::move(latest)) {}

HttpResponse CheckApi::handle(const HttpRequest& request) const {
  if (request.method() != "GET" && request.method() != "HEAD") {
    auto r = api_error(405, "bad_data", fmt::format("method {} not allowed on /api/v1/check (GET)", request.method()));
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  analysis::HealthCheckOptions options;
  std::vector<std::string> ids;
  for (const auto& [name, value] : request.query_arguments()) {
    if (name == "fail_on") {
      auto set = analysis::parse_health_checks(value);
      if (!set) return api_error(400, "bad_data", fmt::format("invalid parameter \"fail_on\": {}", set.error()));
      options.fail_on = *set;
    } else if (name == "cuda_runtime") {
      auto version = analysis::parse_cuda_version(value);
      if (!version) {
        return api_error(400, "bad_data",
                           fmt::format("invalid parameter \"cuda_runtime\": {:?} is not a CUDA version (e.g. 12.4)", value));
      }
      options.cuda_runtime_version = version;
    } else if (name == "gpu") {
      std::string_view rest = value;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        if (comma != 0) ids.emplace_back(rest.substr(0, comma));
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
      }
    }
  }
  std::vector<model::GpuInfo> chosen;
  for (const auto& id : ids) {
    const auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const model::GpuInfo& g) {
      return g.uuid == id || std::to_string(g.index) == id;
    });
    if (it == gpus_.end()) return api_error(400, "bad_data", fmt::format("invalid parameter \"gpu\": no GPU {:?}", id));
    if (std::none_of(chosen.begin(), chosen.end(), [&](const auto& g) { return g.index == it->index; })) {
      chosen.push_back(*it);
    }
  }
  if (ids.empty()) chosen = gpus_;
  std::sort(chosen.begin(), chosen.end(), [](const auto& a, const auto& b) { return a.index < b.index; });

  const auto snapshot = latest_ ? latest_() : nullptr;
  if (!snapshot) return api_error(503, "unavailable", "no GPU reading yet");
  // The agent watches XID and ECC events from its start: their counts are real (a one-shot check's are not).
  options.xid_events_watched = true;
  options.node_wide = ids.empty();
  if (system_.simulated) {
    options.kernel_log_not_read = "the GPUs are simulated; the host's kernel log says nothing about them";
  } else {
    options.kernel_log = analysis::read_kernel_xid_log(std::string(analysis::kKernelLogDevice));
  }
  const auto report = analysis::check_health(*snapshot, chosen, system_, options);
  return api_json(200, {{"status", "success"}, {"data", analysis::health_report_json(report)}});
}

}  // namespace gpuscope::http
