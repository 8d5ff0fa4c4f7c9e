// The price catalog: its format's errors (one line naming file:line), matching NVML names, tiers and
// overrides, and the shipped catalog/gpu_prices.yaml against every GPU model the simulator knows.
#include "model/price_catalog.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace gpuscope::model {
namespace {

const std::string kShipped = std::string(GPUSCOPE_SOURCE_DIR) + "/catalog/gpu_prices.yaml";

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::expected<PriceCatalog, std::string>& r) { return r ? "" : r.error(); }

// Every model name the simulator can present: its GPU table (src/sim/gpu_catalog.cc) and the scenarios'
// `model:` lines. Read from the sources so a model added there is seen here.
std::set<std::string> simulator_model_names() {
  std::set<std::string> names;
  const std::string table = read_text(std::string(GPUSCOPE_SOURCE_DIR) + "/src/sim/gpu_catalog.cc");
  const std::regex name_re(R"re(\.name = "([^"]+)")re");
  for (std::sregex_iterator it(table.begin(), table.end(), name_re), end; it != end; ++it) names.insert((*it)[1]);
  const std::regex model_re(R"re(^\s*model:\s*"?([^"#]*[^"#\s])"?\s*(#.*)?$)re");
  for (const auto& f : std::filesystem::directory_iterator(std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios")) {
    if (f.path().extension() != ".yaml") continue;
    std::istringstream text(read_text(f.path()));
    std::smatch m;
    for (std::string line; std::getline(text, line);) {
      if (std::regex_match(line, m, model_re)) names.insert(m[1]);
    }
  }
  return names;
}

constexpr std::string_view kSmall = R"(energy_usd_per_kwh: 0.12
gpus:
  - name: H100 80GB SXM
    match: ["H100 80GB HBM3", "H100-SXM5-80GB"]
    prices: {on_demand: 5.505, spot: 1.65}
  - name: A100 80GB
    regex: 'A100.*80GB'
    prices:
      on_demand: 3.673
      commit_3y: 1.58
)";

TEST(PriceCatalog, ParsesEntriesTiersAndEnergy) {
  auto c = PriceCatalog::parse(kSmall, "small.yaml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->source(), "small.yaml");
  ASSERT_EQ(c->entries().size(), 2u);
  EXPECT_EQ(c->entries()[0].name, "H100 80GB SXM");
  EXPECT_EQ(c->entries()[0].line, 3);
  EXPECT_EQ(c->energy_usd_per_kwh(), 0.12);
  EXPECT_EQ(c->hourly_price("NVIDIA H100 80GB HBM3", PriceTier::kOnDemand), 5.505);
  EXPECT_EQ(c->hourly_price("NVIDIA H100 80GB HBM3", PriceTier::kSpot), 1.65);
  EXPECT_EQ(c->hourly_price("nvidia h100-sxm5-80gb", PriceTier::kOnDemand), 5.505) << "substrings ignore case";
  EXPECT_EQ(c->hourly_price("NVIDIA A100-SXM4-80GB", PriceTier::kCommit3y), 1.58);
  EXPECT_EQ(c->hourly_price("NVIDIA A100 80GB PCIe", PriceTier::kOnDemand), 3.673);
  EXPECT_EQ(c->hourly_price("nvidia a100-sxm4-80gb", PriceTier::kOnDemand), 3.673) << "regexes ignore case";
  // A tier the entry leaves out has no price: absent, never 0.
  EXPECT_EQ(c->hourly_price("NVIDIA H100 80GB HBM3", PriceTier::kCommit1y), std::nullopt);
  EXPECT_EQ(c->hourly_price("NVIDIA A100-SXM4-40GB", PriceTier::kOnDemand), std::nullopt);
  EXPECT_EQ(c->hourly_price("NVIDIA H100 PCIe", PriceTier::kOnDemand), std::nullopt);
}

TEST(PriceCatalog, FirstMatchingEntryOwnsTheName) {
  auto c = PriceCatalog::parse(R"(gpus:
  - name: narrow
    match: "H100 PCIe"
    prices: {spot: 1}
  - name: broad
    match: "H100"
    prices: {on_demand: 4, spot: 2}
)",
                               "order.yaml");
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->find("NVIDIA H100 PCIe")->name, "narrow");
  EXPECT_EQ(c->hourly_price("NVIDIA H100 PCIe", PriceTier::kSpot), 1);
  EXPECT_EQ(c->hourly_price("NVIDIA H100 PCIe", PriceTier::kOnDemand), std::nullopt) << "no fall-through";
  EXPECT_EQ(c->hourly_price("NVIDIA H100 80GB HBM3", PriceTier::kOnDemand), 4);
  EXPECT_EQ(c->find("Tesla T4"), nullptr);
}

TEST(PriceCatalog, ErrorsNameFileAndLine) {
  const auto bad = [](std::string_view text) { return error_of(PriceCatalog::parse(text, "p.yaml")); };
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: [x]\n    prices: {ondemand: 1}\n"),
            "p.yaml:4: unknown tier 'ondemand' (known: on_demand, spot, commit_1y, commit_3y)");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: [x]\n    prices:\n      spot: -0.5\n"),
            "p.yaml:5: price for spot is negative (-0.5)");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: [x]\n    prices:\n      spot: cheap\n"),
            "p.yaml:5: price for spot must be a number (USD), not 'cheap'");
  EXPECT_EQ(bad("gpus:\n  - match: [x]\n    prices: {spot: 1}\n"), "p.yaml:2: a gpus entry needs 'name'");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    prices: {spot: 1}\n"), "p.yaml:2: gpus entry 'X' needs 'match' or 'regex'");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: [x]\n"), "p.yaml:2: gpus entry 'X' needs 'prices'");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: [x]\n    prices: {spot: }\n"),
            "p.yaml:4: gpus entry 'X' has no price in any tier");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: ['']\n    prices: {spot: 1}\n"),
            "p.yaml:3: match has an empty substring (it would match every GPU)");
  EXPECT_EQ(bad("gpus:\n  - name: X\n    match: [x]\n    price: {spot: 1}\n"),
            "p.yaml:4: unknown key 'price' in a gpus entry (known: name, match, regex, prices, specs)");
  EXPECT_EQ(bad("energy_usd_per_kwh: 0.12\n"), "p.yaml:1: the catalog needs 'gpus' (a list of GPU entries)");
  EXPECT_EQ(bad("energy_usd_per_kwh: -1\ngpus: []\n"), "p.yaml:1: energy_usd_per_kwh is negative (-1)");
  EXPECT_EQ(bad(""), "p.yaml: empty file (needs 'gpus')");
  EXPECT_TRUE(bad("gpus: [\n").starts_with("p.yaml:")) << bad("gpus: [\n");
  const std::string regex = bad("gpus:\n  - name: X\n    regex: 'A100(80GB'\n    prices: {spot: 1}\n");
  EXPECT_TRUE(regex.starts_with("p.yaml:3: bad regex 'A100(80GB': ")) << regex;
  EXPECT_EQ(regex.find('\n'), std::string::npos);
  const std::string missing = error_of(PriceCatalog::load("/nonexistent/prices.yaml"));
  EXPECT_TRUE(missing.starts_with("/nonexistent/prices.yaml: cannot open")) << missing;
  // A directory opens and then fails to read: it read as an empty file ("empty file (needs 'gpus')").
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(error_of(PriceCatalog::load(dir)), dir + ": cannot open (Is a directory)");
  // yaml-cpp 0.7 says "bad file" for a document nested past its parser's limit.
  EXPECT_EQ(bad("gpus: " + std::string(10000, '[') + "\n"),
            "p.yaml:2: YAML: nested too deeply (more levels of lists and maps than the YAML parser allows)");
}

