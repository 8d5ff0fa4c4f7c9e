#include "trace/trace_event_decoder.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include <fmt/format.h>

namespace gpuscope::trace {
namespace {

namespace od = simdjson::ondemand;

// raw_json_string points just after the opening quote; a JSON string always ends with a quote inside
// the padded buffer, so comparing up to and including it is safe.
template <std::size_t N>
bool raw_is(const od::raw_json_string& raw, const char (&literal)[N]) {
  const char* p = raw.raw();
  return std::memcmp(p, literal, N - 1) == 0 && p[N - 1] == '"';
}

EventCategory category_of(const od::raw_json_string& cat) {
  switch (cat.raw()[0]) {
    case 'k':
      if (raw_is(cat, "kernel")) return EventCategory::kKernel;
      break;
    case 'g':
      if (raw_is(cat, "gpu_memcpy")) return EventCategory::kGpuMemcpy;
      if (raw_is(cat, "gpu_memset")) return EventCategory::kGpuMemset;
      break;
    case 'c':
      if (raw_is(cat, "cpu_op")) return EventCategory::kCpuOp;
      if (raw_is(cat, "cuda_runtime") || raw_is(cat, "cuda_driver")) return EventCategory::kCudaRuntime;
      break;
    case 'C':  // older Kineto spelled some categories in capitals
      if (raw_is(cat, "Kernel")) return EventCategory::kKernel;
      if (raw_is(cat, "Memcpy")) return EventCategory::kGpuMemcpy;
      if (raw_is(cat, "Memset")) return EventCategory::kGpuMemset;
      if (raw_is(cat, "Runtime")) return EventCategory::kCudaRuntime;
      break;
    case 'u':
      if (raw_is(cat, "user_annotation")) return EventCategory::kUserAnnotation;
      break;
    case 'p':
      if (raw_is(cat, "python_function")) return EventCategory::kPythonFunction;
      break;
    default:
      break;
  }
  return EventCategory::kOther;
}

bool wants_name(EventCategory c) {
  return c == EventCategory::kKernel || c == EventCategory::kGpuMemcpy || c == EventCategory::kGpuMemset ||
         c == EventCategory::kUserAnnotation || c == EventCategory::kPythonFunction;
}

bool wants_args(EventCategory c) {
  return c == EventCategory::kKernel || c == EventCategory::kGpuMemcpy || c == EventCategory::kGpuMemset ||
         c == EventCategory::kCudaRuntime;
}

const char* type_name(char first) {
  switch (first) {
    case '"': return "a string";
    case '{': return "an object";
    case '[': return "an array";
    case 't':
    case 'f': return "a boolean";
    case 'n': return "null";
    default: return "not a number";
  }
}

EventProblem json_problem(simdjson::error_code code, std::string_view context) {
  const TraceErrorKind kind =
      code == simdjson::INCORRECT_TYPE ? TraceErrorKind::kBadField : TraceErrorKind::kNotJson;
  return EventProblem{kind, fmt::format("{} ({})", context, simdjson::error_message(code)), nullptr};
}

// A number field's raw token, checked to be a number.
std::expected<std::string_view, EventProblem> number_token(od::value& value, std::string_view field) {
  const std::string_view token = value.raw_json_token();
  const char first = token.empty() ? ' ' : token.front();
  if (!(first == '-' || (first >= '0' && first <= '9'))) {
    return std::unexpected(EventProblem{TraceErrorKind::kBadField,
                                        fmt::format("field '{}' is {}, expected a number", field, type_name(first)),
                                        token.data()});
  }
  return token;
}

std::expected<std::int64_t, EventProblem> time_field(od::value& value, std::string_view field) {
  auto token = number_token(value, field);
  if (!token) return std::unexpected(token.error());
  auto ns = microseconds_text_to_ns(*token);
  if (!ns) {
    return std::unexpected(EventProblem{TraceErrorKind::kNotJson, fmt::format("field '{}' is not a valid number", field),
                                        token->data()});
  }
  return *ns;
}

std::expected<std::int64_t, EventProblem> integer_field(od::value& value, std::string_view field) {
  auto token = number_token(value, field);
  if (!token) return std::unexpected(token.error());
  std::int64_t v = 0;
  const char* end = token->data() + token->size();
  auto [ptr, ec] = std::from_chars(token->data(), end, v);
  if (ec == std::errc{} && (ptr == end || *ptr == ',' || *ptr == '}' || *ptr == ']' || *ptr == ' ' || *ptr == '\n' ||
                            *ptr == '\r' || *ptr == '\t')) {
    if (*ptr != '.' && *ptr != 'e' && *ptr != 'E') return v;
  }
  // A float where an integer is usual ("bytes": 1.0e6): accept it, rounded.
  double d = 0;
  auto [dptr, dec] = std::from_chars(token->data(), end, d);
  if (dec != std::errc{} || !std::isfinite(d) || std::fabs(d) > 9.2e18) {
    return std::unexpected(EventProblem{TraceErrorKind::kNotJson, fmt::format("field '{}' is not a valid number", field),
                                        token->data()});
  }
  (void)dptr;
  return static_cast<std::int64_t>(std::llround(d));
}

// The members of "args" an analysis reads, as bits.
enum ArgBit : unsigned { kDevice = 1, kStream = 2, kCorrelation = 4, kBytes = 8, kAllArgs = 15 };

unsigned args_wanted(EventCategory c) {
  switch (c) {
    case EventCategory::kKernel: return kDevice | kStream | kCorrelation;
    case EventCategory::kCudaRuntime: return kCorrelation;
    default: return kAllArgs;  // copies, and an event whose "cat" comes after its "args"
  }
}

// Reads the `wanted` members of "args" (others are not checked either) and leaves the object once it
// has them all: a kernel's args have a dozen more (registers, grid, block, occupancy, ...) that would
// each be matched against the names.
std::expected<void, EventProblem> decode_args(od::value& value, TraceEvent& event, unsigned wanted) {
  od::object args;
  if (auto error = value.get_object().get(args)) {
    const char* where = value.raw_json_token().data();
    if (error == simdjson::INCORRECT_TYPE) {
      return std::unexpected(EventProblem{TraceErrorKind::kBadField, "field 'args' is not an object", where});
    }
    return std::unexpected(json_problem(error, "field 'args'"));
  }
  for (auto member : args) {
    od::field field;
    if (auto error = std::move(member).get(field)) return std::unexpected(json_problem(error, "in 'args'"));
    const od::raw_json_string key = field.key();
    std::int64_t* target = nullptr;
    std::string_view name;
    unsigned bit = 0;
    switch (key.raw()[0]) {
      case 'd':
        if (raw_is(key, "device")) target = &event.device, name = "args.device", bit = kDevice;
        break;
      case 's':
        if (raw_is(key, "stream")) target = &event.stream, name = "args.stream", bit = kStream;
        break;
      case 'c':
        if (raw_is(key, "correlation")) target = &event.correlation, name = "args.correlation", bit = kCorrelation;
        break;
      case 'b':
        if (raw_is(key, "bytes")) target = &event.bytes, name = "args.bytes", bit = kBytes;
        break;
      default:
        break;
    }
    if ((bit & wanted) == 0) continue;  // not a member this event's analyses read
    auto v = integer_field(field.value(), name);
    if (!v) return std::unexpected(v.error());
    *target = *v;
    wanted &= ~bit;
    if (wanted == 0) break;
  }
  return {};
}

// The value of the eight ASCII digits at p, or nullopt when any of the eight is not a digit: one load
// and three multiplications (pairs, then fours, then eight) instead of eight steps. Little-endian only.
std::optional<std::uint64_t> eight_digits(const char* p) {
  std::uint64_t v = 0;
  std::memcpy(&v, p, sizeof v);
  // Every byte is 0x30..0x39: its high nibble is 3, and adding 6 does not carry into it.
  constexpr std::uint64_t kHigh = 0xF0F0F0F0F0F0F0F0;
  if (((v & kHigh) | (((v + 0x0606060606060606) & kHigh) >> 4)) != 0x3333333333333333) return std::nullopt;
  v -= 0x3030303030303030;
  v = v * 10 + (v >> 8);  // each 16-bit lane: the two-digit number of its bytes (low byte first)
  constexpr std::uint64_t kLanes = 0x000000FF000000FF;
  return (((v & kLanes) * (100 + (1000000ULL << 32))) + (((v >> 16) & kLanes) * (1 + (10000ULL << 32)))) >> 32;
}

}  // namespace

std::optional<std::int64_t> microseconds_text_to_ns(std::string_view text) {
  // The largest whole part whose nanoseconds still fit in an int64 (the fraction is checked at the end).
  constexpr std::uint64_t kMaxWhole = std::numeric_limits<std::int64_t>::max() / 1000;
  std::size_t i = 0;
  const bool negative = i < text.size() && text[i] == '-';
  if (negative) ++i;
  const std::size_t digits_begin = i;
  std::uint64_t whole = 0;
  if constexpr (std::endian::native == std::endian::little) {
    // Kineto's timestamps have 16 digits: two steps of eight. (whole < 10^8 keeps the step in range.)
    while (text.size() - i >= 8 && whole < 100'000'000) {
      const auto eight = eight_digits(text.data() + i);
      if (!eight) break;
      whole = whole * 100'000'000 + *eight;
      i += 8;
    }
  }
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (whole > kMaxWhole / 10) return std::nullopt;
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == digits_begin || whole > kMaxWhole) return std::nullopt;
  std::int64_t fraction_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    const std::size_t fraction_begin = i;
    std::int64_t scale = 100;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      fraction_ns += (text[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == fraction_begin) return std::nullopt;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    // Rare (some exporters): go through a double, which is exact enough for an exponent form.
    double d = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
    if (ec != std::errc{} || !std::isfinite(d) || std::fabs(d) > 9.2e15) return std::nullopt;
    (void)ptr;
    return static_cast<std::int64_t>(std::llround(d * 1000.0));
  }
  std::int64_t ns = 0;
  if (__builtin_add_overflow(static_cast<std::int64_t>(whole) * 1000, fraction_ns, &ns)) return std::nullopt;
  return negative ? -ns : ns;
}

