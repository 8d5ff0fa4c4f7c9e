// What a GPU costs per hour: the user-editable price catalog (catalog/gpu_prices.yaml), which matches
// NVML product names to USD per GPU-hour by pricing tier. Prices are data, never constants in code.
#pragma once

#include <array>
#include <cstddef>
#include <expected>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::model {

// How the GPU-hour is bought: list price, preemptible, or a 1- or 3-year committed-use discount.
enum class PriceTier { kOnDemand, kSpot, kCommit1y, kCommit3y };
inline constexpr std::size_t kPriceTierCount = 4;

// "on_demand", "spot", "commit_1y", "commit_3y": the catalog's keys, the flag's values, the label's values.
std::string_view price_tier_name(PriceTier tier);
std::optional<PriceTier> parse_price_tier(std::string_view name);
// "on_demand, spot, commit_1y, commit_3y", for error messages and help.
std::string price_tier_names();

// What a product can do, from its maker's datasheet: what right-sizing scales a measured workload by.
// Tensor figures are dense (no sparsity); absent where the GPU has no such tensor math (bf16 before Ampere).
struct GpuSpecs {
  double memory_gib = 0;
  std::string architecture;                       // "Hopper", "Ampere", ...
  std::optional<double> bf16_tflops;              // dense, tensor cores
  std::optional<double> fp16_tensor_tflops;       // dense, tensor cores
  double fp32_tflops = 0;                         // non-tensor FP32
  double memory_bandwidth_gb_per_s = 0;           // GB = 10^9 bytes
  int pcie_gen = 0;                               // 1-5
  int pcie_width = 0;                             // lanes
};

// One product of the catalog: which NVML names it covers and what it costs in each tier.
struct PriceEntry {
  std::string name;                     // the catalog's own name for it ("H100 80GB SXM")
  std::vector<std::string> substrings;  // any one occurring in the NVML name matches, ignoring case
  std::string regex_text;               // empty: none
  std::optional<std::regex> regex;      // searched anywhere in the name, ignoring case
  std::array<std::optional<double>, kPriceTierCount> usd_per_hour;  // absent: no price in that tier
  std::optional<GpuSpecs> specs;        // absent: the file does not say (no right-sizing to or from it)
  int line = 0;                         // where the entry starts in its file, for messages

  bool matches(std::string_view model_name) const;
};

class PriceCatalog {
 public:
  // Errors are one line: "FILE:LINE: what is wrong".
  static std::expected<PriceCatalog, std::string> load(const std::string& path);
  static std::expected<PriceCatalog, std::string> parse(std::string_view text, std::string_view source_name);

  // USD per GPU-hour of a GPU with this NVML name: an override for the tier first, else the first
  // entry that matches. Absent when nothing matches or the matching entry has no price in the tier
  // (a later, broader entry is not consulted: the first match owns the name).
  std::optional<double> hourly_price(std::string_view model_name, PriceTier tier) const;
  // The entry that owns a name, ignoring overrides; null when none matches.
  const PriceEntry* find(std::string_view model_name) const;

  // `--price-override MODEL_REGEX=USD`: GPUs whose name the regex finds cost USD in `tier`, whatever
  // the catalog says. Errors are one line naming the spec.
  std::expected<void, std::string> add_override(std::string_view spec, PriceTier tier);

  std::span<const PriceEntry> entries() const { return entries_; }
  // Absent when the file does not say.
  std::optional<double> energy_usd_per_kwh() const { return energy_usd_per_kwh_; }
  // Where the catalog came from (the path given to load, the name given to parse).
  const std::string& source() const { return source_; }

 private:
  struct Override {
    std::regex regex;
    PriceTier tier;
    double usd_per_hour;
  };
  std::vector<PriceEntry> entries_;
  std::vector<Override> overrides_;
  std::optional<double> energy_usd_per_kwh_;
  std::string source_;
};

}  // namespace gpuscope::model
