#include "export/exposition_writer.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "export/exposition_parser.h"

namespace gpuscope::exporter {
namespace {

using model::MetricType;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string value_text(double v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string label_text(std::string_view v) {
  std::string out;
  append_label_value(out, v);
  return out;
}

// --- negotiate_format ---

TEST(NegotiateFormat, NoOrPlainAcceptGivesTheTextFormat) {
  EXPECT_EQ(negotiate_format(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("*/*"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain;version=0.0.4"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/json, text/html;q=0.9"), ExpositionFormat::kPrometheusText);
}

TEST(NegotiateFormat, PrometheusScrapeHeaderGetsOpenMetrics) {
  // What Prometheus 2.x sends by default.
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
                             "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format("application/openmetrics-text"), ExpositionFormat::kOpenMetrics);
}

TEST(NegotiateFormat, OpenMetricsNamedLaterWithSpacesAndAPositiveQ) {
  EXPECT_EQ(negotiate_format("text/plain;version=0.0.4;q=0.5, application/openmetrics-text; version=1.0.0; q=0.3"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(negotiate_format("text/plain,   application/openmetrics-text;q=1"), ExpositionFormat::kOpenMetrics);
}

TEST(NegotiateFormat, QZeroRefusesOpenMetrics) {
  EXPECT_EQ(negotiate_format("application/openmetrics-text;q=0"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("application/openmetrics-text; version=1.0.0; q=0.0, text/plain;version=0.0.4"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(negotiate_format("text/plain, application/openmetrics-text;version=1.0.0;q=0.000"),
            ExpositionFormat::kPrometheusText);
}

TEST(NegotiateFormat, ARefusedEntryDoesNotHideALaterAcceptedOne) {
  EXPECT_EQ(negotiate_format("application/openmetrics-text;version=0.0.1;q=0,application/openmetrics-text;"
                             "version=1.0.0;q=0.2"),
            ExpositionFormat::kOpenMetrics);
}

TEST(NegotiateFormat, ContentTypesNameTheirFormats) {
  EXPECT_EQ(kPrometheusTextContentType, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(kOpenMetricsContentType, "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

// --- append_value ---

TEST(AppendValue, IntegersHaveNoFraction) {
  EXPECT_EQ(value_text(0), "0");
  EXPECT_EQ(value_text(1), "1");
  EXPECT_EQ(value_text(42), "42");
  EXPECT_EQ(value_text(-7), "-7");
  EXPECT_EQ(value_text(1980), "1980");
  EXPECT_EQ(value_text(81559.0 * 1024 * 1024), "85520809984");
  EXPECT_EQ(value_text(1e14), "100000000000000");
  EXPECT_EQ(value_text(-0.0), "0");
}

TEST(AppendValue, FractionsUseTheShortestRoundTripForm) {
  EXPECT_EQ(value_text(0.5), "0.5");
  EXPECT_EQ(value_text(0.1), "0.1");
  EXPECT_EQ(value_text(250.123), "250.123");
  EXPECT_EQ(value_text(-1.25), "-1.25");
  EXPECT_EQ(value_text(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(value_text(0.87), "0.87");
}

TEST(AppendValue, NaNAndInfinitiesAreSpelledAsPrometheusParsesThem) {
  EXPECT_EQ(value_text(kNaN), "NaN");
  EXPECT_EQ(value_text(-kNaN), "NaN");
  EXPECT_EQ(value_text(kInf), "+Inf");
  EXPECT_EQ(value_text(-kInf), "-Inf");
}

TEST(AppendValue, AppendsWithoutTouchingWhatIsThere) {
  std::string out = "x ";
  append_value(out, 2.5);
  EXPECT_EQ(out, "x 2.5");
}

TEST(AppendValue, EveryFiniteValueReadsBackBitForBit) {
  const double values[] = {0.1,
                           2.0 / 3.0,
                           1e-7,
                           5e-324,
                           std::numeric_limits<double>::min(),
                           std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::max(),
                           1e15,
                           1e15 + 1,
                           9007199254740993.0,
                           123456789012345.6,
                           1.5e300,
                           -2.5e-300,
                           3.141592653589793,
                           999999999999999.0,
                           1e21};
  for (double v : values) {
    const std::string text = value_text(v);
    char* end = nullptr;
    const double back = std::strtod(text.c_str(), &end);
    EXPECT_EQ(end, text.c_str() + text.size()) << text;
    EXPECT_EQ(std::bit_cast<std::uint64_t>(back), std::bit_cast<std::uint64_t>(v)) << v << " -> " << text;
    EXPECT_EQ(text.find_first_of(" ,{}"), std::string::npos) << text;
  }
}

// --- label values ---

TEST(AppendLabelValue, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(label_text(R"(C:\temp)"), R"(C:\\temp)");
  EXPECT_EQ(label_text(R"(say "hi")"), R"(say \"hi\")");
  EXPECT_EQ(label_text("two\nlines"), R"(two\nlines)");
  EXPECT_EQ(label_text("\\\"\n"), R"(\\\"\n)");
}

TEST(AppendLabelValue, LeavesEverythingElseAlone) {
  EXPECT_EQ(label_text(""), "");
  EXPECT_EQ(label_text("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(label_text("tab\there, comma} {brace='x'"), "tab\there, comma} {brace='x'");
  EXPECT_EQ(label_text("größe ☃"), "größe ☃");
  EXPECT_EQ(label_text("cr\r"), "cr\r");
}

TEST(LabelSet, JoinsEscapedPairsWithCommas) {
  LabelSet l;
  EXPECT_EQ(l.text(), "");
  l.add("gpu", "0");
  EXPECT_EQ(l.text(), R"(gpu="0")");
  l.add("name", "a\"b\\c\nd").add("empty", "");
  EXPECT_EQ(l.text(), R"(gpu="0",name="a\"b\\c\nd",empty="")");
}

TEST(LabelSet, NastyValuesParseBackUnchanged) {
  const std::string nasty = "quote\" backslash\\ newline\n end\\n \\\" ,}";
  LabelSet l;
  l.add("a", nasty).add("b", "plain");
  std::string out;
  ExpositionWriter w(ExpositionFormat::kPrometheusText, out);
  w.family("m", MetricType::kGauge, "h");
  w.sample("m", l.text(), 1);
  auto parsed = testing::parse_exposition(out, false);
  ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << out;
  ASSERT_EQ(parsed->families.size(), 1u);
  ASSERT_EQ(parsed->families[0].samples.size(), 1u);
  EXPECT_EQ(parsed->families[0].samples[0].labels.at("a"), nasty);
  EXPECT_EQ(parsed->families[0].samples[0].labels.at("b"), "plain");
}

// --- families ---

TEST(ExpositionWriter, TextFormatDeclaresTypesAsGiven) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kPrometheusText, out);
  w.family("requests_total", MetricType::kCounter, "Requests.");
  w.family("temperature_celsius", MetricType::kGauge, "Temperature.");
  w.family("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", MetricType::kCounter, "Retries.");
  EXPECT_EQ(out,
            "# HELP requests_total Requests.\n"
            "# TYPE requests_total counter\n"
            "# HELP temperature_celsius Temperature.\n"
            "# TYPE temperature_celsius gauge\n"
            "# HELP DCGM_FI_DEV_PCIE_REPLAY_COUNTER Retries.\n"
            "# TYPE DCGM_FI_DEV_PCIE_REPLAY_COUNTER counter\n");
}

TEST(ExpositionWriter, OpenMetricsCounterFamilyDropsTotal) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kOpenMetrics, out);
  w.family("requests_total", MetricType::kCounter, "Requests.");
  w.sample("requests_total", "", 3);
  EXPECT_EQ(out,
            "# HELP requests Requests.\n"
            "# TYPE requests counter\n"
            "requests_total 3\n");
}

TEST(ExpositionWriter, OpenMetricsCounterWithoutTotalIsUnknownAndKeepsItsName) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kOpenMetrics, out);
  w.family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", MetricType::kCounter, "Energy.");
  w.sample("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", R"(gpu="0")", 12345);
  // Upper-case _TOTAL is not the OpenMetrics suffix.
  w.family("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", MetricType::kCounter, "ECC.");
  EXPECT_EQ(out,
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Energy.\n"
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION unknown\n"
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 12345\n"
            "# HELP DCGM_FI_DEV_ECC_SBE_VOL_TOTAL ECC.\n"
            "# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL unknown\n");
}

TEST(ExpositionWriter, OpenMetricsGaugeIsUnchanged) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kOpenMetrics, out);
  w.family("gpuscope_gpu_up", MetricType::kGauge, "Up.");
  EXPECT_EQ(out, "# HELP gpuscope_gpu_up Up.\n# TYPE gpuscope_gpu_up gauge\n");
}

TEST(ExpositionWriter, TextHelpEscapesBackslashAndNewlineButNotQuotes) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kPrometheusText, out);
  w.family("m", MetricType::kGauge, "a \\ b\nsecond \"line\"");
  EXPECT_EQ(out, "# HELP m a \\\\ b\\nsecond \"line\"\n# TYPE m gauge\n");
}

TEST(ExpositionWriter, OpenMetricsHelpAlsoEscapesQuotes) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kOpenMetrics, out);
  w.family("m", MetricType::kGauge, "a \\ b\nsecond \"line\"");
  EXPECT_EQ(out, "# HELP m a \\\\ b\\nsecond \\\"line\\\"\n# TYPE m gauge\n");
}

TEST(ExpositionWriter, HelpParsesBackInBothFormats) {
  const std::string help = "back\\slash, \"quoted\", new\nline, literal \\n";
  for (auto format : {ExpositionFormat::kPrometheusText, ExpositionFormat::kOpenMetrics}) {
    std::string out;
    ExpositionWriter w(format, out);
    w.family("m", MetricType::kGauge, help);
    w.sample("m", "", 1);
    w.finish();
    auto parsed = testing::parse_exposition(out, format == ExpositionFormat::kOpenMetrics);
    ASSERT_TRUE(parsed.has_value()) << parsed.error() << "\n" << out;
    ASSERT_NE(parsed->family("m"), nullptr);
    EXPECT_EQ(parsed->family("m")->help, help);
  }
}

TEST(ExpositionWriter, SampleJoinsLabelsAndExtra) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kPrometheusText, out);
  w.sample("a", "", 1);
  w.sample("b", R"(gpu="0")", 2);
  w.sample("c", "", 3, R"(xid="79")");
  w.sample("d", R"(gpu="0",UUID="GPU-1")", 0.25, R"(reason="sw_power_cap")");
  w.sample("e", "", kNaN);
  w.sample("f", R"(x="y")", -kInf);
  EXPECT_EQ(out,
            "a 1\n"
            "b{gpu=\"0\"} 2\n"
            "c{xid=\"79\"} 3\n"
            "d{gpu=\"0\",UUID=\"GPU-1\",reason=\"sw_power_cap\"} 0.25\n"
            "e NaN\n"
            "f{x=\"y\"} -Inf\n");
}

TEST(ExpositionWriter, FinishWritesEofInOpenMetricsOnly) {
  std::string text;
  ExpositionWriter(ExpositionFormat::kPrometheusText, text).finish();
  EXPECT_EQ(text, "");
  std::string om;
  ExpositionWriter(ExpositionFormat::kOpenMetrics, om).finish();
  EXPECT_EQ(om, "# EOF\n");
}

TEST(ExpositionWriter, AppendsToWhatTheStringHolds) {
  std::string out = "# HELP earlier E.\n# TYPE earlier gauge\nearlier 1\n";
  ExpositionWriter w(ExpositionFormat::kOpenMetrics, out);
  w.family("later", MetricType::kGauge, "L.");
  w.sample("later", "", 2);
  w.finish();
  EXPECT_EQ(out,
            "# HELP earlier E.\n# TYPE earlier gauge\nearlier 1\n"
            "# HELP later L.\n# TYPE later gauge\nlater 2\n"
            "# EOF\n");
}

// One small exposition in both formats, written out literally and read back.
void write_small(ExpositionWriter& w) {
  LabelSet gpu;
  gpu.add("gpu", "0").add("modelName", "NVIDIA \"H100\"");
  w.family("DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).");
  w.sample("DCGM_FI_DEV_GPU_TEMP", gpu.text(), 45);
  w.family("DCGM_FI_DEV_POWER_VIOLATION", MetricType::kCounter, "Power violation (in us).");
  w.sample("DCGM_FI_DEV_POWER_VIOLATION", gpu.text(), 1234.5);
  w.family("gpuscope_xid_errors_total", MetricType::kCounter, "XIDs by code.");
  LabelSet xid;
  xid.add("xid", "79");
  w.sample("gpuscope_xid_errors_total", gpu.text(), 2, xid.text());
  w.family("gpuscope_ratio", MetricType::kGauge, "A ratio.");
  w.sample("gpuscope_ratio", "", kNaN);
  w.sample("gpuscope_ratio", R"(k="inf")", kInf);
  w.finish();
}

TEST(ExpositionWriter, SmallTextExposition) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kPrometheusText, out);
  write_small(w);
  EXPECT_EQ(out,
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"NVIDIA \\\"H100\\\"\"} 45\n"
            "# HELP DCGM_FI_DEV_POWER_VIOLATION Power violation (in us).\n"
            "# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n"
            "DCGM_FI_DEV_POWER_VIOLATION{gpu=\"0\",modelName=\"NVIDIA \\\"H100\\\"\"} 1234.5\n"
            "# HELP gpuscope_xid_errors_total XIDs by code.\n"
            "# TYPE gpuscope_xid_errors_total counter\n"
            "gpuscope_xid_errors_total{gpu=\"0\",modelName=\"NVIDIA \\\"H100\\\"\",xid=\"79\"} 2\n"
            "# HELP gpuscope_ratio A ratio.\n"
            "# TYPE gpuscope_ratio gauge\n"
            "gpuscope_ratio NaN\n"
            "gpuscope_ratio{k=\"inf\"} +Inf\n");
  auto parsed = testing::parse_exposition(out, false);
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  ASSERT_EQ(parsed->families.size(), 4u);
  EXPECT_EQ(parsed->families[1].type, "counter");
  EXPECT_EQ(parsed->value("DCGM_FI_DEV_GPU_TEMP", {{"modelName", "NVIDIA \"H100\""}}), 45);
  EXPECT_EQ(parsed->value("gpuscope_xid_errors_total", {{"xid", "79"}}), 2);
  const auto ratio = parsed->samples("gpuscope_ratio");
  ASSERT_EQ(ratio.size(), 2u);
  EXPECT_TRUE(ratio[0]->labels.empty());
  EXPECT_TRUE(std::isnan(ratio[0]->value));
  EXPECT_EQ(parsed->value("gpuscope_ratio", {{"k", "inf"}}), kInf);
}

