#include "remote_write/write_request.h"

#include <snappy.h>

#include "src/remote_write/remote_write.pb.h"  // generated (CMakeLists.txt)

namespace gpuscope::remote_write {

namespace {

void add_labels(prompb::TimeSeries& ts, const store::Labels& labels) {
  ts.mutable_labels()->Reserve(static_cast<int>(labels.size()));
  for (const store::Label& l : labels) {
    prompb::Label* label = ts.add_labels();
    label->set_name(l.name);
    label->set_value(l.value);
  }
}

std::string compressed(const prompb::WriteRequest& request) {
  const std::string raw = request.SerializeAsString();
  std::string out;
  snappy::Compress(raw.data(), raw.size(), &out);
  return out;
}

}  // namespace

std::string encode_batch(std::span<const store::SeriesSamples> window, const WriteBatch& batch) {
  prompb::WriteRequest request;
  request.mutable_timeseries()->Reserve(static_cast<int>(batch.samples.size()));
  for (const PlannedSample& p : batch.samples) {
    prompb::TimeSeries* ts = request.add_timeseries();
    add_labels(*ts, window[p.series].labels);
    prompb::Sample* out = ts->add_samples();
    out->set_value(p.sample.value);
    out->set_timestamp(p.sample.t_ms);
  }
  return compressed(request);
}

std::string encode_write_request(std::span<const store::SeriesSamples> series) {
  prompb::WriteRequest request;
  request.mutable_timeseries()->Reserve(static_cast<int>(series.size()));
  for (const store::SeriesSamples& s : series) {
    prompb::TimeSeries* ts = request.add_timeseries();
    add_labels(*ts, s.labels);
    for (const store::Sample& sample : s.samples) {
      prompb::Sample* out = ts->add_samples();
      out->set_value(sample.value);
      out->set_timestamp(sample.t_ms);
    }
  }
  return compressed(request);
}

std::expected<std::vector<store::SeriesSamples>, std::string> decode_write_request(std::string_view body) {
  std::string raw;
  if (!snappy::Uncompress(body.data(), body.size(), &raw)) return std::unexpected("not snappy-compressed (block format)");
  prompb::WriteRequest request;
  if (!request.ParseFromString(raw)) return std::unexpected("not a protobuf WriteRequest");
  std::vector<store::SeriesSamples> out;
  out.reserve(static_cast<std::size_t>(request.timeseries_size()));
  for (const prompb::TimeSeries& ts : request.timeseries()) {
    std::vector<store::Label> labels;
    for (const prompb::Label& l : ts.labels()) labels.push_back({l.name(), l.value()});
    store::SeriesSamples s{store::Labels(std::move(labels)), {}};
    for (const prompb::Sample& sample : ts.samples()) s.samples.push_back({sample.timestamp(), sample.value()});
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpuscope::remote_write
