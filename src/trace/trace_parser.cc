#include "trace/trace_parser.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <simdjson.h>

#include "trace/cpu_op_reader.h"
#include "trace/event_fields.h"
#include "trace/json_structure_scanner.h"
#include "trace/plain_event_decoder.h"
#include "trace/trace_event_decoder.h"

namespace gpuscope::trace {
namespace {

namespace od = simdjson::ondemand;

constexpr std::size_t kMaxWindow = 1u << 30;      // one event (or header value) larger than this is an error
constexpr std::size_t kMaxHeaderValue = 64u << 20;  // larger top-level values are skipped, not kept
constexpr std::size_t kMaxProblems = 5;
constexpr std::uint64_t kReleaseStep = 256u << 10;  // hand mapped pages back in 256 KiB steps
// One byte before the data (room for '[') and simdjson's padding plus one (room for ']') after it.
constexpr std::size_t kLead = 1;
constexpr std::size_t kTail = simdjson::SIMDJSON_PADDING + 1;

enum class Phase {
  kStart,           // before the top-level value
  kKey,             // expecting a key (or '}' when `first_member_`)
  kColon,
  kValue,
  kHeaderValue,     // inside a nested top-level value (scanned to its end, kept if small)
  kAfterValue,      // expecting ',' or '}'
  kEvents,          // inside the traceEvents array
  kDone,            // after the top-level value: only whitespace may follow
};

enum class Step { kProgress, kNeedMore, kFinished, kFailed };

struct EventSpan {
  std::size_t begin;  // '{'
  std::size_t end;    // one past '}'
};

// "ph" and "cat" when they are among the event's first members: plain string members read in one pass
// from the '{', up to the first nested value, escape or anything unusual, or 160 bytes. Inside a JSON
// string a quote is always escaped, so what this reads as a key is a key of the event itself. Either
// view is empty when not found there.
struct LeadingMembers {
  std::string_view ph;
  std::string_view cat;
};

// The string from `from` to its closing quote, if that quote is before `end` and there is no escape:
// 16 bytes a step where 16 are left ("cuda_runtime", "user_annotation"), byte by byte otherwise.
std::optional<std::string_view> unescaped_string(const char* from, const char* end) {
  const char* quote = from;
#if defined(__SSE2__)
  for (; end - quote >= 16; quote += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(quote));
    const auto stops = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))));
    if (stops != 0) {
      quote += __builtin_ctz(stops);
      if (*quote != '"') return std::nullopt;
      return std::string_view(from, static_cast<std::size_t>(quote - from));
    }
  }
#endif
  while (quote < end && *quote != '"' && *quote != '\\') ++quote;
  if (quote == end || *quote != '"') return std::nullopt;
  return std::string_view(from, static_cast<std::size_t>(quote - from));
}

// Kineto's own layout, {"ph": "X", "cat": "cpu_op", ... (with its indentation), read with fixed-size
// compares: the general walk below went byte by byte and was a tenth of all instructions on the real
// trace. Null when the event is laid out otherwise (other order or spacing, escapes). `p` is at the
// first key.
std::optional<LeadingMembers> kineto_leading_members(const char* p, const char* end) {
  auto starts_with = [&](const char* at, std::string_view prefix) {
    return std::string_view(at, static_cast<std::size_t>(end - at)).starts_with(prefix);
  };
  constexpr std::string_view kPh = "\"ph\": \"", kCat = "\"cat\": \"";
  if (!starts_with(p, kPh)) return std::nullopt;
  const auto ph = unescaped_string(p + kPh.size(), end);
  if (!ph) return std::nullopt;
  if (*ph != "X") return LeadingMembers{*ph, {}};  // decided by the phase alone
  p = ph->data() + ph->size() + 1;
  if (p == end || *p != ',') return std::nullopt;
  for (++p; p < end && is_json_space(*p);) ++p;
  if (!starts_with(p, kCat)) return std::nullopt;
  const auto cat = unescaped_string(p + kCat.size(), end);
  if (!cat) return std::nullopt;
  return LeadingMembers{*ph, *cat};
}

