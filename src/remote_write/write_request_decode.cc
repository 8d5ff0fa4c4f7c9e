// decode_write_request, by protobuf's generated code: for tests and the benchmark only. A file of its own so
// that the gpuscope executable, which only encodes, links none of protobuf (write_request.cc).
#include <snappy.h>

#include "remote_write/write_request.h"
#include "src/remote_write/remote_write.pb.h"  // generated (CMakeLists.txt)

namespace gpuscope::remote_write {

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
