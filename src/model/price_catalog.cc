#include "model/price_catalog.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "model/file_text.h"
#include "model/yaml_error_text.h"

namespace gpuscope::model {
namespace {

constexpr std::array<std::string_view, kPriceTierCount> kTierNames{"on_demand", "spot", "commit_1y", "commit_3y"};

// yaml-cpp reports problems by throwing, so the parser does too, internally; parse() is the one place
// that turns a failure into a value.
struct ParseFailure {
  int line;  // 1-based; 0 when unknown
  std::string message;
};

int line_of(const YAML::Node& n) {
  const YAML::Mark mark = n.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

[[noreturn]] void fail(const YAML::Node& at, std::string message) { throw ParseFailure{line_of(at), std::move(message)}; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Checks a mapping's keys against the ones allowed there, so a typo ("on-demand") is an error, not a
// silently missing price.
void expect_keys(const YAML::Node& node, std::string_view where, std::initializer_list<std::string_view> known) {
  if (!node.IsMap()) fail(node, fmt::format("{} must be a mapping (key: value lines)", where));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    if (std::ranges::find(known, key) == known.end()) {
      fail(it->first, fmt::format("unknown key '{}' in {} (known: {})", key, where, fmt::join(known, ", ")));
    }
  }
}

std::string scalar(const YAML::Node& n, std::string_view what) {
  if (!n.IsScalar()) fail(n, fmt::format("{} must be a single value", what));
  return n.Scalar();
}

// A price or rate: a finite number, zero or more.
double amount(const YAML::Node& n, std::string_view what) {
  const std::string s = scalar(n, what);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || !std::isfinite(v)) {
    fail(n, fmt::format("{} must be a number (USD), not '{}'", what, s));
  }
  if (v < 0) fail(n, fmt::format("{} is negative ({})", what, s));
  return v;
}

// A datasheet figure: a finite number above zero (a GPU with 0 GiB or 0 TFLOPS is a typo, and a ratio by
// it would divide by zero).
double positive(const YAML::Node& n, std::string_view what) {
  const std::string s = scalar(n, what);
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size() || !std::isfinite(v)) {
    fail(n, fmt::format("{} must be a number, not '{}'", what, s));
  }
  if (v <= 0) fail(n, fmt::format("{} must be above 0 ({})", what, s));
  return v;
}

int whole(const YAML::Node& n, std::string_view what, int lowest, int highest) {
  const std::string s = scalar(n, what);
  int v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc{} || ptr != s.data() + s.size()) {
    fail(n, fmt::format("{} must be a whole number, not '{}'", what, s));
  }
  if (v < lowest || v > highest) fail(n, fmt::format("{} must be {} to {} ({})", what, lowest, highest, s));
  return v;
}

// Generations 1-5: the ones whose line rate and coding right-sizing knows (gen 6's FLIT mode is another
// coding). 32 lanes is the most the specification defines.
constexpr int kMaxPcieGen = 5;
constexpr int kMaxPcieWidth = 32;

GpuSpecs parse_specs(const YAML::Node& node, std::string_view entry_name) {
  expect_keys(node, "specs",
              {"memory_gib", "architecture", "bf16_tflops", "fp16_tensor_tflops", "fp32_tflops",
               "memory_bandwidth_gb_per_s", "pcie_gen", "pcie_width"});
  const auto required = [&](const char* key) {
    const YAML::Node v = node[key];
    if (!v || v.IsNull()) fail(node, fmt::format("specs of '{}' need '{}'", entry_name, key));
    return v;
  };
  const auto optional_positive = [&](const char* key) -> std::optional<double> {
    const YAML::Node v = node[key];
    if (!v || v.IsNull()) return std::nullopt;
    return positive(v, key);
  };
  GpuSpecs s;
  s.memory_gib = positive(required("memory_gib"), "memory_gib");
  s.architecture = scalar(required("architecture"), "architecture");
  if (s.architecture.empty()) fail(node["architecture"], "architecture is empty");
  s.bf16_tflops = optional_positive("bf16_tflops");
  s.fp16_tensor_tflops = optional_positive("fp16_tensor_tflops");
  s.fp32_tflops = positive(required("fp32_tflops"), "fp32_tflops");
  s.memory_bandwidth_gb_per_s = positive(required("memory_bandwidth_gb_per_s"), "memory_bandwidth_gb_per_s");
  s.pcie_gen = whole(required("pcie_gen"), "pcie_gen", 1, kMaxPcieGen);
  s.pcie_width = whole(required("pcie_width"), "pcie_width", 1, kMaxPcieWidth);
  return s;
}

// Case-insensitive, searched anywhere: the substring entries' semantics, with a regex's reach.
std::expected<std::regex, std::string> compile(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return std::unexpected(fmt::format("bad regex '{}': {}", pattern, e.what()));
  }
}

