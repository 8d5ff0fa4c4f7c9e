#include "cli/price_flags.h"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace gpuscope::cli {

void add_price_flags(CLI::App& app, PriceFlags& flags) {
  app.add_option("--price-catalog", flags.catalog_file,
                 "GPU prices (USD per GPU-hour) for gpuscope_gpu_hourly_price_dollars: a YAML catalog matching "
                 "NVML model names (default: share/gpuscope/gpu_prices.yaml of the installation, else the source "
                 "tree's catalog/; none found: no price series)")
      ->type_name("FILE");
  app.add_option("--price-tier", flags.tier,
                 "which of the catalog's prices to export: on_demand (default), spot, commit_1y or commit_3y")
      ->type_name("TIER");
  app.add_option("--price-override", flags.overrides,
                 "price GPUs whose model name the regex finds (case-insensitive) at USD per GPU-hour in the chosen "
                 "tier, over the catalog; repeatable, the last matching one wins (e.g. 'H100.*HBM3=2.10')")
      ->type_name("MODEL_REGEX=USD");
}

std::string default_price_catalog(const std::string& exe_dir) {
  if (exe_dir.empty()) return {};
  for (const char* rel : {"/../share/gpuscope/gpu_prices.yaml", "/../catalog/gpu_prices.yaml"}) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(exe_dir + rel, ec);
    if (!ec && std::filesystem::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

std::expected<PriceSelection, std::string> select_prices(const PriceFlags& flags, std::string exe_dir) {
  PriceSelection s;
  const auto tier = model::parse_price_tier(flags.tier);
  if (!tier) {
    return std::unexpected(
        fmt::format("invalid value '{}' for --price-tier ({})", flags.tier, model::price_tier_names()));
  }
  s.tier = *tier;
  if (exe_dir.empty()) {
    std::error_code ec;
    exe_dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
  }
  const std::string file = flags.catalog_file.empty() ? default_price_catalog(exe_dir) : flags.catalog_file;
  if (!file.empty()) {
    auto loaded = model::PriceCatalog::load(file);
    if (!loaded) return std::unexpected(fmt::format("--price-catalog {}", loaded.error()));
    s.catalog = std::move(*loaded);
  }
  if (!flags.overrides.empty() && !s.catalog) s.catalog.emplace();  // overrides alone price GPUs too
  for (const auto& spec : flags.overrides) {
    if (auto added = s.catalog->add_override(spec, s.tier); !added) {
      return std::unexpected(fmt::format("--price-override {}", added.error()));
    }
  }
  return s;
}

std::map<unsigned, double> hourly_prices(const PriceSelection& selection, std::span<const model::GpuInfo> gpus) {
  std::map<unsigned, double> prices;
  if (!selection.catalog) return prices;
  for (const auto& g : gpus) {
    if (auto p = selection.catalog->hourly_price(g.name, selection.tier)) prices.emplace(g.index, *p);
  }
  return prices;
}

}  // namespace gpuscope::cli
