// CheckApi: GET /api/v1/check, the health gate of `gpuscope check --format json` over the agent's latest
// reading (and the XID events it has watched since it started, and the kernel log), so a training
// script asks the agent on its node before each epoch instead of reading NVML itself.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "http/http_server.h"
#include "model/gpu_info.h"
#include "model/snapshot.h"

namespace gpuscope::http {

class CheckApi {
 public:
  // `latest`: the latest reading (null before the first). The kernel log is read at each request, from
  // /dev/kmsg; not for simulated GPUs, whose XIDs the host's log does not hold.
  CheckApi(std::vector<model::GpuInfo> gpus, model::SystemInfo system,
           std::function<std::shared_ptr<const model::Snapshot>()> latest);

  static bool handles(std::string_view path) { return path == "/api/v1/check"; }
  // ?fail_on=ecc,xid (default all), &cuda_runtime=12.4, &gpu=0,GPU-... (default all): 200 with the report
  // whatever it says (its `healthy` field is the verdict), 400 for a bad parameter, 503 before a reading.
  HttpResponse handle(const HttpRequest& request) const;

 private:
  const std::vector<model::GpuInfo> gpus_;
  const model::SystemInfo system_;
  std::function<std::shared_ptr<const model::Snapshot>()> latest_;
};

}  // namespace gpuscope::http
