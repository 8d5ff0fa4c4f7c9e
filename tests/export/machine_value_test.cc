#include "export/machine_value.h"

#include <cmath>

#include <gtest/gtest.h>

#include "model/field_catalog.h"

namespace gpuscope::exporter {
namespace {

TEST(JsonKey, AppendsTheUnitSuffix) {
  EXPECT_EQ(json_key("temperature.gpu", "C"), "temperature.gpu_celsius");
  EXPECT_EQ(json_key("memory.used", "MiB"), "memory.used_mib");
  EXPECT_EQ(json_key("power.draw", "W"), "power.draw_watts");
  EXPECT_EQ(json_key("utilization.gpu", "%"), "utilization.gpu_percent");
  EXPECT_EQ(json_key("clocks.sm", "MHz"), "clocks.sm_mhz");
  EXPECT_EQ(json_key("rxpci", "MB/s"), "rxpci_mb_per_second");
}

TEST(JsonKey, DimensionlessUnitsAddNothing) {
  EXPECT_EQ(json_key("pcie.link.gen.current", "gen"), "pcie.link.gen.current");
  EXPECT_EQ(json_key("ecc.errors.corrected.volatile.total", "count"), "ecc.errors.corrected.volatile.total");
  EXPECT_EQ(json_key("pstate", "pstate"), "pstate");
}

TEST(JsonKey, UnknownUnitIsSpelledOut) { EXPECT_EQ(json_key("x", "Foo/s"), "x_foo_s"); }

TEST(JsonKey, EveryCatalogUnitHasASuffix) {
  for (const auto& def : model::FieldCatalog::all()) {
    EXPECT_TRUE(unit_suffix(def.unit).has_value()) << def.key << " has unit '" << def.unit << "' without a suffix";
  }
}

TEST(JsonNumber, WholeValuesAreIntegers) {
  EXPECT_EQ(json_number(45.0).dump(), "45");
  EXPECT_TRUE(json_number(45.0).is_number_integer());
  EXPECT_EQ(json_number(-3.0).dump(), "-3");
}

TEST(JsonNumber, FractionsAreRoundedToSixDecimals) {
  EXPECT_EQ(json_number(250123 * 1e-3).dump(), "250.123");
  EXPECT_EQ(json_number(0.1 + 0.2).dump(), "0.3");
}

TEST(JsonNumber, NonFiniteIsNull) {
  EXPECT_TRUE(json_number(std::nan("")).is_null());
  EXPECT_TRUE(json_number(INFINITY).is_null());
}

}  // namespace
}  // namespace gpuscope::exporter

namespace gpuscope::exporter {
namespace {

TEST(JsonLine, InvalidUtf8IsReplacedNotThrown) {
  nlohmann::ordered_json doc = {{"process_name", std::string("py\xff")}};
  std::string line;
  ASSERT_NO_THROW(line = json_line(doc));
  EXPECT_EQ(line, "{\"process_name\":\"py\xEF\xBF\xBD\"}");
}

}  // namespace
}  // namespace gpuscope::exporter
