// WriteRequest: one Prometheus remote-write 1.0 request body (a prompb.WriteRequest in protobuf,
// compressed with snappy's block format), and its decoding for tests and the benchmark.
#pragma once

#include <cstddef>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "remote_write/batch_planner.h"
#include "store/queryable.h"

namespace gpuscope::remote_write {

// Series and their samples as they go out: labels sorted by name with __name__ among them (store::Labels
// is sorted already), samples by time.
std::string encode_write_request(std::span<const store::SeriesSamples> series);
// A planned batch of a window: each of its samples as a series of one sample, labelled as in `window`.
std::string encode_batch(std::span<const store::SeriesSamples> window, const WriteBatch& batch);

// The series of a request body, or what is wrong with it ("not snappy", "not a WriteRequest").
std::expected<std::vector<store::SeriesSamples>, std::string> decode_write_request(std::string_view body);

}  // namespace gpuscope::remote_write
