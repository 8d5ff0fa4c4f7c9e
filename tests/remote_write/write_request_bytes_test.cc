// The request body's bytes against protobuf's own serialization of the same prompb.WriteRequest (the
// generated code from remote_write.proto): the agent writes the wire format itself, without libprotobuf.
#include <gtest/gtest.h>
#include <snappy.h>

#include <cmath>
#include <limits>

#include "remote_write/write_request.h"
#include "src/remote_write/remote_write.pb.h"

namespace gpuscope::remote_write {
namespace {

std::string protobuf_bytes(const std::vector<store::SeriesSamples>& series) {
  prompb::WriteRequest request;
  for (const store::SeriesSamples& s : series) {
    prompb::TimeSeries* ts = request.add_timeseries();
    for (const store::Label& l : s.labels) {
      prompb::Label* label = ts->add_labels();
      label->set_name(l.name);
      label->set_value(l.value);
    }
    for (const store::Sample& sample : s.samples) {
      prompb::Sample* out = ts->add_samples();
      out->set_value(sample.value);
      out->set_timestamp(sample.t_ms);
    }
  }
  return request.SerializeAsString();
}

std::string uncompressed(const std::string& body) {
  std::string raw;
  EXPECT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
  return raw;
}

// Defaults that proto3 leaves out (+0.0, time 0) beside values it keeps (-0.0, NaN, negative times, ten-byte
// varints), and lengths past one varint byte (a 300-byte label value, a series of 200 samples).
std::vector<store::SeriesSamples> bytes_test_series() {
  std::vector<store::Sample> many;
  for (int i = 0; i < 200; ++i) many.push_back({1767225600000 + 1000 * i, i * 0.25});
  return {
      {store::Labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "0"}, {"UUID", "GPU-1"}},
       {{1767225600000, 41}, {0, 0.0}, {0, -0.0}, {-1, 1.5}, {std::numeric_limits<std::int64_t>::min(), -2}}},
      {store::Labels{{"__name__", "up"}, {"note", std::string(300, 'x') + "é"}},
       {{1767225600500, std::numeric_limits<double>::infinity()}, {1767225601000, store::stale_marker()},
        {1767225602000, std::nan("")}}},
      {store::Labels{{"__name__", "no_samples"}}, {}},
      {store::Labels{}, std::move(many)},
  };
}

TEST(RemoteWriteRequestBytes, AreProtobufsOwnSerialization) {
  const auto series = bytes_test_series();
  EXPECT_EQ(uncompressed(encode_write_request(series)), protobuf_bytes(series));
}

TEST(RemoteWriteRequestBytes, AnEmptyRequestIsEmpty) {
  EXPECT_EQ(uncompressed(encode_write_request({})), protobuf_bytes({}));
}

TEST(RemoteWriteRequestBytes, ABatchIsProtobufsSerializationOfOneSeriesPerSample) {
  const auto window = bytes_test_series();
  WriteBatch batch;
  batch.samples = {{1, {1767225600000, -0.0}}, {0, {0, 0.0}}, {3, {1767225600000, 7}}, {0, {-5, 41}}};
  std::vector<store::SeriesSamples> want;
  for (const PlannedSample& p : batch.samples) want.push_back({window[p.series].labels, {p.sample}});
  EXPECT_EQ(uncompressed(encode_batch(window, batch)), protobuf_bytes(want));
}

}  // namespace
}  // namespace gpuscope::remote_write
