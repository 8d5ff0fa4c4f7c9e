// `gpuscope query --query-gpu=... --format=csv`: nvidia-smi's CSV, byte for byte where nvidia-smi is
// defined (", " separators, units in the header and after values, [N/A], [<NVML error>]).
#pragma once

#include <span>
#include <string>

#include "export/gpu_query.h"
#include "export/gpu_view.h"

namespace gpuscope::exporter {

struct CsvStyle {
  bool header = true;  // `noheader` turns it off
  bool units = true;   // `nounits` drops units after values; the header keeps them, as nvidia-smi's does
};

// "index, name, utilization.gpu [%], memory.used [MiB]\n"
std::string gpu_query_csv_header(std::span<const GpuColumn> columns);

// One line per GPU, each ending in '\n'. A GPU that is down shows its identity columns and the text of
// the code that marked it down ("[GPU is lost]") in every field column.
// `details[k]` is what NvmlBackend::details read of gpus[k], for the detail columns (needs_details);
// without it those columns print [N/A].
std::string gpu_query_csv_rows(std::span<const GpuColumn> columns, const QueryContext& context,
                               std::span<const GpuView> gpus, CsvStyle style,
                               std::span<const model::GpuDetails> details = {});

}  // namespace gpuscope::exporter
