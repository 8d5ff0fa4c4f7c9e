// `gpuscope dmon -e 150,155,156`: the rows of `dcgmi dmon -e ...` for users of DCGM field ids. The layout
// is DCGM 4.6's dcgmi/DeviceMonitor.cpp: "#Entity" and "ID" left-aligned in 16 characters, then per
// field its short name (header), unit (second line) and value, each left-aligned in its DCGM display
// width + 8 (a value longer than width + 6 is cut to width + 3 characters and "..."); a row starts with
// "GPU <index>"; blank or missing values are "N/A"; floating-point fields print 3 decimals.
// Short names, units and widths are DCGM's (dcgmlib/src/dcgm_fields.cpp), for each field of gpuscope's
// catalog that has a DCGM id.
#pragma once

#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "export/gpu_view.h"
#include "model/field_catalog.h"
#include "model/snapshot.h"

namespace gpuscope::exporter {

struct DcgmFieldFormat {
  int id;                       // DCGM field id
  std::string_view short_name;  // header: TMPTR
  std::string_view unit;        // units line, DCGM's spelling (" C", " W", " mJ", "")
  int width;                    // DCGM's valueFormat->width
  bool floating;                // DCGM_FT_DOUBLE: printed with 3 decimals
};

// Why -e could not be used: `token` is the list item at fault ("" for an empty list).
struct DcgmiFieldError {
  std::string token;
  bool not_a_number = false;
};

class DcgmiDmonTable {
 public:
  // "150,155,156": every id must be one gpuscope reads (supported_ids()); repeats are kept, as dcgmi does.
  static std::expected<DcgmiDmonTable, DcgmiFieldError> from_ids(std::string_view list);

  // "92, 100-102, 112-114, ...": the ids -e takes, for error messages and help.
  static std::string supported_ids();
  static std::span<const DcgmFieldFormat> formats();

  // The two header lines, each with a newline; every cell is padded, the last one too, as dcgmi's are.
  std::string header() const;
  std::string row(const GpuView& gpu) const;
  // A MIG GPU instance's row after its GPU's: "GPU-I 0/1" (dcgmi's word for a GPU instance entity, and
  // the GPU/instance pair dcgmi dmon -i takes, since gpuscope has no DCGM entity ids); the instance's
  // memory and profiling fields (250-253, 1001-1008) have values, every other field is N/A, as dcgmi
  // shows a GPU-I entity.
  std::string instance_row(const GpuView& gpu, const model::MigInstanceSample& instance) const;

 private:
  struct Column {
    const DcgmFieldFormat* format;
    model::FieldId field;
  };
  explicit DcgmiDmonTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  std::string entity_row(std::string_view entity, const model::GpuSample& sample) const;
  std::vector<Column> columns_;
};

// When dcgmi prints its header again: its counter (MAX_PRINT_HEADER_COUNT 14) is checked after the sleep
// that follows each set, so the header comes back after 15 sets, then after every 14.
class DcgmiHeaderSchedule {
 public:
  static constexpr int kSetsPerHeader = 14;
  // Called after the pause that follows a set: true when the header is due before the next set.
  bool due_after_pause() {
    const bool due = count_ == kSetsPerHeader;
    if (due) count_ = 0;
    ++count_;
    return due;
  }

 private:
  int count_ = 0;
};

}  // namespace gpuscope::exporter