TEST(ExpositionWriter, SmallOpenMetricsExposition) {
  std::string out;
  ExpositionWriter w(ExpositionFormat::kOpenMetrics, out);
  write_small(w);
  EXPECT_EQ(out,
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"NVIDIA \\\"H100\\\"\"} 45\n"
            "# HELP DCGM_FI_DEV_POWER_VIOLATION Power violation (in us).\n"
            "# TYPE DCGM_FI_DEV_POWER_VIOLATION unknown\n"
            "DCGM_FI_DEV_POWER_VIOLATION{gpu=\"0\",modelName=\"NVIDIA \\\"H100\\\"\"} 1234.5\n"
            "# HELP gpuscope_xid_errors XIDs by code.\n"
            "# TYPE gpuscope_xid_errors counter\n"
            "gpuscope_xid_errors_total{gpu=\"0\",modelName=\"NVIDIA \\\"H100\\\"\",xid=\"79\"} 2\n"
            "# HELP gpuscope_ratio A ratio.\n"
            "# TYPE gpuscope_ratio gauge\n"
            "gpuscope_ratio NaN\n"
            "gpuscope_ratio{k=\"inf\"} +Inf\n"
            "# EOF\n");
  auto parsed = testing::parse_exposition(out, true);
  ASSERT_TRUE(parsed.has_value()) << parsed.error();
  ASSERT_NE(parsed->family("gpuscope_xid_errors"), nullptr);
  EXPECT_EQ(parsed->family("gpuscope_xid_errors")->type, "counter");
  EXPECT_EQ(parsed->family("DCGM_FI_DEV_POWER_VIOLATION")->type, "unknown");
  EXPECT_EQ(parsed->value("DCGM_FI_DEV_POWER_VIOLATION"), 1234.5);
  EXPECT_EQ(parsed->value("gpuscope_xid_errors_total", {{"xid", "79"}}), 2);
}

}  // namespace
}  // namespace gpuscope::exporter
