// `serve`'s price flags (--price-catalog, --price-tier, --price-override): which catalog prices the GPUs,
// found and checked while the arguments are parsed (a bad one is a usage error), and the per-GPU prices.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/gpu_info.h"
#include "model/price_catalog.h"

namespace gpuscope::cli {

// The flags as given.
struct PriceFlags {
  std::string catalog_file;  // empty: default_price_catalog(), if there is one
  std::string tier = "on_demand";
  std::vector<std::string> overrides;  // MODEL_REGEX=USD
};

void add_price_flags(CLI::App& app, PriceFlags& flags);

// What the flags chose: no catalog (no default found, no overrides) means no price series at all.
struct PriceSelection {
  std::optional<model::PriceCatalog> catalog;
  model::PriceTier tier = model::PriceTier::kOnDemand;
};

// The catalog an agent uses without --price-catalog, looked up next to the executable in `exe_dir` as the
// simulated NVML library is: the installed <prefix>/share/gpuscope/gpu_prices.yaml beside <prefix>/bin,
// else the source tree's catalog/ for a build directory inside the tree. Empty when neither exists.
std::string default_price_catalog(const std::string& exe_dir);

// Reads and checks what the flags name; errors are one line ("--price-catalog FILE:LINE: ...").
// `exe_dir` is where default_price_catalog() looks; empty: the running executable's directory.
std::expected<PriceSelection, std::string> select_prices(const PriceFlags& flags, std::string exe_dir = {});

// USD per GPU-hour of each GPU whose model the selection prices, by GPU index.
std::map<unsigned, double> hourly_prices(const PriceSelection& selection, std::span<const model::GpuInfo> gpus);

}  // namespace gpuscope::cli