LeadingMembers leading_members(const char* event, std::size_t size) {
  const char* const end = event + std::min<std::size_t>(size, 160);
  // Kineto indents the first key by a line break and four spaces.
  constexpr std::string_view kKinetoIndent = "\n    \"";
  const char* first_key = event + 1;
  if (std::string_view(first_key, static_cast<std::size_t>(end - first_key)).starts_with(kKinetoIndent)) {
    first_key += kKinetoIndent.size() - 1;
  } else {
    while (first_key < end && is_json_space(*first_key)) ++first_key;
  }
  if (auto kineto = kineto_leading_members(first_key, end)) return *kineto;
  LeadingMembers found;
  const char* p = first_key;
  auto skip_space = [&] {
    while (p < end && is_json_space(*p)) ++p;
    return p < end;
  };
  // A string without escapes whose opening quote is at p, with p moved past it; empty (and p at end)
  // otherwise.
  auto plain_string = [&]() -> std::string_view {
    const auto text = unescaped_string(p + 1, end);
    if (!text) {
      p = end;
      return {};
    }
    p = text->data() + text->size() + 1;
    return *text;
  };
  while (skip_space() && *p == '"') {
    const std::string_view key = plain_string();
    if (!skip_space() || *p != ':') break;
    ++p;
    if (!skip_space()) break;
    if (*p == '"') {
      const std::string_view value = plain_string();
      if (p == end) break;
      if (key == "ph" && found.ph.empty()) {
        found.ph = value;
      } else if (key == "cat" && found.cat.empty()) {
        found.cat = value;
      }
      // Enough to decide: a phase other than "X" is decided by itself.
      if (!found.ph.empty() && (found.ph != "X" || !found.cat.empty())) break;
    } else if (*p == '{' || *p == '[') {
      break;
    } else {
      while (p < end && *p != ',' && *p != '}' && !is_json_space(*p)) ++p;  // a number or literal
    }
    if (!skip_space() || *p != ',') break;
    ++p;
  }
  return found;
}

// Events no analysis reads, recognised by their first members without parsing them (flow events are
// 15% of a trace's bytes). Anything not recognised is parsed. cpu_op events (50% of the bytes) are read
// for the op attribution, by their first members alone (read_kineto_cpu_op).
bool is_unused_event(const char* event, std::size_t size, bool python_functions) {
  const LeadingMembers m = leading_members(event, size);
  if (m.ph.empty()) return false;
  if (m.ph != "X") return m.ph == "s" || m.ph == "f" || m.ph == "t" || m.ph == "M" || m.ph == "i" || m.ph == "I";
  return m.cat == "python_function" && !python_functions;
}

class StreamingTraceParser {
 public:
  StreamingTraceParser(TraceByteReader& reader, TraceEventSink& sink, TraceHeader& header, const ParseOptions& options)
      : reader_(reader), sink_(sink), header_(header), options_(options),
        plain_decoder_(DecodeOptions{options.python_functions}) {
    decode_options_.python_functions = options.python_functions;
    capacity_ = std::max<std::size_t>(options.window_bytes, 64);
    if (auto mapped = reader.map_whole_file()) {
      mapped_ = *mapped;
      window_ = mapped_.data();
      len_ = std::min(capacity_, mapped_.size());
      eof_ = len_ == mapped_.size();
    } else {
      allocate(capacity_);
    }
  }

  std::expected<ParseSummary, TraceError> run() {
    for (;;) {
      Step step = Step::kProgress;
      while (step == Step::kProgress) step = advance();
      if (step == Step::kFailed) return std::unexpected(*error_);
      if (step == Step::kFinished) break;
      // kNeedMore
      if (eof_) {
        if (auto finished = at_end_of_input(); !finished) return std::unexpected(finished.error());
        break;
      }
      if (auto ok = refill(); !ok) return std::unexpected(ok.error());
    }
    summary_.json_bytes = base_ + len_;
    return summary_;
  }

 private:
  // ---- the window -------------------------------------------------------------------------------

  void allocate(std::size_t capacity) {
    auto fresh = std::make_unique<char[]>(kLead + capacity + kTail);
    if (buffer_) std::memcpy(fresh.get() + kLead, data(), len_);
    buffer_ = std::move(fresh);
    window_ = buffer_.get() + kLead;
    capacity_ = capacity;
  }
  const char* data() const { return window_; }
  std::int64_t offset(std::size_t position) const { return static_cast<std::int64_t>(base_ + position); }

  // The earliest byte still needed: the start of the token, value or event gap being read.
  std::size_t keep_from() const {
    switch (phase_) {
      case Phase::kHeaderValue:
        return capturing_ ? value_start_ : scan_pos_;
      case Phase::kEvents:
        return last_end_;
      default:
        return pos_;
    }
  }

