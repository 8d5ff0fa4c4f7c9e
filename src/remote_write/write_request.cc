#include "remote_write/write_request.h"

#include <snappy.h>

#include <bit>
#include <cstdint>

namespace gpuscope::remote_write {

namespace {

// prompb's wire format is written here, not by protobuf's generated code: the agent then never loads
// libprotobuf-lite (~0.4 MB resident in every `serve`, remote write or not: issue 23). The bytes are
// protobuf's own for proto3: fields in number order, a field at its default (empty string, 0, +0.0) left
// out; tests/remote_write compares them with the generated code's SerializeAsString.
constexpr char kWireField1Bytes = (1 << 3) | 2;  // WriteRequest.timeseries, TimeSeries.labels, Label.name
constexpr char kWireField2Bytes = (2 << 3) | 2;  // TimeSeries.samples, Label.value
constexpr char kWireSampleValue = (1 << 3) | 1;  // Sample.value: fixed64 (a double's bits, little-endian)
constexpr char kWireSampleTimestamp = (2 << 3) | 0;  // Sample.timestamp: varint (int64 as 64 bits)

void wire_varint(std::string& out, std::uint64_t v) {
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>((v & 0x7f) | 0x80));
  out.push_back(static_cast<char>(v));
}

std::size_t wire_varint_size(std::uint64_t v) {
  std::size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

std::size_t wire_string_field_size(const std::string& s) {
  return s.empty() ? 0 : 1 + wire_varint_size(s.size()) + s.size();
}

void wire_string_field(std::string& out, char key, const std::string& s) {
  if (s.empty()) return;
  out.push_back(key);
  wire_varint(out, s.size());
  out.append(s);
}

void wire_label(std::string& out, const store::Label& l) {
  out.push_back(kWireField1Bytes);
  wire_varint(out, wire_string_field_size(l.name) + wire_string_field_size(l.value));
  wire_string_field(out, kWireField1Bytes, l.name);
  wire_string_field(out, kWireField2Bytes, l.value);
}

void wire_sample(std::string& out, const store::Sample& s) {
  const auto bits = std::bit_cast<std::uint64_t>(s.value);  // -0.0 is not the default; only +0.0 is
  const auto t = static_cast<std::uint64_t>(s.t_ms);        // a negative time is ten bytes, as in protobuf
  out.push_back(kWireField2Bytes);
  wire_varint(out, (bits != 0 ? 9 : 0) + (t != 0 ? 1 + wire_varint_size(t) : 0));
  if (bits != 0) {
    out.push_back(kWireSampleValue);
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(bits >> (8 * i)));
  }
  if (t != 0) {
    out.push_back(kWireSampleTimestamp);
    wire_varint(out, t);
  }
}

// A WriteRequest, one TimeSeries at a time (each built in `series_` first: its length goes before it).
class WireRequestWriter {
 public:
  void add(const store::Labels& labels, std::span<const store::Sample> samples) {
    series_.clear();
    for (const store::Label& l : labels) wire_label(series_, l);
    for (const store::Sample& s : samples) wire_sample(series_, s);
    raw_.push_back(kWireField1Bytes);
    wire_varint(raw_, series_.size());
    raw_.append(series_);
  }

  std::string compressed() const {
    std::string out;
    snappy::Compress(raw_.data(), raw_.size(), &out);
    return out;
  }

 private:
  std::string raw_;
  std::string series_;
};

}  // namespace

std::string encode_batch(std::span<const store::SeriesSamples> window, const WriteBatch& batch) {
  WireRequestWriter request;
  for (const PlannedSample& p : batch.samples) request.add(window[p.series].labels, std::span(&p.sample, 1));
  return request.compressed();
}

std::string encode_write_request(std::span<const store::SeriesSamples> series) {
  WireRequestWriter request;
  for (const store::SeriesSamples& s : series) request.add(s.labels, s.samples);
  return request.compressed();
}

}  // namespace gpuscope::remote_write
