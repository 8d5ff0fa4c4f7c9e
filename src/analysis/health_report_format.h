// The health gate's report as people and scripts read it: text (one line per problem, one summary line)
// and JSON (numbers, units in key names, stable check ids). The JSON is the agent's /api/v1/check body.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis/health_checks.h"

namespace gpuscope::analysis {

// One line per failed check ("FAIL ecc: GPU 0 (GPU-...): ..."; "WARN" for checks outside fail_on), one
// per down GPU, then one summary line: which checks all GPUs passed and which were not checked, and why.
std::string health_report_text(const HealthReport& report);

// {"healthy":..., "problem_count":..., "gpu_count":..., "fail_on":[...], "kernel_log":{...},
//  "gpus":[{"index":..., "uuid":..., "up":..., "healthy":..., "checks":[{"id":"ecc", "status":"fail",
//  "gating":true, "summary":..., "values":{"ecc_dbe_volatile_total":1}}]}], "node":{"checks":[...]}}
nlohmann::ordered_json health_report_json(const HealthReport& report);

}  // namespace gpuscope::analysis
