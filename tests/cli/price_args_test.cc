// The price flags of `serve`: where the default catalog is found, the tier and overrides, the per-GPU
// prices they give, and one-line errors (exit 2) for a bad tier, catalog file or override.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli/price_flags.h"
#include "cli/serve_verb.h"
#include "cli_runner.h"
#include "cli/scratch_dir.h"

namespace gpuscope::cli {
namespace {

namespace fs = std::filesystem;

const std::string kShipped = std::string(GPUSCOPE_SOURCE_DIR) + "/catalog/gpu_prices.yaml";

std::string price_error_of(const std::expected<ServeOptions, ParseExit>& r) { return r ? "" : r.error().text; }

using testing::ScratchDir;

model::GpuInfo gpu(unsigned index, std::string name) {
  model::GpuInfo g;
  g.index = index;
  g.name = std::move(name);
  return g;
}

TEST(PriceArgs, DefaultCatalogIsTheInstalledOneElseTheSourceTrees) {
  ScratchDir d;
  // <prefix>/bin/gpuscope finds <prefix>/share/gpuscope/gpu_prices.yaml.
  const std::string installed = d.write("prefix/share/gpuscope/gpu_prices.yaml", "gpus: []\n");
  EXPECT_EQ(default_price_catalog(d.dir("prefix/bin")), fs::weakly_canonical(installed).string());
  // <tree>/build/gpuscope finds <tree>/catalog/gpu_prices.yaml.
  const std::string source = d.write("tree/catalog/gpu_prices.yaml", "gpus: []\n");
  EXPECT_EQ(default_price_catalog(d.dir("tree/build")), fs::weakly_canonical(source).string());
  // Neither: no default, and then no catalog and no error.
  const std::string bare = d.dir("elsewhere/bin");
  EXPECT_EQ(default_price_catalog(bare), "");
  auto none = select_prices(PriceFlags{}, bare);
  ASSERT_TRUE(none) << none.error();
  EXPECT_FALSE(none->catalog.has_value());
  EXPECT_TRUE(hourly_prices(*none, std::vector{gpu(0, "NVIDIA H100 80GB HBM3")}).empty());
}

TEST(PriceArgs, CatalogTierAndPerGpuPrices) {
  auto d = parse_serve_args(std::vector<std::string>{});
  ASSERT_TRUE(d) << price_error_of(d);
  EXPECT_EQ(d->price_tier, model::PriceTier::kOnDemand);

  auto o = parse_serve_args(std::vector<std::string>{"--price-catalog", kShipped, "--price-tier", "spot"});
  ASSERT_TRUE(o) << price_error_of(o);
  ASSERT_TRUE(o->price_catalog.has_value());
  EXPECT_EQ(o->price_catalog->source(), kShipped);
  EXPECT_EQ(o->price_tier, model::PriceTier::kSpot);
  const std::vector gpus{gpu(0, "NVIDIA H100 80GB HBM3"), gpu(1, "NVIDIA H200"), gpu(2, "Tesla V100-SXM2-32GB")};
  // H200: not in the catalog; V100: no spot price. Neither gets a price (never 0).
  EXPECT_EQ(hourly_prices(PriceSelection{o->price_catalog, o->price_tier}, gpus), (std::map<unsigned, double>{{0, 1.65}}));

  auto c = parse_serve_args(std::vector<std::string>{"--price-catalog", kShipped, "--price-tier", "commit_3y",
                                                     "--price-override", "H200=4.5", "--price-override",
                                                     "V100-SXM2=1.0"});
  ASSERT_TRUE(c) << price_error_of(c);
  EXPECT_EQ(hourly_prices(PriceSelection{c->price_catalog, c->price_tier}, gpus), (std::map<unsigned, double>{{0, 2.3672}, {1, 4.5}, {2, 1.0}}));
}

TEST(PriceArgs, OverridesAloneNeedNoCatalog) {
  ScratchDir d;
  PriceFlags flags;
  flags.overrides = {"H100=2.0"};
  auto s = select_prices(flags, d.dir("bin"));
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(hourly_prices(*s, std::vector{gpu(0, "NVIDIA H100 80GB HBM3"), gpu(1, "NVIDIA L4")}),
            (std::map<unsigned, double>{{0, 2.0}}));
}

TEST(PriceArgs, BadValuesAreOneLineErrors) {
  ScratchDir d;
  const auto err = [](std::vector<std::string> a) { return price_error_of(parse_serve_args(a)); };
  EXPECT_EQ(err({"--price-tier", "ondemand"}),
            "invalid value 'ondemand' for --price-tier (on_demand, spot, commit_1y, commit_3y)");
  const std::string bad = d.write("bad.yaml", "gpus:\n  - name: X\n    match: [x]\n    prices: {reserved: 1}\n");
  EXPECT_EQ(err({"--price-catalog", bad}),
            "--price-catalog " + bad + ":4: unknown tier 'reserved' (known: on_demand, spot, commit_1y, commit_3y)");
  const std::string negative = d.write("neg.yaml", "gpus:\n  - name: X\n    match: [x]\n    prices:\n      spot: -1\n");
  EXPECT_EQ(err({"--price-catalog", negative}), "--price-catalog " + negative + ":5: price for spot is negative (-1)");
  EXPECT_TRUE(err({"--price-catalog", "/nonexistent/p.yaml"}).starts_with("--price-catalog /nonexistent/p.yaml: cannot open"));
  EXPECT_EQ(err({"--price-catalog", kShipped, "--price-override", "H100"}), "--price-override 'H100' is not MODEL_REGEX=USD");
  EXPECT_EQ(err({"--price-catalog", kShipped, "--price-override", "H100=free"}),
            "--price-override 'H100=free': the price 'free' must be a number of USD, zero or more");

  // Through the whole CLI: one line on stderr, exit 2, before any NVML is opened.
  auto r = testing::run_gpuscope({"serve", "--price-catalog", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: --price-catalog " + bad +
                       ":4: unknown tier 'reserved' (known: on_demand, spot, commit_1y, commit_3y)\n");
  r = testing::run_gpuscope({"serve", "--price-tier", "hourly"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "gpuscope: invalid value 'hourly' for --price-tier (on_demand, spot, commit_1y, commit_3y)\n");
}

TEST(PriceArgs, ServeHelpDocumentsTheFlags) {
  auto r = testing::run_gpuscope({"serve", "--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--price-catalog", "--price-tier", "--price-override", "gpu_prices.yaml", "commit_3y"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag << "\n" << r.out;
  }
}

}  // namespace
}  // namespace gpuscope::cli
