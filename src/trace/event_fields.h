// EventFields: which members of a Kineto event the analyses read, by category, and how those values
// become numbers; shared by the two event decoders (simdjson's and the plain one), which must agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/trace_event.h"

namespace gpuscope::trace {

enum class DecodeOutcome {
  kEvent,    // a complete event the analyses want: `event` is filled
  kIgnored,  // metadata, flow, instant events; python_function unless asked for
};

struct DecodeOptions {
  bool python_functions = false;
};

// The category from the raw bytes between the quotes of "cat" (escapes left as they are, so an escaped
// spelling is no known category, as with simdjson's raw_json_string compare).
EventCategory category_of(std::string_view cat);

inline bool wants_name(EventCategory c) {
  return c != EventCategory::kOther;
}

// "tid": the CPU thread of an op, annotation or runtime call (the op attribution nests them by thread).
inline bool wants_tid(EventCategory c) {
  return c == EventCategory::kCpuOp || c == EventCategory::kUserAnnotation || c == EventCategory::kCudaRuntime ||
         c == EventCategory::kGpuUserAnnotation;
}

inline bool wants_args(EventCategory c) {
  return c == EventCategory::kKernel || c == EventCategory::kGpuMemcpy || c == EventCategory::kGpuMemset ||
         c == EventCategory::kCudaRuntime;
}

// The members of "args" an analysis reads, as bits.
enum ArgBit : unsigned { kDevice = 1, kStream = 2, kCorrelation = 4, kBytes = 8, kAllArgs = 15 };

inline unsigned args_wanted(EventCategory c) {
  switch (c) {
    case EventCategory::kKernel: return kDevice | kStream | kCorrelation;
    case EventCategory::kCudaRuntime: return kCorrelation;
    default: return kAllArgs;  // copies, and an event whose "cat" comes after its "args"
  }
}

// JSON whitespace, with one compare and one bit test.
[[gnu::always_inline]] inline bool is_json_space(char c) {
  constexpr std::uint64_t kSpaces = (1ull << ' ') | (1ull << '\n') | (1ull << '\r') | (1ull << '\t');
  const auto u = static_cast<unsigned char>(c);
  return u <= ' ' && ((kSpaces >> u) & 1) != 0;
}

// The length of the JSON number at the start of `text`, by the grammar
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?; 0 when there is none.
std::size_t json_number_length(std::string_view text);

// A number token ("bytes", "device", ...) as an integer; a float where an integer is usual ("bytes":
// 1.0e6) is rounded. nullopt when it is not a number or does not fit. The token may end in whitespace
// (simdjson's raw token runs to the next structural character).
std::optional<std::int64_t> integer_value(std::string_view token);

// Kineto's microsecond numbers ("1682725898082228", "12.5", "3e2") as integer nanoseconds; digits after
// the third decimal are dropped. nullopt for anything that is not a JSON number.
std::optional<std::int64_t> microseconds_text_to_ns(std::string_view text);

}  // namespace gpuscope::trace