  std::expected<void, TraceError> refill() {
    const std::size_t keep = keep_from();
    if (keep > 0) {
      if (mapped_.empty()) std::memmove(buffer_.get() + kLead, data() + keep, len_ - keep);
      len_ -= keep;
      base_ += keep;
      pos_ -= std::min(pos_, keep);
      scan_pos_ -= std::min(scan_pos_, keep);
      last_end_ -= std::min(last_end_, keep);
      event_start_ -= std::min(event_start_, keep);
      value_start_ -= std::min(value_start_, keep);
    }
    if (len_ == capacity_) {
      if (capacity_ >= kMaxWindow) {
        return std::unexpected(TraceError{TraceErrorKind::kBadValue, offset(0),
                                          fmt::format("a single value larger than {} MiB", kMaxWindow >> 20), {}});
      }
      if (mapped_.empty()) {
        allocate(capacity_ * 2);
      } else {
        capacity_ *= 2;
      }
    }
    if (!mapped_.empty()) {
      // The window slides over the mapping: nothing to copy.
      window_ = mapped_.data() + base_;
      len_ = std::min<std::uint64_t>(capacity_, mapped_.size() - base_);
      eof_ = base_ + len_ == mapped_.size();
      if (base_ >= released_ + kReleaseStep) {
        reader_.release_before(base_);
        released_ = base_;
      }
      if (options_.progress) options_.progress(base_ + len_);
      return {};
    }
    while (len_ < capacity_) {
      auto n = reader_.read(buffer_.get() + kLead + len_, capacity_ - len_);
      if (!n) {
        if (n.error().kind == TraceErrorKind::kTruncated && options_.lenient) {
          note_problem(n.error().message, n.error().byte_offset);
          eof_ = true;
          break;
        }
        return std::unexpected(n.error());
      }
      if (*n == 0) {
        eof_ = true;
        break;
      }
      len_ += *n;
    }
    if (options_.progress) options_.progress(reader_.file_consumed());
    return {};
  }

  // ---- errors ------------------------------------------------------------------------------------

  Step fail(TraceErrorKind kind, std::string message, std::int64_t at) {
    error_ = TraceError{kind, at, std::move(message), {}};
    return Step::kFailed;
  }

  void note_problem(const std::string& message, std::int64_t at) {
    if (summary_.problems.size() < kMaxProblems) {
      summary_.problems.push_back(at >= 0 ? fmt::format("{} at byte {}", message, at) : message);
    }
  }

  std::expected<void, TraceError> at_end_of_input() {
    if (phase_ == Phase::kDone) return {};
    if (phase_ == Phase::kEvents && options_.lenient) {
      // Keep every whole event already found; what is left is the cut-off part.
      summary_.truncated = true;
      const std::size_t partial = len_ - std::min(len_, last_end_);
      summary_.skipped_bytes += partial;
      if (depth_ > 0) ++summary_.skipped_events;
      note_problem("the JSON ends early (truncated file)", offset(len_));
      return {};
    }
    return std::unexpected(TraceError{TraceErrorKind::kTruncated, offset(len_),
                                      len_ + base_ == 0 ? std::string("empty input")
                                                        : std::string("the JSON ends early (truncated file)"),
                                      {}});
  }

  // ---- the top-level walker -----------------------------------------------------------------------

  // Skips whitespace; false when the window ran out.
  bool skip_space() {
    while (pos_ < len_ && is_json_space(data()[pos_])) ++pos_;
    return pos_ < len_;
  }

  // Finds the end of the string whose opening quote is at pos_; npos when not in the window yet.
  std::size_t string_end(std::size_t quote) {
    const char* d = data();
    for (std::size_t i = quote + 1; i < len_; ++i) {
      if (d[i] == '\\') {
        ++i;
      } else if (d[i] == '"') {
        return i + 1;
      } else if (static_cast<unsigned char>(d[i]) < 0x20) {
        return std::string_view::npos - 1;  // a control character: not JSON
      }
    }
    return std::string_view::npos;
  }

  Step advance() {
    switch (phase_) {
      case Phase::kStart: return step_start();
      case Phase::kKey: return step_key();
      case Phase::kColon: return step_colon();
      case Phase::kValue: return step_value();
      case Phase::kHeaderValue: return step_header_value();
      case Phase::kAfterValue: return step_after_value();
      case Phase::kEvents: return step_events();
      case Phase::kDone: return step_done();
    }
    return Step::kFailed;
  }

