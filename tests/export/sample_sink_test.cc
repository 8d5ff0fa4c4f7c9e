// The writer's two other outputs: samples handed to a SampleSink (how history records /metrics'
// series) with their labels parsed back exactly, and per-sample timestamps in both formats.
#include <gtest/gtest.h>

#include "export/exposition_writer.h"

namespace gpuscope::exporter {
namespace {

struct Collected : SampleSink {
  struct Row {
    std::string name, labels, extra;
    double value;
  };
  std::vector<Row> rows;
  void sample(std::string_view name, std::string_view labels, std::string_view extra, double value) override {
    rows.push_back({std::string(name), std::string(labels), std::string(extra), value});
  }
};

TEST(SampleSink, GetsEverySampleAndNoText) {
  Collected sink;
  ExpositionWriter w(sink);
  w.family("DCGM_FI_DEV_GPU_TEMP", model::MetricType::kGauge, "GPU temperature (in C).");
  w.sample("DCGM_FI_DEV_GPU_TEMP", LabelSet().add("gpu", "0").text(), 61, LabelSet().add("hpc_job", "j1").text());
  w.finish();
  ASSERT_EQ(sink.rows.size(), 1u);
  EXPECT_EQ(sink.rows[0].name, "DCGM_FI_DEV_GPU_TEMP");
  EXPECT_EQ(sink.rows[0].labels, "gpu=\"0\"");
  EXPECT_EQ(sink.rows[0].extra, "hpc_job=\"j1\"");
  EXPECT_EQ(sink.rows[0].value, 61);
}

TEST(SampleSink, LabelTextParsesBackToTheValuesWritten) {
  const std::string tricky = "a \"quoted\" \\ back\nslash, comma=equals";
  const auto text = LabelSet().add("modelName", "NVIDIA H100").add("x", tricky).add("empty", "").text();
  std::vector<std::pair<std::string, std::string>> out;
  ASSERT_TRUE(parse_label_text(text, out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], (std::pair<std::string, std::string>{"modelName", "NVIDIA H100"}));
  EXPECT_EQ(out[1].second, tricky);
  EXPECT_EQ(out[2].second, "");
  std::vector<std::pair<std::string, std::string>> none;
  EXPECT_TRUE(parse_label_text("", none));
  EXPECT_TRUE(none.empty());
  for (const char* bad : {"gpu", "gpu=0", "gpu=\"0", "=\"0\"", "gpu=\"0\"x"}) {
    std::vector<std::pair<std::string, std::string>> ignored;
    EXPECT_FALSE(parse_label_text(bad, ignored)) << bad;
  }
}

TEST(ExpositionTimestamps, MillisecondsInTextSecondsInOpenMetrics) {
  std::string text, om;
  ExpositionWriter t(ExpositionFormat::kPrometheusText, text);
  ExpositionWriter o(ExpositionFormat::kOpenMetrics, om);
  for (auto* w : {&t, &o}) {
    w->set_timestamp(1700000000042);
    w->sample("m", "gpu=\"0\"", 1.5);
    w->set_timestamp(std::nullopt);
    w->sample("m", "gpu=\"1\"", 2);
  }
  EXPECT_EQ(text, "m{gpu=\"0\"} 1.5 1700000000042\nm{gpu=\"1\"} 2\n");
  EXPECT_EQ(om, "m{gpu=\"0\"} 1.5 1700000000.042\nm{gpu=\"1\"} 2\n");
}

}  // namespace
}  // namespace gpuscope::exporter