constexpr std::string_view kWithSpecs = R"(gpus:
  - name: H100 80GB SXM
    match: ["H100 80GB HBM3"]
    prices: {on_demand: 5.505}
    specs:
      memory_gib: 80
      architecture: Hopper
      bf16_tflops: 989
      fp16_tensor_tflops: 989
      fp32_tflops: 67
      memory_bandwidth_gb_per_s: 3350
      pcie_gen: 5
      pcie_width: 16
  - name: T4
    match: ["Tesla T4"]
    prices: {on_demand: 0.35}
    specs: {memory_gib: 16, architecture: Turing, fp16_tensor_tflops: 65, fp32_tflops: 8.1,
            memory_bandwidth_gb_per_s: 320, pcie_gen: 3, pcie_width: 16}
  - name: L4
    regex: '^NVIDIA L4$'
    prices: {on_demand: 0.888}
)";

TEST(PriceCatalog, ParsesSpecs) {
  auto c = PriceCatalog::parse(kWithSpecs, "specs.yaml");
  ASSERT_TRUE(c) << c.error();
  ASSERT_EQ(c->entries().size(), 3u);
  const auto& h100 = c->entries()[0].specs;
  ASSERT_TRUE(h100.has_value());
  EXPECT_EQ(h100->memory_gib, 80);
  EXPECT_EQ(h100->architecture, "Hopper");
  EXPECT_EQ(h100->bf16_tflops, 989);
  EXPECT_EQ(h100->fp16_tensor_tflops, 989);
  EXPECT_EQ(h100->fp32_tflops, 67);
  EXPECT_EQ(h100->memory_bandwidth_gb_per_s, 3350);
  EXPECT_EQ(h100->pcie_gen, 5);
  EXPECT_EQ(h100->pcie_width, 16);
  const auto& t4 = c->find("Tesla T4")->specs;
  ASSERT_TRUE(t4.has_value());
  EXPECT_EQ(t4->bf16_tflops, std::nullopt) << "left out: the GPU has no bf16";
  EXPECT_EQ(t4->fp16_tensor_tflops, 65);
  EXPECT_DOUBLE_EQ(t4->fp32_tflops, 8.1);
  EXPECT_EQ(t4->pcie_gen, 3);
  EXPECT_FALSE(c->find("NVIDIA L4")->specs.has_value()) << "specs are optional";
}