  Step step_start() {
    if (base_ == 0 && pos_ == 0 && len_ >= 3 && std::memcmp(data(), "\xEF\xBB\xBF", 3) == 0) pos_ = 3;  // UTF-8 BOM
    if (!skip_space()) return Step::kNeedMore;
    const char c = data()[pos_];
    if (c == '{') {
      ++pos_;
      first_member_ = true;
      phase_ = Phase::kKey;
      return Step::kProgress;
    }
    if (c == '[') {
      // Chrome's other trace format: a bare array of events.
      ++pos_;
      bare_array_ = true;
      begin_events();
      return Step::kProgress;
    }
    if (c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
      return fail(TraceErrorKind::kNotATrace, "not a trace: the JSON is not an object with a traceEvents array",
                  offset(pos_));
    }
    return fail(TraceErrorKind::kNotJson, fmt::format("not JSON: unexpected {}", describe(c)), offset(pos_));
  }

  Step step_key() {
    if (!skip_space()) return Step::kNeedMore;
    const char c = data()[pos_];
    if (c == '}' && first_member_) {
      ++pos_;
      return end_of_object();
    }
    if (c != '"') {
      return fail(TraceErrorKind::kNotJson, fmt::format("invalid JSON: expected a key, found {}", describe(c)),
                  offset(pos_));
    }
    const std::size_t end = string_end(pos_);
    if (end == std::string_view::npos) return Step::kNeedMore;
    if (end == std::string_view::npos - 1) {
      return fail(TraceErrorKind::kNotJson, "invalid JSON: control character in a key", offset(pos_));
    }
    key_.assign(data() + pos_ + 1, end - pos_ - 2);
    pos_ = end;
    first_member_ = false;
    phase_ = Phase::kColon;
    return Step::kProgress;
  }

  Step step_colon() {
    if (!skip_space()) return Step::kNeedMore;
    if (data()[pos_] != ':') {
      return fail(TraceErrorKind::kNotJson, fmt::format("invalid JSON: expected ':', found {}", describe(data()[pos_])),
                  offset(pos_));
    }
    ++pos_;
    phase_ = Phase::kValue;
    return Step::kProgress;
  }

  Step step_value() {
    if (!skip_space()) return Step::kNeedMore;
    const char c = data()[pos_];
    if (key_ == "traceEvents") {
      if (c != '[') {
        return fail(TraceErrorKind::kNotATrace, "not a trace: traceEvents is not an array", offset(pos_));
      }
      if (seen_events_) {
        return fail(TraceErrorKind::kNotATrace, "not a trace: traceEvents appears twice", offset(pos_));
      }
      ++pos_;
      if (options_.before_events && !options_.before_events(header_)) {
        summary_.stopped_before_events = true;
        return Step::kFinished;
      }
      begin_events();
      return Step::kProgress;
    }
    if (c == '{' || c == '[') {
      value_start_ = pos_;
      scan_pos_ = pos_;
      depth_ = 0;
      capturing_ = key_ == "distributedInfo" || key_ == "deviceProperties";
      scanner_.reset();
      phase_ = Phase::kHeaderValue;
      return Step::kProgress;
    }
    if (c == '"') {
      const std::size_t end = string_end(pos_);
      if (end == std::string_view::npos) return Step::kNeedMore;
      if (end == std::string_view::npos - 1) {
        return fail(TraceErrorKind::kNotJson, "invalid JSON: control character in a string", offset(pos_));
      }
      pos_ = end;
      phase_ = Phase::kAfterValue;
      return Step::kProgress;
    }
    // true, false, null or a number: up to the next delimiter.
    std::size_t end = pos_;
    while (end < len_ && !is_json_space(data()[end]) && data()[end] != ',' && data()[end] != '}' && data()[end] != ']') ++end;
    if (end == len_ && !eof_) return Step::kNeedMore;
    const std::string_view token(data() + pos_, end - pos_);
    const bool literal = token == "true" || token == "false" || token == "null";
    const bool number = !token.empty() && token.find_first_not_of("0123456789+-.eE") == std::string_view::npos &&
                        (token[0] == '-' || (token[0] >= '0' && token[0] <= '9'));
    if (!literal && !number) {
      return fail(TraceErrorKind::kNotJson, fmt::format("invalid JSON: unexpected {}", describe(c)), offset(pos_));
    }
    pos_ = end;
    phase_ = Phase::kAfterValue;
    return Step::kProgress;
  }

