// One field's reading as nvidia-smi prints it in CSV: "87 %", "250.12 W", "P0", "0x0000000000000004",
// "[N/A]" when the GPU lacks the field (never 0) and "[<NVML error>]" when reading it failed.
#pragma once

#include <string>

#include "model/field_catalog.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

inline constexpr const char* kNotAvailable = "[N/A]";

// `with_unit` appends FieldDef::smi_unit after a space (nvidia-smi's default; `nounits` turns it off).
std::string smi_value_text(const model::FieldDef& def, const model::FieldValue& value, bool with_unit);

// "[GPU is lost]" (or the text of whatever code marked the GPU down): every field of a GPU that is down.
std::string down_text(const model::GpuSample& sample);

}  // namespace gpuscope::exporter