std::expected<DecodeOutcome, EventProblem> decode_trace_event(od::object object, const DecodeOptions& options,
                                                              TraceEvent& event) {
  event = TraceEvent{};
  bool complete = false;
  bool have_ph = false, have_cat = false, have_ts = false, have_dur = false;
  const char* dur_where = nullptr;
  for (auto member : object) {
    od::field field;
    if (auto error = std::move(member).get(field)) return std::unexpected(json_problem(error, "in an event"));
    const od::raw_json_string key = field.key();
    od::value& value = field.value();
    switch (key.raw()[0]) {
      case 'p':
        if (raw_is(key, "ph")) {
          od::raw_json_string ph;
          if (auto error = value.get_raw_json_string().get(ph)) {
            if (error == simdjson::INCORRECT_TYPE) {
              return std::unexpected(EventProblem{TraceErrorKind::kBadField, "field 'ph' is not a string", nullptr});
            }
            return std::unexpected(json_problem(error, "field 'ph'"));
          }
          complete = raw_is(ph, "X");
          have_ph = true;
          if (!complete) return DecodeOutcome::kIgnored;
        }
        break;
      case 'c':
        if (raw_is(key, "cat")) {
          od::raw_json_string cat;
          if (auto error = value.get_raw_json_string().get(cat)) {
            if (error == simdjson::INCORRECT_TYPE) {
              return std::unexpected(EventProblem{TraceErrorKind::kBadField, "field 'cat' is not a string", nullptr});
            }
            return std::unexpected(json_problem(error, "field 'cat'"));
          }
          event.category = category_of(cat);
          have_cat = true;
          if (event.category == EventCategory::kPythonFunction && !options.python_functions) {
            return DecodeOutcome::kIgnored;
          }
        }
        break;
      case 'n':
        if (raw_is(key, "name") && (!have_cat || wants_name(event.category))) {
          std::string_view name;
          if (auto error = value.get_string().get(name)) {
            if (error == simdjson::INCORRECT_TYPE) {
              return std::unexpected(EventProblem{TraceErrorKind::kBadField, "field 'name' is not a string", nullptr});
            }
            return std::unexpected(json_problem(error, "field 'name'"));
          }
          event.name = name;
        }
        break;
      case 't':
        if (raw_is(key, "ts")) {
          auto ns = time_field(value, "ts");
          if (!ns) return std::unexpected(ns.error());
          event.start_ns = *ns;
          have_ts = true;
        }
        break;
      case 'd':
        if (raw_is(key, "dur")) {
          auto token = number_token(value, "dur");
          if (!token) return std::unexpected(token.error());
          auto ns = microseconds_text_to_ns(*token);
          if (!ns) {
            return std::unexpected(
                EventProblem{TraceErrorKind::kNotJson, "field 'dur' is not a valid number", token->data()});
          }
          dur_where = token->data();
          event.duration_ns = *ns;
          have_dur = true;
        }
        break;
      case 'a':
        if (raw_is(key, "args") && (!have_cat || wants_args(event.category))) {
          const unsigned wanted = have_cat ? args_wanted(event.category) : kAllArgs;
          if (auto ok = decode_args(value, event, wanted); !ok) return std::unexpected(ok.error());
        }
        break;
      default:
        break;
    }
  }
  if (!have_ph || !complete) return DecodeOutcome::kIgnored;
  if (event.category == EventCategory::kPythonFunction && !options.python_functions) return DecodeOutcome::kIgnored;
  if (!have_ts) return std::unexpected(EventProblem{TraceErrorKind::kBadField, "complete event without 'ts'", nullptr});
  if (!have_dur) return std::unexpected(EventProblem{TraceErrorKind::kBadField, "complete event without 'dur'", nullptr});
  if (event.duration_ns < 0) {
    return std::unexpected(EventProblem{TraceErrorKind::kBadValue, "negative duration", dur_where});
  }
  if (!wants_name(event.category)) event.name = {};
  return DecodeOutcome::kEvent;
}

}  // namespace gpuscope::trace