PriceEntry parse_entry(const YAML::Node& item) {
  expect_keys(item, "a gpus entry", {"name", "match", "regex", "prices", "specs"});
  PriceEntry e;
  e.line = line_of(item);
  const YAML::Node name = item["name"];
  if (!name || name.IsNull()) fail(item, "a gpus entry needs 'name'");
  e.name = scalar(name, "name");

  if (const YAML::Node match = item["match"]; match && !match.IsNull()) {
    if (match.IsScalar()) {
      e.substrings.push_back(lower(match.Scalar()));
    } else if (match.IsSequence()) {
      for (const auto& s : match) e.substrings.push_back(lower(scalar(s, "each match")));
    } else {
      fail(match, "match must be a substring or a list of them");
    }
    if (std::ranges::any_of(e.substrings, [](const std::string& s) { return s.empty(); })) {
      fail(match, "match has an empty substring (it would match every GPU)");
    }
  }
  if (const YAML::Node regex = item["regex"]; regex && !regex.IsNull()) {
    e.regex_text = scalar(regex, "regex");
    auto compiled = compile(e.regex_text);
    if (!compiled) fail(regex, compiled.error());
    e.regex = std::move(*compiled);
  }
  if (e.substrings.empty() && !e.regex) fail(item, fmt::format("gpus entry '{}' needs 'match' or 'regex'", e.name));

  const YAML::Node prices = item["prices"];
  if (!prices || prices.IsNull()) fail(item, fmt::format("gpus entry '{}' needs 'prices'", e.name));
  if (!prices.IsMap()) fail(prices, "prices must be a mapping (tier: USD per GPU-hour)");
  for (auto it = prices.begin(); it != prices.end(); ++it) {
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    const auto tier = parse_price_tier(key);
    if (!tier) fail(it->first, fmt::format("unknown tier '{}' (known: {})", key, price_tier_names()));
    if (it->second.IsNull()) continue;  // `spot:` alone: no price in that tier
    e.usd_per_hour[static_cast<std::size_t>(*tier)] = amount(it->second, fmt::format("price for {}", key));
  }
  if (std::ranges::none_of(e.usd_per_hour, [](const auto& p) { return p.has_value(); })) {
    fail(prices, fmt::format("gpus entry '{}' has no price in any tier", e.name));
  }
  if (const YAML::Node specs = item["specs"]; specs && !specs.IsNull()) e.specs = parse_specs(specs, e.name);
  return e;
}

}  // namespace

std::string_view price_tier_name(PriceTier tier) { return kTierNames[static_cast<std::size_t>(tier)]; }

std::optional<PriceTier> parse_price_tier(std::string_view name) {
  for (std::size_t i = 0; i < kTierNames.size(); ++i) {
    if (kTierNames[i] == name) return static_cast<PriceTier>(i);
  }
  return std::nullopt;
}

std::string price_tier_names() { return fmt::format("{}", fmt::join(kTierNames, ", ")); }

bool PriceEntry::matches(std::string_view model_name) const {
  const std::string name = lower(model_name);
  if (std::ranges::any_of(substrings, [&](const std::string& s) { return name.find(s) != std::string::npos; })) {
    return true;
  }
  return regex && std::regex_search(model_name.begin(), model_name.end(), *regex);
}

std::expected<PriceCatalog, std::string> PriceCatalog::parse(std::string_view text, std::string_view source_name) {
  const auto where = [&](int line) {
    return line > 0 ? fmt::format("{}:{}: ", source_name, line) : fmt::format("{}: ", source_name);
  };
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    if (!root || root.IsNull()) return std::unexpected(where(0) + "empty file (needs 'gpus')");
    expect_keys(root, "the catalog", {"energy_usd_per_kwh", "gpus"});
    PriceCatalog c;
    c.source_ = std::string(source_name);
    if (const YAML::Node kwh = root["energy_usd_per_kwh"]; kwh && !kwh.IsNull()) {
      c.energy_usd_per_kwh_ = amount(kwh, "energy_usd_per_kwh");
    }
    const YAML::Node gpus = root["gpus"];
    if (!gpus || gpus.IsNull()) fail(root, "the catalog needs 'gpus' (a list of GPU entries)");
    if (!gpus.IsSequence()) fail(gpus, "gpus must be a list of entries");
    for (const auto& item : gpus) c.entries_.push_back(parse_entry(item));
    return c;
  } catch (const ParseFailure& f) {
    return std::unexpected(where(f.line) + f.message);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.line >= 0 ? e.mark.line + 1 : 0;
    return std::unexpected(where(line) + "YAML: " + yaml_error_text(e));
  }
}

std::expected<PriceCatalog, std::string> PriceCatalog::load(const std::string& path) {
  auto text = read_file_text(path);
  if (!text) return std::unexpected(fmt::format("{}: cannot open ({})", path, text.error()));
  return parse(*text, path);
}

const PriceEntry* PriceCatalog::find(std::string_view model_name) const {
  for (const auto& e : entries_) {
    if (e.matches(model_name)) return &e;
  }
  return nullptr;
}

std::optional<double> PriceCatalog::hourly_price(std::string_view model_name, PriceTier tier) const {
  // The last override given wins, as the last of repeated flags does.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (it->tier == tier && std::regex_search(model_name.begin(), model_name.end(), it->regex)) return it->usd_per_hour;
  }
  const PriceEntry* e = find(model_name);
  if (e == nullptr) return std::nullopt;
  return e->usd_per_hour[static_cast<std::size_t>(tier)];
}

std::expected<void, std::string> PriceCatalog::add_override(std::string_view spec, PriceTier tier) {
  // The last '=' splits: a regex may hold '=' itself, a price never does.
  const auto eq = spec.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return std::unexpected(fmt::format("'{}' is not MODEL_REGEX=USD", spec));
  }
  const std::string pattern(spec.substr(0, eq));
  const std::string_view price = spec.substr(eq + 1);
  double usd = 0;
  const auto [ptr, ec] = std::from_chars(price.data(), price.data() + price.size(), usd);
  if (price.empty() || ec != std::errc{} || ptr != price.data() + price.size() || !std::isfinite(usd) || usd < 0) {
    return std::unexpected(fmt::format("'{}': the price '{}' must be a number of USD, zero or more", spec, price));
  }
  auto regex = compile(pattern);
  if (!regex) return std::unexpected(fmt::format("'{}': {}", spec, regex.error()));
  overrides_.push_back({std::move(*regex), tier, usd});
  return {};
}

}  // namespace gpuscope::model