  Step step_header_value() {
    bool closed = false;
    // The value starts at its opening bracket, so the first crossing opens it and the next closes it.
    const std::size_t stop =
        scanner_.scan_top_level(data(), scan_pos_, len_, eof_, depth_, [&](JsonBracket, JsonStructureScanner::Crossing c) {
          closed = c != JsonStructureScanner::Crossing::kOpen;
          return closed;
        });
    scan_pos_ = stop;
    if (!closed) {
      if (capturing_ && scan_pos_ - value_start_ > kMaxHeaderValue) capturing_ = false;
      return Step::kNeedMore;
    }
    if (capturing_) read_header_value(std::string_view(data() + value_start_, stop - value_start_));
    pos_ = stop;
    phase_ = Phase::kAfterValue;
    return Step::kProgress;
  }

  Step step_after_value() {
    if (!skip_space()) return Step::kNeedMore;
    const char c = data()[pos_];
    if (c == ',') {
      ++pos_;
      phase_ = Phase::kKey;
      return Step::kProgress;
    }
    if (c == '}') {
      ++pos_;
      return end_of_object();
    }
    return fail(TraceErrorKind::kNotJson, fmt::format("invalid JSON: expected ',' or '}}', found {}", describe(c)),
                offset(pos_));
  }

  Step end_of_object() {
    if (!seen_events_) {
      return fail(TraceErrorKind::kNotATrace, "not a trace: the top-level object has no traceEvents array",
                  offset(pos_ - 1));
    }
    phase_ = Phase::kDone;
    return Step::kProgress;
  }

  Step step_done() {
    if (!skip_space()) {
      if (eof_) return Step::kFinished;
      return Step::kNeedMore;
    }
    return fail(TraceErrorKind::kNotJson, "invalid JSON: bytes after the end of the trace", offset(pos_));
  }

  static std::string describe(char c) {
    if (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) return fmt::format("'{}'", c);
    return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
  }

  // distributedInfo (rank, world size, backend) and deviceProperties (device names); a damaged one is
  // ignored: it only labels the report and tells runs apart, where a value left unknown matches any.
  void read_header_value(std::string_view json) {
    simdjson::padded_string copy(json);
    od::document doc;
    if (header_parser_.iterate(copy).get(doc)) return;
    if (key_ == "distributedInfo") {
      od::object info;
      if (doc.get_object().get(info)) return;
      for (auto member : info) {
        od::field field;
        if (std::move(member).get(field)) return;
        std::string_view key;
        if (field.unescaped_key().get(key)) return;
        std::int64_t v = 0;
        if (key == "rank" && !field.value().get_int64().get(v)) header_.rank = v;
        if (key == "world_size" && !field.value().get_int64().get(v)) header_.world_size = v;
        std::string_view text;
        if (key == "backend" && !field.value().get_string().get(text)) header_.backend = std::string(text);
      }
    } else {
      od::array devices;
      if (doc.get_array().get(devices)) return;
      for (auto element : devices) {
        od::object device;
        if (element.get_object().get(device)) return;
        std::int64_t id = -1;
        std::string name;
        for (auto member : device) {
          od::field field;
          if (std::move(member).get(field)) return;
          std::string_view key;
          if (field.unescaped_key().get(key)) return;
          if (key == "id") {
            if (field.value().get_int64().get(id)) return;
          } else if (key == "name") {
            std::string_view n;
            if (field.value().get_string().get(n)) return;
            name = n;
          }
        }
        if (id >= 0) header_.device_names[id] = name;
      }
    }
  }

  // ---- the traceEvents array ------------------------------------------------------------------

  void begin_events() {
    seen_events_ = true;
    phase_ = Phase::kEvents;
    scan_pos_ = pos_;
    last_end_ = pos_;
    depth_ = 0;
    first_element_ = true;
    scanner_.reset();
  }

