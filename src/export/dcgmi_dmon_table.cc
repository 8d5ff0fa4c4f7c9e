#include "export/dcgmi_dmon_table.h"

#include <array>
#include <charconv>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "export/mig_instance_rows.h"

namespace gpuscope::exporter {
namespace {

// DCGM 4.6's display format of each DCGM field gpuscope's catalog reads (dcgm_fields.cpp: short name,
// unit, width, whether the field is a double), by id. Field 449 is left out: DCGM 4.6 reports it as an
// NVLink throughput in MB/s, gpuscope's catalog keeps a KiB counter under that id.
constexpr std::array<DcgmFieldFormat, 60> kDcgmiFormats{{
    {92, "B1USE", "", 5, false},
    {100, "SMCLK", "", 5, false},
    {101, "MMCLK", "", 5, false},
    {102, "VICLK", "", 5, false},
    {112, "DVCCTR", "", 20, false},
    {113, "SMMAX", "", 5, false},
    {114, "MMMAX", "", 5, false},
    {140, "MMTMP", "C", 10, false},
    {150, "TMPTR", " C", 5, false},
    {155, "POWER", " W", 10, true},
    {156, "TOTEC", " mJ", 16, false},
    {158, "SDTMP", " C", 5, false},
    {159, "SHTMP", " C", 5, false},
    {160, "PMLMT", " W", 10, true},
    {164, "EPLMT", " W", 10, true},
    {190, "PSTAT", "", 5, false},
    {191, "FANSP", "", 5, false},
    {202, "RPCTR", "#", 5, false},
    {203, "GPUTL", "", 10, false},
    {204, "MCUTL", "", 10, false},
    {206, "ECUTL", "", 10, false},
    {207, "DCUTL", "", 10, false},
    {230, "XIDER", "", 5, false},
    {235, "PCIMG", "", 5, false},
    {236, "PCIMW", "", 5, false},
    {237, "PCILG", "", 5, false},
    {238, "PCILW", "", 5, false},
    {240, "PVIOL", "", 10, false},
    {241, "TVIOL", "", 10, false},
    {242, "SBVIO", "", 10, false},
    {243, "BLVIO", "", 20, false},
    {244, "LUVIO", "", 20, false},
    {245, "RVIOL", "", 20, false},
    {250, "FBTTL", "", 10, false},
    {251, "FBFRE", "", 10, false},
    {252, "FBUSD", "", 10, false},
    {253, "FBRSV", "", 10, false},
    {310, "ESVTL", "", 5, false},
    {311, "EDVTL", "", 5, false},
    {312, "ESATL", "", 5, false},
    {313, "EDATL", "", 5, false},
    {390, "RPSBE", "", 16, false},
    {391, "RPDBE", "", 16, false},
    {392, "RPPEN", "", 10, false},
    {393, "URMPS", "", 10, false},
    {394, "CRMPS", "", 10, false},
    {395, "RRF", "", 20, false},
    {396, "RRP", "", 20, false},
    {1001, "GRACT", "", 5, true},
    {1002, "SMACT", "", 5, true},
    {1003, "SMOCC", "", 5, true},
    {1004, "TENSO", "", 5, true},
    {1005, "DRAMA", "", 5, true},
    {1006, "FP64A", "", 5, true},
    {1007, "FP32A", "", 5, true},
    {1008, "FP16A", "", 5, true},
    {1009, "PCITX", "", 20, false},
    {1010, "PCIRX", "", 20, false},
    {1011, "NVLTX", "", 20, false},
    {1012, "NVLRX", "", 20, false},
}};

// dcgmi's PADDING after each cell and the width of its entity column.
constexpr std::size_t kDcgmiPadding = 2;
constexpr std::size_t kDcgmiEntityWidth = 14;

// dcgmi's FixedSizeString: longer text is cut and ends in "...".
std::string dcgmi_cell(std::string_view text, std::size_t width) {
  std::string cut = text.size() <= width ? std::string(text) : std::string(text.substr(0, width - 3)) + "...";
  return fmt::format("{:<{}}", cut, width + kDcgmiPadding);
}

std::size_t dcgmi_width(const DcgmFieldFormat& f) { return static_cast<std::size_t>(f.width) + 6; }

const DcgmFieldFormat* dcgmi_format(int id) {
  for (const auto& f : kDcgmiFormats) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

std::optional<model::FieldId> dcgmi_catalog_field(int id) {
  for (const auto& f : model::FieldCatalog::all()) {
    if (f.dcgm_id == id) return f.id;
  }
  return std::nullopt;
}

}  // namespace

std::span<const DcgmFieldFormat> DcgmiDmonTable::formats() { return kDcgmiFormats; }

std::string DcgmiDmonTable::supported_ids() {
  std::string out;
  for (std::size_t i = 0; i < kDcgmiFormats.size();) {
    std::size_t j = i;
    while (j + 1 < kDcgmiFormats.size() && kDcgmiFormats[j + 1].id == kDcgmiFormats[j].id + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", kDcgmiFormats[i].id)
                  : fmt::format("{}-{}", kDcgmiFormats[i].id, kDcgmiFormats[j].id);
    i = j + 1;
  }
  return out;
}

std::expected<DcgmiDmonTable, DcgmiFieldError> DcgmiDmonTable::from_ids(std::string_view list) {
  std::vector<Column> columns;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    const std::string_view token =
        list.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    int id = 0;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), id);
    if (token.empty() || ec != std::errc() || end != token.data() + token.size()) {
      return std::unexpected(DcgmiFieldError{std::string(token), !token.empty()});
    }
    const DcgmFieldFormat* format = dcgmi_format(id);
    const auto field = dcgmi_catalog_field(id);
    if (format == nullptr || !field) return std::unexpected(DcgmiFieldError{std::string(token), false});
    columns.push_back({format, *field});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return DcgmiDmonTable(std::move(columns));
}

std::string DcgmiDmonTable::header() const {
  std::string names = fmt::format("{:<{}}", "#Entity", kDcgmiEntityWidth + kDcgmiPadding);
  std::string units = fmt::format("{:<{}}", "ID", kDcgmiEntityWidth + kDcgmiPadding);
  for (const auto& c : columns_) {
    names += dcgmi_cell(c.format->short_name, dcgmi_width(*c.format));
    units += dcgmi_cell(c.format->unit, dcgmi_width(*c.format));
  }
  return names + "\n" + units + "\n";
}

std::string DcgmiDmonTable::entity_row(std::string_view entity, const model::GpuSample& sample) const {
  std::string line = fmt::format("{:<{}}", entity, kDcgmiEntityWidth + kDcgmiPadding);
  for (const auto& c : columns_) {
    std::string value = "N/A";
    const auto& v = sample[c.field];
    if (sample.up && v.valid() && std::isfinite(v.value)) {
      // gpuscope stores some values in finer units than DCGM (violation times in ns, DCGM's in us).
      const double dcgm = v.value / model::FieldCatalog::get(c.field).dcgm_divisor;
      value = c.format->floating ? fmt::format("{:.3f}", dcgm) : fmt::format("{}", std::llround(dcgm));
    }
    line += dcgmi_cell(value, dcgmi_width(*c.format));
  }
  return line + "\n";
}

std::string DcgmiDmonTable::row(const GpuView& gpu) const {
  return entity_row(fmt::format("GPU {}", gpu.info.index), gpu.sample);
}

std::string DcgmiDmonTable::instance_row(const GpuView& gpu, const model::MigInstanceSample& instance) const {
  return entity_row(fmt::format("GPU-I {}", mig_instance_id(gpu.info.index, instance.gpu_instance_id)),
                    mig_instance_as_sample(gpu.sample, instance));
}

}  // namespace gpuscope::exporter
