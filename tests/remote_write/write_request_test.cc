// The request body against the remote-write 1.0 wire format, read back by a protobuf reader written here
// from the spec (prompb: WriteRequest.timeseries = 1; TimeSeries.labels = 1, samples = 2; Label.name = 1,
// value = 2; Sample.value = 1 (double), timestamp = 2 (int64)), not by the generated code under test.
#include <gtest/gtest.h>
#include <snappy.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "remote_write/write_request.h"

namespace gpuscope::remote_write {
namespace {

struct WireReader {
  std::string_view in;
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (in.empty()) throw std::runtime_error("truncated varint");
      const auto b = static_cast<unsigned char>(in.front());
      in.remove_prefix(1);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw std::runtime_error("long varint");
  }
  std::string_view bytes() {
    const auto n = static_cast<std::size_t>(varint());
    if (n > in.size()) throw std::runtime_error("truncated field");
    const std::string_view out = in.substr(0, n);
    in.remove_prefix(n);
    return out;
  }
  std::uint64_t fixed64() {
    if (in.size() < 8) throw std::runtime_error("truncated fixed64");
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[static_cast<std::size_t>(i)]);
    in.remove_prefix(8);
    return v;
  }
};

// The series of a body, by the spec's field numbers; any other field or wire type fails the test.
std::vector<store::SeriesSamples> read_by_spec(const std::string& body) {
  std::string raw;
  EXPECT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
  std::vector<store::SeriesSamples> out;
  WireReader request{raw};
  while (!request.in.empty()) {
    EXPECT_EQ(request.varint(), (1u << 3) | 2u);  // timeseries, length-delimited
    WireReader ts{request.bytes()};
    std::vector<store::Label> labels;
    std::vector<store::Sample> samples;
    while (!ts.in.empty()) {
      const std::uint64_t key = ts.varint();
      if (key == ((1u << 3) | 2u)) {
        WireReader label{ts.bytes()};
        store::Label l;
        while (!label.in.empty()) {
          const std::uint64_t k = label.varint();
          if (k == ((1u << 3) | 2u)) {
            l.name = std::string(label.bytes());
          } else if (k == ((2u << 3) | 2u)) {
            l.value = std::string(label.bytes());
          } else {
            ADD_FAILURE() << "unexpected label field key " << k;
            return out;
          }
        }
        labels.push_back(l);
      } else if (key == ((2u << 3) | 2u)) {
        WireReader sample{ts.bytes()};
        store::Sample s{0, 0};
        while (!sample.in.empty()) {
          const std::uint64_t k = sample.varint();
          if (k == ((1u << 3) | 1u)) {
            s.value = std::bit_cast<double>(sample.fixed64());
          } else if (k == ((2u << 3) | 0u)) {
            s.t_ms = static_cast<std::int64_t>(sample.varint());
          } else {
            ADD_FAILURE() << "unexpected sample field key " << k;
            return out;
          }
        }
        samples.push_back(s);
      } else {
        ADD_FAILURE() << "unexpected time series field key " << key;
        return out;
      }
    }
    out.push_back({store::Labels(std::move(labels)), std::move(samples)});
  }
  return out;
}

std::vector<store::SeriesSamples> example_series() {
  return {
      {store::Labels{{"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "0"}, {"UUID", "GPU-1"}},
       {{1767225600000, 41}, {1767225601000, 42.5}}},
      {store::Labels{{"__name__", "up"}, {"note", "quote\" and \\ and é"}},
       {{1767225600000, -0.0}, {1767225600500, std::numeric_limits<double>::infinity()}, {1767225601000, store::stale_marker()}}},
  };
}

void expect_same(const std::vector<store::SeriesSamples>& got, const std::vector<store::SeriesSamples>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].labels, want[i].labels);
    ASSERT_EQ(got[i].samples.size(), want[i].samples.size());
    for (std::size_t j = 0; j < want[i].samples.size(); ++j) {
      EXPECT_EQ(got[i].samples[j].t_ms, want[i].samples[j].t_ms);
      // Bit for bit: a staleness marker is one NaN in particular, and -0 stays -0.
      EXPECT_EQ(std::bit_cast<std::uint64_t>(got[i].samples[j].value), std::bit_cast<std::uint64_t>(want[i].samples[j].value));
    }
  }
}

TEST(RemoteWriteRequest, BodyIsSnappyProtobufWithTheSpecsFieldNumbers) {
  const auto series = example_series();
  expect_same(read_by_spec(encode_write_request(series)), series);
}

TEST(RemoteWriteRequest, LabelsGoOutSortedByNameWithTheMetricName) {
  const auto got = read_by_spec(encode_write_request(example_series()));
  ASSERT_FALSE(got.empty());
  // store::Labels sorts again; read the raw order instead: UUID < __name__ < gpu in byte order.
  std::string raw;
  const std::string body = encode_write_request(example_series());
  ASSERT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
  const auto uuid = raw.find("UUID"), name = raw.find("__name__"), gpu = raw.find("gpu");
  ASSERT_NE(uuid, std::string::npos);
  EXPECT_LT(uuid, name);
  EXPECT_LT(name, gpu);
}

TEST(RemoteWriteRequest, DecodeReadsBackWhatEncodeWrote) {
  const auto series = example_series();
  auto decoded = decode_write_request(encode_write_request(series));
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  expect_same(*decoded, series);
}

TEST(RemoteWriteRequest, DecodeRejectsABodyThatIsNotSnappy) {
  auto decoded = decode_write_request("plain text, not snappy");
  ASSERT_FALSE(decoded.has_value());
  EXPECT_NE(decoded.error().find("snappy"), std::string::npos);
}

TEST(RemoteWriteRequest, ABatchGoesOutAsOneSeriesPerSample) {
  const auto window = example_series();
  WriteBatch batch;
  batch.samples = {{1, {1767225600000, -0.0}}, {0, {1767225600000, 41}}};
  const auto got = read_by_spec(encode_batch(window, batch));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].labels, window[1].labels);
  EXPECT_EQ(got[1].labels, window[0].labels);
  ASSERT_EQ(got[1].samples.size(), 1u);
  EXPECT_EQ(got[1].samples[0].t_ms, 1767225600000);
  EXPECT_EQ(got[1].samples[0].value, 41);
}

}  // namespace
}  // namespace gpuscope::remote_write
