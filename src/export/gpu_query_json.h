// `gpuscope query --query-gpu=... --format=json`: the same columns as the CSV, as numbers with the unit
// in the key (see machine_value.h). One object per reading; with -l the CLI prints one per line (NDJSON).
#pragma once

#include <span>

#include <nlohmann/json.hpp>

#include "export/gpu_query.h"
#include "export/gpu_view.h"

namespace gpuscope::exporter {

// {"timestamp":"2026-01-01T00:10:00.000Z","timestamp_unix_seconds":1767226200.0,
//  "gpus":[{"index":0,"name":"...","temperature.gpu_celsius":45,"power.draw_watts":250.12}]}
// The time is always at the top, so a requested `timestamp` column adds nothing per GPU. A field the GPU
// does not support is absent (never 0); a field whose read failed is absent too and named with NVML's
// error text under the GPU's "errors" object ({"power.draw":"Unknown Error"}). A GPU that is down keeps
// its identity columns and lists every requested field under "errors".
// Detail columns read `details[k]` for gpus[k] (as gpu_query_csv_rows): a number under a key with its
// unit, a word ("Enabled") or hex id ("0x233010DE") as a string under the bare name.
nlohmann::ordered_json gpu_query_json(std::span<const GpuColumn> columns, const QueryContext& context,
                              std::span<const GpuView> gpus, std::span<const model::GpuDetails> details = {});

}  // namespace gpuscope::exporter