  // Between two events (or after '[' / before ']') only whitespace and one comma may stand.
  // Returns false (with error_ set, or the bytes counted as skipped when lenient) otherwise.
  bool check_gap(std::size_t from, std::size_t to, bool before_close) {
    // The usual gap first, with nothing to keep track of for an error message; Kineto's own in one
    // compare.
    const char* d = data();
    if (to - from == 4 && !first_element_ && !before_close && std::memcmp(d + from, ",\n  ", 4) == 0) return true;
    std::size_t i = from;
    while (i < to && is_json_space(d[i])) ++i;
    if (!first_element_ && !before_close) {
      if (i == to || d[i] != ',') return check_unusual_gap(from, to, before_close);
      for (++i; i < to && is_json_space(d[i]);) ++i;
    }
    return i == to || check_unusual_gap(from, to, before_close);
  }

  bool check_unusual_gap(std::size_t from, std::size_t to, bool before_close) {
    const char* d = data();
    int commas = 0;
    bool garbage = false;
    std::size_t bad_at = to;
    std::size_t last_comma = to;
    for (std::size_t i = from; i < to; ++i) {
      if (is_json_space(d[i])) continue;
      if (d[i] == ',') {
        ++commas;
        last_comma = i;
        if (commas > 1 && !garbage) garbage = true, bad_at = i;
        continue;
      }
      if (!garbage) bad_at = i;
      garbage = true;
    }
    const int wanted = first_element_ || before_close ? 0 : 1;
    if (!garbage && commas == wanted) return true;
    if (!garbage) bad_at = commas > 0 ? last_comma : to;  // point at the stray comma, or where one is missing
    const std::string message =
        garbage && d[bad_at] != ','
            ? std::string("a traceEvents element is not an object")
            : (commas == 0 && wanted == 1 ? std::string("invalid JSON: missing ',' between events")
                                          : std::string("invalid JSON: misplaced ',' in traceEvents"));
    if (options_.lenient) {
      summary_.skipped_bytes += to - from;
      ++summary_.skipped_events;
      note_problem(message, offset(bad_at));
      return true;
    }
    error_ = TraceError{garbage && d[bad_at] != ',' ? TraceErrorKind::kNotATrace : TraceErrorKind::kNotJson,
                        offset(bad_at), message, {}};
    return false;
  }

  Step step_events() {
    bool end_of_array = false;
    bool failed = false;
    using Crossing = JsonStructureScanner::Crossing;
    const std::size_t stop = scanner_.scan_top_level(data(), scan_pos_, len_, eof_, depth_, [&](JsonBracket b, Crossing c) {
      if (c == Crossing::kOpen) {
        if (!check_gap(last_end_, b.position, false)) return failed = true;
        event_start_ = b.position;
        if (b.byte == '[') nested_array_element_ = true;
        return false;
      }
      if (c == Crossing::kUnmatchedClose) {
        if (b.byte == ']') {
          if (!check_gap(last_end_, b.position, true)) return failed = true;
          end_of_array = true;
          return true;
        }
        if (options_.lenient) {
          summary_.skipped_bytes += 1;
          note_problem("invalid JSON: unmatched '}' in traceEvents", offset(b.position));
          return false;
        }
        error_ = TraceError{TraceErrorKind::kNotJson, offset(b.position), "invalid JSON: unmatched '}' in traceEvents", {}};
        return failed = true;
      }
      first_element_ = false;
      last_end_ = b.position + 1;
      if (nested_array_element_) {
        nested_array_element_ = false;
        if (options_.lenient) {
          summary_.skipped_bytes += last_end_ - event_start_;
          ++summary_.skipped_events;
          note_problem("a traceEvents element is not an object", offset(event_start_));
          return false;
        }
        error_ = TraceError{TraceErrorKind::kNotATrace, offset(event_start_), "a traceEvents element is not an object", {}};
        return failed = true;
      }
      if (!options_.parse_unused_events) {
        if (is_unused_event(data() + event_start_, last_end_ - event_start_, options_.python_functions)) {
          ++summary_.event_objects;
          ++summary_.unparsed_events;
          return false;
        }
        if (read_kineto_cpu_op(std::string_view(data() + event_start_, last_end_ - event_start_), event_)) {
          deliver(DecodeOutcome::kEvent);
          return false;
        }
      }
      if (options_.plain_decoder) {
        const std::string_view bytes(data() + event_start_, last_end_ - event_start_);
        if (auto outcome = plain_decoder_.decode(bytes, event_)) {
          deliver(*outcome);
          return false;
        }
      }
      if (!parse_one(EventSpan{event_start_, last_end_})) return failed = true;
      return false;
    });
    if (failed) return Step::kFailed;
    if (end_of_array) {
      pos_ = stop;
      phase_ = bare_array_ ? Phase::kDone : Phase::kAfterValue;
      return Step::kProgress;
    }
    scan_pos_ = stop;
    return Step::kNeedMore;
  }

