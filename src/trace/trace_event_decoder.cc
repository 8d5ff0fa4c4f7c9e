#include "trace/trace_event_decoder.h"

#include <algorithm>
#include <cstring>
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

// The raw bytes of a string value, between its quotes: a JSON string always ends with a quote inside
// the padded buffer, and inside it every quote is escaped.
std::string_view raw_content(const od::raw_json_string& raw) {
  const char* p = raw.raw();
  const char* q = p;
  while (*q != '"') q += *q == '\\' ? 2 : 1;
  return {p, static_cast<std::size_t>(q - p)};
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

// A number field's raw token, checked to be a number. On Demand hands over every byte up to the next
// comma or bracket without checking them ("12a", "1.2.3"): the number must be all of it but whitespace.
std::expected<std::string_view, EventProblem> number_token(od::value& value, std::string_view field) {
  const std::string_view token = value.raw_json_token();
  const char first = token.empty() ? ' ' : token.front();
  if (!(first == '-' || (first >= '0' && first <= '9'))) {
    return std::unexpected(EventProblem{TraceErrorKind::kBadField,
                                        fmt::format("field '{}' is {}, expected a number", field, type_name(first)),
                                        token.data()});
  }
  const std::size_t length = json_number_length(token);
  if (length == 0 || !std::all_of(token.begin() + static_cast<std::ptrdiff_t>(length), token.end(), is_json_space)) {
    return std::unexpected(EventProblem{TraceErrorKind::kNotJson, fmt::format("field '{}' is not a valid number", field),
                                        token.data()});
  }
  return token.substr(0, length);
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
  auto v = integer_value(*token);
  if (!v) {
    return std::unexpected(EventProblem{TraceErrorKind::kNotJson, fmt::format("field '{}' is not a valid number", field),
                                        token->data()});
  }
  return *v;
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

}  // namespace

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
          event.category = category_of(raw_content(cat));
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
        } else if (raw_is(key, "tid") && (!have_cat || wants_tid(event.category))) {
          // A number is the thread; Chrome traces allow a string (a label) there, which names no thread.
          const std::string_view token = value.raw_json_token();
          if (!token.empty() && (token.front() == '-' || (token.front() >= '0' && token.front() <= '9'))) {
            auto tid = integer_field(value, "tid");
            if (!tid) return std::unexpected(tid.error());
            event.tid = *tid;
          } else {
            event.tid = -1;
          }
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
  if (!wants_tid(event.category)) event.tid = -1;
  return DecodeOutcome::kEvent;
}

}  // namespace gpuscope::trace