TEST(PriceCatalog, BadSpecsNameFileAndLine) {
  const auto bad = [](std::string_view specs) {
    const std::string text =
        "gpus:\n  - name: X\n    match: [x]\n    prices: {spot: 1}\n    specs:\n" + std::string(specs);
    return error_of(PriceCatalog::parse(text, "s.yaml"));
  };
  constexpr std::string_view kGood =
      "      memory_gib: 24\n      architecture: Ada Lovelace\n      fp32_tflops: 30.3\n"
      "      memory_bandwidth_gb_per_s: 300\n      pcie_gen: 4\n      pcie_width: 16\n";
  EXPECT_EQ(bad(kGood), "");
  EXPECT_EQ(bad(std::string(kGood) + "      fp8_tflops: 485\n"),
            "s.yaml:12: unknown key 'fp8_tflops' in specs (known: memory_gib, architecture, bf16_tflops, "
            "fp16_tensor_tflops, fp32_tflops, memory_bandwidth_gb_per_s, pcie_gen, pcie_width)");
  EXPECT_EQ(bad(std::string(kGood) + "      bf16_tflops: -121\n"), "s.yaml:12: bf16_tflops must be above 0 (-121)");
  EXPECT_EQ(bad("      memory_gib: 0\n      architecture: A\n      fp32_tflops: 1\n"
                "      memory_bandwidth_gb_per_s: 1\n      pcie_gen: 4\n      pcie_width: 16\n"),
            "s.yaml:6: memory_gib must be above 0 (0)");
  EXPECT_EQ(bad("      memory_gib: 24\n      architecture: A\n"
                "      memory_bandwidth_gb_per_s: 300\n      pcie_gen: 4\n      pcie_width: 16\n"),
            "s.yaml:6: specs of 'X' need 'fp32_tflops'");
  EXPECT_EQ(bad("      memory_gib: 24\n      architecture: A\n      fp32_tflops: .nan\n"
                "      memory_bandwidth_gb_per_s: 300\n      pcie_gen: 4\n      pcie_width: 16\n"),
            "s.yaml:8: fp32_tflops must be a number, not '.nan'");
  EXPECT_EQ(bad("      memory_gib: 24\n      architecture: A\n      fp32_tflops: inf\n"
                "      memory_bandwidth_gb_per_s: 300\n      pcie_gen: 4\n      pcie_width: 16\n"),
            "s.yaml:8: fp32_tflops must be a number, not 'inf'");
  EXPECT_EQ(bad("      memory_gib: 24\n      architecture: A\n      fp32_tflops: 30\n"
                "      memory_bandwidth_gb_per_s: 300\n      pcie_gen: 6\n      pcie_width: 16\n"),
            "s.yaml:10: pcie_gen must be 1 to 5 (6)");
  EXPECT_EQ(bad("      memory_gib: 24\n      architecture: A\n      fp32_tflops: 30\n"
                "      memory_bandwidth_gb_per_s: 300\n      pcie_gen: 4\n      pcie_width: 16.5\n"),
            "s.yaml:11: pcie_width must be a whole number, not '16.5'");
  EXPECT_EQ(bad("      - 24\n"), "s.yaml:6: specs must be a mapping (key: value lines)");
  for (const auto& e : {bad(std::string(kGood) + "      fp8_tflops: 485\n"), bad("      memory_gib: -1\n")}) {
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(PriceCatalog, TierNamesRoundTrip) {
  for (auto t : {PriceTier::kOnDemand, PriceTier::kSpot, PriceTier::kCommit1y, PriceTier::kCommit3y}) {
    EXPECT_EQ(parse_price_tier(price_tier_name(t)), t);
  }
  EXPECT_EQ(parse_price_tier("on-demand"), std::nullopt);
  EXPECT_EQ(price_tier_names(), "on_demand, spot, commit_1y, commit_3y");
}

TEST(PriceCatalog, OverridesWinInTheirTierAndTheLastOneWins) {
  auto c = PriceCatalog::parse(kSmall, "small.yaml");
  ASSERT_TRUE(c) << c.error();
  ASSERT_TRUE(c->add_override("h100=2.5", PriceTier::kOnDemand));
  ASSERT_TRUE(c->add_override("H100.*HBM3=2.1", PriceTier::kOnDemand));
  ASSERT_TRUE(c->add_override("^NVIDIA L40S$=1.2", PriceTier::kOnDemand));
  EXPECT_EQ(c->hourly_price("NVIDIA H100 80GB HBM3", PriceTier::kOnDemand), 2.1);
  EXPECT_EQ(c->hourly_price("NVIDIA H100 PCIe", PriceTier::kOnDemand), 2.5);
  EXPECT_EQ(c->hourly_price("NVIDIA H100 80GB HBM3", PriceTier::kSpot), 1.65) << "other tiers keep the catalog's";
  EXPECT_EQ(c->hourly_price("NVIDIA L40S", PriceTier::kOnDemand), 1.2);
  EXPECT_EQ(c->add_override("H100", PriceTier::kOnDemand).error(), "'H100' is not MODEL_REGEX=USD");
  EXPECT_EQ(c->add_override("=3", PriceTier::kOnDemand).error(), "'=3' is not MODEL_REGEX=USD");
  EXPECT_EQ(c->add_override("H100=-1", PriceTier::kOnDemand).error(),
            "'H100=-1': the price '-1' must be a number of USD, zero or more");
  EXPECT_TRUE(c->add_override("H100(=1", PriceTier::kOnDemand).error().starts_with("'H100(=1': bad regex 'H100(': "));
}

// The shipped file loads, and every model the simulator presents is either priced in every tier the
// reference table gives or is on the known-unpriced list: a model added to the simulator fails here
// until someone decides which.
TEST(ShippedPriceCatalog, LoadsAndPricesTheSimulatorsModels) {
  auto c = PriceCatalog::load(kShipped);
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->energy_usd_per_kwh(), 0.12);

  const std::set<std::string> priced{"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L4", "Tesla T4",
                                     "Tesla V100-SXM2-32GB"};
  // Not in the source documents' price table: no price rather than a guess.
  const std::set<std::string> unpriced{"NVIDIA H200", "NVIDIA A100-PCIE-40GB", "NVIDIA A10G"};
  const auto names = simulator_model_names();
  EXPECT_GE(names.size(), 8u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(priced.contains(name) || unpriced.contains(name)) << "simulator model not classified here";
    if (priced.contains(name)) {
      EXPECT_TRUE(c->hourly_price(name, PriceTier::kOnDemand).has_value());
      EXPECT_TRUE(c->hourly_price(name, PriceTier::kCommit1y).has_value());
      EXPECT_TRUE(c->hourly_price(name, PriceTier::kCommit3y).has_value());
    } else {
      EXPECT_EQ(c->find(name), nullptr) << "matched by '" << c->find(name)->name << "'";
    }
  }
}

TEST(ShippedPriceCatalog, HasTheReferenceTablesNumbers) {
  auto c = PriceCatalog::load(kShipped);
  ASSERT_TRUE(c) << c.error();
  const auto price = [&](std::string_view name, PriceTier t) { return c->hourly_price(name, t).value_or(-1); };
  EXPECT_DOUBLE_EQ(price("NVIDIA A100-SXM4-80GB", PriceTier::kOnDemand), 3.673);
  EXPECT_DOUBLE_EQ(price("NVIDIA A100-SXM4-80GB", PriceTier::kSpot), 1.10);
  EXPECT_DOUBLE_EQ(price("NVIDIA A100-SXM4-80GB", PriceTier::kCommit1y), 2.31);
  EXPECT_DOUBLE_EQ(price("NVIDIA A100-SXM4-80GB", PriceTier::kCommit3y), 1.58);
  EXPECT_DOUBLE_EQ(price("NVIDIA H100 80GB HBM3", PriceTier::kOnDemand), 5.505);
  EXPECT_DOUBLE_EQ(price("NVIDIA H100 80GB HBM3", PriceTier::kSpot), 1.65);
  EXPECT_DOUBLE_EQ(price("NVIDIA L4", PriceTier::kSpot), 0.266);
  EXPECT_DOUBLE_EQ(price("Tesla T4", PriceTier::kOnDemand), 0.35);
  EXPECT_DOUBLE_EQ(price("Tesla V100-SXM2-16GB", PriceTier::kOnDemand), 2.48);
  EXPECT_EQ(c->hourly_price("Tesla V100-SXM2-16GB", PriceTier::kSpot), std::nullopt) << "the table has none";
  // The commitments the table gives only as -37% / -57% are written out to 4 decimals.
  for (const char* name : {"NVIDIA H100 80GB HBM3", "NVIDIA L4", "Tesla T4", "Tesla V100-SXM2-16GB"}) {
    SCOPED_TRACE(name);
    const double on_demand = price(name, PriceTier::kOnDemand);
    EXPECT_NEAR(price(name, PriceTier::kCommit1y), on_demand * 0.63, 0.00006);
    EXPECT_NEAR(price(name, PriceTier::kCommit3y), on_demand * 0.43, 0.00006);
  }
  // Neighbours that are other products (other prices) stay unpriced rather than borrowing one.
  for (const char* name : {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
                           "NVIDIA H200", "NVIDIA L40S", "NVIDIA L40", "Tesla V100S-PCIE-32GB"}) {
    EXPECT_EQ(c->find(name), nullptr) << name << " matched by '" << c->find(name)->name << "'";
  }
  EXPECT_NE(c->find("NVIDIA H100-SXM5-80GB"), nullptr);
  EXPECT_NE(c->find("NVIDIA A100 80GB PCIe"), nullptr);
}

// Right-sizing needs the specs of every priced product, and picks by them: the datasheets' figures
// (dense tensor numbers; the V100 entry at its 16GB board's memory) must be what the file says.
TEST(ShippedPriceCatalog, HasDatasheetSpecsForEveryEntry) {
  auto c = PriceCatalog::load(kShipped);
  ASSERT_TRUE(c) << c.error();
  ASSERT_EQ(c->entries().size(), 5u);
  for (const auto& e : c->entries()) {
    SCOPED_TRACE(e.name);
    ASSERT_TRUE(e.specs.has_value());
    EXPECT_FALSE(e.specs->architecture.empty());
    EXPECT_TRUE(e.specs->fp16_tensor_tflops.has_value()) << "every shipped GPU has fp16 tensor cores";
    if (e.specs->bf16_tflops) {
      EXPECT_EQ(e.specs->bf16_tflops, e.specs->fp16_tensor_tflops) << "dense bf16 = fp16";
    }
  }
  const auto specs = [&](std::string_view nvml) { return *c->find(nvml)->specs; };
  EXPECT_EQ(specs("NVIDIA H100 80GB HBM3").memory_gib, 80);
  EXPECT_EQ(specs("NVIDIA H100 80GB HBM3").bf16_tflops, 989) << "dense, not the 1,979 with sparsity";
  EXPECT_EQ(specs("NVIDIA H100 80GB HBM3").pcie_gen, 5);
  EXPECT_EQ(specs("NVIDIA A100-SXM4-80GB").bf16_tflops, 312);
  EXPECT_EQ(specs("NVIDIA A100-SXM4-80GB").fp32_tflops, 19.5);
  EXPECT_EQ(specs("NVIDIA L4").memory_gib, 24);
  EXPECT_EQ(specs("NVIDIA L4").bf16_tflops, 121);
  EXPECT_EQ(specs("NVIDIA L4").memory_bandwidth_gb_per_s, 300);
  EXPECT_EQ(specs("Tesla T4").bf16_tflops, std::nullopt) << "Turing has no bf16";
  EXPECT_EQ(specs("Tesla T4").fp16_tensor_tflops, 65);
  EXPECT_EQ(specs("Tesla T4").pcie_gen, 3);
  EXPECT_EQ(specs("Tesla V100-SXM2-32GB").memory_gib, 16) << "the 16GB board: the conservative one";
  EXPECT_EQ(specs("Tesla V100-SXM2-16GB").bf16_tflops, std::nullopt) << "Volta has no bf16";
  EXPECT_EQ(specs("Tesla V100-SXM2-16GB").fp16_tensor_tflops, 125);
}

}  // namespace
}  // namespace gpuscope::model