  // ---- parsing whole events ------------------------------------------------------------------------

  void deliver(DecodeOutcome outcome) {
    ++summary_.event_objects;
    if (outcome == DecodeOutcome::kEvent) {
      ++summary_.complete_events;
      sink_.on_event(event_);
    }
  }

  // An event the plain decoder declined, as its own On Demand document: decoded, or reported (or
  // skipped) with its place in the file. One document per event, never a batch of them: On Demand does
  // not look at what follows a member that decides the event (a "ph" other than "X"), so in a batch a
  // damaged event could throw its neighbours' parse off or not, depending on which they were. Copied,
  // so the padding simdjson reads past the end exists even at the end of a mapped file.
  bool parse_one(const EventSpan& span) {
    const std::size_t length = span.end - span.begin;
    scratch_.assign(data() + span.begin, data() + span.end);
    scratch_.resize(length + simdjson::SIMDJSON_PADDING, ' ');
    const char* begin = scratch_.data();
    std::optional<TraceError> problem;
    {
      od::document doc;
      auto error = parser_.iterate(begin, length, scratch_.size()).get(doc);
      od::object object;
      if (!error) error = doc.get_object().get(object);
      if (error) {
        problem = TraceError{TraceErrorKind::kNotJson, offset(span.begin),
                             fmt::format("invalid JSON in an event ({})", simdjson::error_message(error)), {}};
      } else {
        auto outcome = decode_trace_event(object, decode_options_, event_);
        if (outcome) {
          deliver(*outcome);
        } else {
          const char* where = outcome.error().where;
          if (where == nullptr) {
            const char* location = nullptr;
            if (!doc.current_location().get(location)) where = location;
          }
          std::size_t at = span.begin;
          if (where != nullptr && where >= begin && where < begin + length) at = span.begin + static_cast<std::size_t>(where - begin);
          const std::string_view prefix = outcome.error().kind == TraceErrorKind::kNotJson ? "invalid JSON in an event: "
                                                                                           : "bad trace event: ";
          problem = TraceError{outcome.error().kind, offset(at), fmt::format("{}{}", prefix, outcome.error().message), {}};
        }
      }
    }
    if (!problem) return true;
    if (options_.lenient) {
      ++summary_.event_objects;
      ++summary_.skipped_events;
      summary_.skipped_bytes += length;
      note_problem(problem->message, problem->byte_offset);
      return true;
    }
    error_ = std::move(problem);
    return false;
  }

  TraceByteReader& reader_;
  TraceEventSink& sink_;
  TraceHeader& header_;
  const ParseOptions& options_;
  DecodeOptions decode_options_;
  ParseSummary summary_;
  std::optional<TraceError> error_;

  std::unique_ptr<char[]> buffer_;       // the window when reading through read(2) or inflating
  std::span<const char> mapped_;         // the whole file when it is mapped
  const char* window_ = nullptr;         // data()[0]: in buffer_ or in mapped_
  std::uint64_t released_ = 0;           // mapped bytes before this were handed back
  std::vector<char> scratch_;
  std::size_t capacity_ = 0;
  std::size_t len_ = 0;
  std::uint64_t base_ = 0;  // offset in the JSON text of data()[0]
  bool eof_ = false;

  Phase phase_ = Phase::kStart;
  std::size_t pos_ = 0;
  std::string key_;
  bool first_member_ = false;
  bool seen_events_ = false;
  bool bare_array_ = false;

  JsonStructureScanner scanner_;
  std::size_t scan_pos_ = 0;
  std::int64_t depth_ = 0;
  std::size_t value_start_ = 0;
  bool capturing_ = false;

  std::size_t last_end_ = 0;
  std::size_t event_start_ = 0;
  bool first_element_ = true;
  bool nested_array_element_ = false;

  od::parser parser_;
  od::parser header_parser_;
  PlainEventDecoder plain_decoder_;
  TraceEvent event_;
};

}  // namespace

std::expected<ParseSummary, TraceError> parse_trace(TraceByteReader& reader, TraceEventSink& sink, TraceHeader& header,
                                                    const ParseOptions& options) {
  StreamingTraceParser parser(reader, sink, header, options);
  return parser.run();
}

}  // namespace gpuscope::trace
