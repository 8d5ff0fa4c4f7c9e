#include "trace/plain_event_decoder.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpuscope::trace {

struct PlainEventDecoder::Shape {
  // What one value is to the analyses.
  enum class Role : std::uint8_t { kNone, kName, kStart, kDuration, kDevice, kStream, kCorrelation, kBytes, kTid };
  struct Value {
    std::uint32_t literal_begin;  // the bytes before the value, in `literals`
    std::uint32_t literal_size;
    bool is_string;  // else a number (true, false and null are part of the literal bytes)
    Role role;
  };

  EventCategory category = EventCategory::kOther;
  std::string literals;  // every literal run, with 16 bytes of padding before and after for 16-byte compares
  std::vector<Value> values;
  std::uint32_t tail_begin = 0;  // the bytes after the last value, to the event's '}'
  std::uint32_t tail_size = 0;
  std::uint64_t hits = 0;
};

namespace {

using ValueRole = PlainEventDecoder::Shape::Role;
using ShapeValue = PlainEventDecoder::Shape::Value;

// A shape is learned only from events up to this size and number of values.
constexpr std::size_t kMaxShapeBytes = 16u << 10;
constexpr std::size_t kMaxShapeValues = 512;
constexpr std::size_t kLiteralPadding = 16;

// Equality with a literal in one fixed-size compare (string_view's operator== goes through calls that
// stop the inlining the reader depends on).
template <std::size_t N>
[[gnu::always_inline]] inline bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && __builtin_memcmp(text.data(), literal, N - 1) == 0;
}

// A position in one event and the grammar's pieces. The event ends with its '}' (checked before a
// cursor is made), which stops every loop over whitespace or digits: only the string scan and the
// 16-byte loads need a bound.
struct PlainCursor {
  const char* p;
  const char* last;   // the event's closing '}'
  const char* begin;  // its opening '{'

  [[gnu::always_inline]] bool remaining_at_least(std::size_t n) const {
    return static_cast<std::size_t>(last + 1 - p) >= n;
  }

  [[gnu::always_inline]] void skip_space() {
    if (!is_json_space(*p)) return;
#if defined(__SSE2__)
    // Kineto breaks lines and indents by up to eight spaces: mostly one step.
    if (remaining_at_least(16)) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i space = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))));
      const unsigned others = ~static_cast<unsigned>(_mm_movemask_epi8(space)) & 0xFFFFu;
      if (others != 0) {
        p += __builtin_ctz(others);
        return;
      }
      p += 16;
    }
#endif
    while (is_json_space(*p)) ++p;
  }

  // Moves to the first quote, backslash, control character or non-ASCII byte; false when there is none
  // before the end of the event.
  [[gnu::always_inline]] bool to_string_stop() {
#if defined(__SSE2__)
    while (remaining_at_least(16)) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i stop = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
          _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));  // signed: non-ASCII bytes are below 0x20 too
      if (const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop)); mask != 0) {
        p += __builtin_ctz(mask);
        return true;
      }
      p += 16;
    }
#endif
    for (; p <= last; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return true;
    }
    return false;
  }

  // The string whose opening quote is at p: `content` gets the bytes between the quotes, escapes as
  // they are; `escaped` whether there were any.
  [[gnu::always_inline]] bool read_string(std::string_view& content, bool& escaped) {
    if (*p != '"') return false;
    const char* begin = ++p;
    escaped = false;
    for (;;) {
      if (!to_string_stop()) return false;
      if (*p == '"') break;
      if (*p != '\\' || p == last) return false;  // a control character or a non-ASCII byte
      switch (p[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
          p += 2;
          escaped = true;
          break;
        default:
          return false;  // \u escapes are left to simdjson, which checks them and their surrogate pairs
      }
    }
    content = std::string_view(begin, static_cast<std::size_t>(p - begin));
    ++p;
    return true;
  }

  [[gnu::always_inline]] bool skip_digits() {
    const char* from = p;
    // Most numbers in args are one or two digits (a device, a stream, a flag): no vector step for those.
    if (static_cast<unsigned char>(p[0] - '0') > 9) return false;
    if (static_cast<unsigned char>(p[1] - '0') > 9) {
      ++p;
      return true;
    }
#if defined(__SSE2__)
    if (remaining_at_least(16)) {
      // A digit minus '0' is at most 9 as an unsigned byte.
      const __m128i v = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), _mm_set1_epi8('0'));
      const __m128i digit = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(9)), v);
      const unsigned others = ~static_cast<unsigned>(_mm_movemask_epi8(digit)) & 0xFFFFu;
      if (others != 0) {
        p += __builtin_ctz(others);
        return p != from;
      }
      p += 16;
    }
#endif
    while (*p >= '0' && *p <= '9') ++p;
    return p != from;
  }

  // A JSON number at p, by the grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  [[gnu::always_inline]] bool read_number(std::string_view& token) {
    const char* begin = p;
    if (*p == '-') ++p;
    const char* whole = p;
    if (!skip_digits() || (*whole == '0' && p - whole > 1)) return false;
    if (*p == '.') {
      ++p;
      if (!skip_digits()) return false;
    }
    if (*p == 'e' || *p == 'E') {
      ++p;
      if (*p == '+' || *p == '-') ++p;
      if (!skip_digits()) return false;
    }
    token = std::string_view(begin, static_cast<std::size_t>(p - begin));
    return true;
  }

  [[gnu::always_inline]] bool skip_word(std::string_view word) {
    if (!remaining_at_least(word.size()) || std::memcmp(p, word.data(), word.size()) != 0) return false;
    p += word.size();
    return true;
  }

  // Whether the bytes at p are the literal's (which has kLiteralPadding readable bytes before and after
  // it); moves past them. In 16-byte compares without a mask to work out per step: a literal of 16
  // bytes or more as whole steps, the last one overlapping the one before; a shorter one as the bytes
  // from p, or near the event's end as the 16 bytes that end with it.
  [[gnu::always_inline]] bool skip_literal(const char* literal, std::uint32_t size) {
    if (!remaining_at_least(size)) return false;
#if defined(__SSE2__)
    auto same16 = [](const char* a, const char* b) {
      return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)),
                                              _mm_loadu_si128(reinterpret_cast<const __m128i*>(b))));
    };
    if (size >= 16) {
      for (std::uint32_t at = 0; at + 16 < size; at += 16) {
        if (same16(p + at, literal + at) != 0xFFFF) return false;
      }
      if (same16(p + size - 16, literal + size - 16) != 0xFFFF) return false;
    } else if (remaining_at_least(16)) {
      const unsigned wanted = (1u << size) - 1;
      if ((static_cast<unsigned>(same16(p, literal)) & wanted) != wanted) return false;
    } else if (p + size - begin >= 16) {
      const unsigned wanted = 0xFFFFu & ~((1u << (16 - size)) - 1);
      if ((static_cast<unsigned>(same16(p + size - 16, literal + size - 16)) & wanted) != wanted) return false;
    } else if (std::memcmp(p, literal, size) != 0) {
      return false;
    }
    p += size;
    return true;
#else
    if (std::memcmp(p, literal, size) != 0) return false;
    p += size;
    return true;
#endif
  }
};

// A short token of digits alone, the usual id, stream or duration: its value, without the general
// conversions' checks for signs, points, exponents and overflow. False for anything else.
[[gnu::always_inline]] inline bool short_digits(std::string_view token, std::int64_t& value) {
  if (token.size() > 8) return false;
  std::int64_t v = 0;
  for (const char c : token) {
    const auto digit = static_cast<unsigned char>(c - '0');
    if (digit > 9) return false;
    v = v * 10 + digit;
  }
  value = v;
  return true;
}

// Applies a value the analyses read to the event; false where decode_trace_event would report it.
[[gnu::always_inline]] inline bool apply_number(ValueRole role, std::string_view token, TraceEvent& event) {
  std::int64_t* target = nullptr;
  switch (role) {
    case ValueRole::kNone:
    case ValueRole::kName:
      return true;
    case ValueRole::kStart:
    case ValueRole::kDuration: {
      std::int64_t& field = role == ValueRole::kStart ? event.start_ns : event.duration_ns;
      if (short_digits(token, field)) {
        field *= 1000;  // microseconds
        return true;
      }
      const auto ns = microseconds_text_to_ns(token);
      if (!ns) return false;
      field = *ns;
      return true;
    }
    case ValueRole::kDevice: target = &event.device; break;
    case ValueRole::kStream: target = &event.stream; break;
    case ValueRole::kCorrelation: target = &event.correlation; break;
    case ValueRole::kBytes: target = &event.bytes; break;
    case ValueRole::kTid: target = &event.tid; break;
  }
  if (short_digits(token, *target)) return true;
  const auto value = integer_value(token);
  if (!value) return false;
  *target = *value;
  return true;
}

// What decode_trace_event returns once every member is read; nullopt where it reports an error.
std::optional<DecodeOutcome> complete_event_outcome(bool have_ts, bool have_dur, TraceEvent& event) {
  if (!have_ts || !have_dur || event.duration_ns < 0) return std::nullopt;
  if (!wants_name(event.category)) event.name = {};
  if (!wants_tid(event.category)) event.tid = -1;
  return DecodeOutcome::kEvent;
}

// Notes an event's shape as the reader goes: each value it parses closes the literal run before it.
class ShapeRecorder {
 public:
  ShapeRecorder(PlainEventDecoder::Shape& shape, const char* event) : shape_(shape), literal_from_(event) {
    shape_.literals.append(kLiteralPadding, '\0');  // for the compares that end with a literal's last byte
  }

  void value(const char* begin, const char* end, bool is_string, ValueRole role) {
    shape_.values.push_back(ShapeValue{literal(begin), static_cast<std::uint32_t>(begin - literal_from_), is_string, role});
    literal_from_ = end;
  }
  void finish(const char* end, EventCategory category) {
    shape_.tail_size = static_cast<std::uint32_t>(end - literal_from_);
    shape_.tail_begin = literal(end);
    shape_.category = category;
    shape_.literals.append(kLiteralPadding, '\0');
  }

 private:
  std::uint32_t literal(const char* end) {
    const auto begin = static_cast<std::uint32_t>(shape_.literals.size());
    shape_.literals.append(literal_from_, end);
    return begin;
  }
  PlainEventDecoder::Shape& shape_;
  const char* literal_from_;
};

// The strict member-by-member reader, in decode_trace_event's order of decisions. Everything is inlined
// into read() so that the cursor stays in registers.
class PlainEventReader {
 public:
  PlainEventReader(std::string_view bytes, const DecodeOptions& options, TraceEvent& event, ShapeRecorder* recorder)
      : c_{bytes.data(), bytes.data() + bytes.size() - 1, bytes.data()}, options_(options), event_(event),
        recorder_(recorder) {}

  // `bytes` has at least two bytes, '{' first and '}' last.
  std::optional<DecodeOutcome> read() {
    event_ = TraceEvent{};
    ++c_.p;
    c_.skip_space();
    if (*c_.p != '}') {
      for (;;) {
        std::string_view key;
        if (!key_and_colon(key) || !member(key)) return std::nullopt;
        c_.skip_space();
        if (*c_.p != ',') break;
        ++c_.p;
        c_.skip_space();
      }
    }
    if (c_.p != c_.last) return std::nullopt;  // not the event's own '}', or something after it
    if (decided_ || !have_ph_ || !complete_) return DecodeOutcome::kIgnored;
    return complete_event_outcome(have_ts_, have_dur_, event_);
  }

 private:
  static constexpr int kMaxDepth = 32;

  [[gnu::always_inline]] void record(const char* begin, bool is_string, ValueRole role) {
    if (recorder_ != nullptr) recorder_->value(begin, c_.p, is_string, role);
  }

  // A key, the colon and the whitespace after it; the key's bytes as they are (simdjson compares keys
  // without unescaping too).
  [[gnu::always_inline]] bool key_and_colon(std::string_view& key) {
    bool escaped = false;
    if (!c_.read_string(key, escaped)) return false;
    c_.skip_space();
    if (*c_.p != ':') return false;
    ++c_.p;
    c_.skip_space();
    return true;
  }

  // A string value the analyses read: without escapes, which would need unescaping.
  [[gnu::always_inline]] bool read_plain_string(std::string_view& content) {
    bool escaped = false;
    return c_.read_string(content, escaped) && !escaped;
  }

  [[gnu::always_inline]] bool skip_scalar() {
    const char* begin = c_.p;
    std::string_view ignored;
    bool escaped = false;
    switch (*c_.p) {
      case '"':
        if (!c_.read_string(ignored, escaped)) return false;
        record(begin, true, ValueRole::kNone);
        return true;
      case 't': return c_.skip_word("true");
      case 'f': return c_.skip_word("false");
      case 'n': return c_.skip_word("null");
      default:
        if (!c_.read_number(ignored)) return false;
        record(begin, false, ValueRole::kNone);
        return true;
    }
  }

  // Any value, checked and passed over: containers with a stack of the brackets still to close instead
  // of recursion, which would keep the reader out of registers. The event's own '}' is never taken for
  // one of them.
  [[gnu::always_inline]] bool skip_value() {
    char closers[kMaxDepth];
    int depth = 0;
    for (;;) {
      // At a value.
      if (*c_.p == '{' || *c_.p == '[') {
        if (depth == kMaxDepth) return false;
        const char close = *c_.p == '{' ? '}' : ']';
        closers[depth++] = close;
        ++c_.p;
        c_.skip_space();
        if (*c_.p != close) {
          std::string_view key;
          if (close == '}' && !key_and_colon(key)) return false;
          continue;
        }
        if (c_.p == c_.last) return false;
        ++c_.p;
        --depth;
      } else if (!skip_scalar()) {
        return false;
      }
      // After a value: commas and closing brackets up to the next value, or the end of this one.
      for (;;) {
        if (depth == 0) return true;
        c_.skip_space();
        if (*c_.p == ',') {
          ++c_.p;
          c_.skip_space();
          std::string_view key;
          if (closers[depth - 1] == '}' && !key_and_colon(key)) return false;
          break;
        }
        if (*c_.p != closers[depth - 1] || c_.p == c_.last) return false;
        ++c_.p;
        --depth;
      }
    }
  }

  [[gnu::always_inline]] bool member(std::string_view key) {
    if (!decided_) {
      switch (key.size()) {
        case 2:
          if (is(key, "ph")) return read_phase();
          if (is(key, "ts")) return read_number_of(ValueRole::kStart, have_ts_);
          break;
        case 3:
          if (is(key, "cat")) return read_category();
          if (is(key, "dur")) return read_number_of(ValueRole::kDuration, have_dur_);
          // A number is the thread; a string (Chrome traces allow a label) names none, as in
          // decode_trace_event.
          if (is(key, "tid") && (!have_cat_ || wants_tid(event_.category))) {
            const char c = *c_.p;
            if (c == '-' || (c >= '0' && c <= '9')) {
              bool unused = false;
              return read_number_of(ValueRole::kTid, unused);
            }
            event_.tid = -1;
          }
          break;
        case 4:
          if (is(key, "name") && (!have_cat_ || wants_name(event_.category))) {
            const char* begin = c_.p;
            if (!read_plain_string(event_.name)) return false;
            record(begin, true, ValueRole::kName);
            return true;
          }
          if (is(key, "args") && (!have_cat_ || wants_args(event_.category))) {
            return read_args(have_cat_ ? args_wanted(event_.category) : kAllArgs);
          }
          break;
        default:
          break;
      }
    }
    return skip_value();
  }

  // "ph" and "cat" stay in a shape's literal bytes: an event with other values has another shape.
  [[gnu::always_inline]] bool read_phase() {
    std::string_view ph;
    if (!read_plain_string(ph)) return false;
    complete_ = is(ph, "X");
    have_ph_ = true;
    decided_ = !complete_;
    return true;
  }

  [[gnu::always_inline]] bool read_category() {
    std::string_view cat;
    if (!read_plain_string(cat)) return false;
    event_.category = category_of(cat);
    have_cat_ = true;
    decided_ = event_.category == EventCategory::kPythonFunction && !options_.python_functions;
    return true;
  }

  [[gnu::always_inline]] bool read_number_of(ValueRole role, bool& have) {
    const char* begin = c_.p;
    std::string_view token;
    if (!c_.read_number(token) || !apply_number(role, token, event_)) return false;
    record(begin, false, role);
    have = true;
    return true;
  }

  [[gnu::always_inline]] bool read_args(unsigned wanted) {
    if (*c_.p != '{') return false;
    ++c_.p;
    c_.skip_space();
    if (*c_.p != '}') {
      for (;;) {
        std::string_view key;
        if (!key_and_colon(key)) return false;
        ValueRole role = ValueRole::kNone;
        unsigned bit = 0;
        if (is(key, "device")) {
          role = ValueRole::kDevice, bit = kDevice;
        } else if (is(key, "stream")) {
          role = ValueRole::kStream, bit = kStream;
        } else if (is(key, "correlation")) {
          role = ValueRole::kCorrelation, bit = kCorrelation;
        } else if (is(key, "bytes")) {
          role = ValueRole::kBytes, bit = kBytes;
        }
        if ((bit & wanted) != 0) {
          bool unused = false;
          if (!read_number_of(role, unused)) return false;
          wanted &= ~bit;
        } else if (!skip_value()) {
          return false;
        }
        c_.skip_space();
        if (*c_.p != ',') break;
        ++c_.p;
        c_.skip_space();
      }
    }
    if (*c_.p != '}' || c_.p == c_.last) return false;
    ++c_.p;
    return true;
  }

  PlainCursor c_;
  const DecodeOptions& options_;
  TraceEvent& event_;
  ShapeRecorder* recorder_;
  bool decided_ = false;  // ignored whatever follows: decode_trace_event returns there
  bool have_ph_ = false, complete_ = false, have_cat_ = false, have_ts_ = false, have_dur_ = false;
};

// An event of a known shape: the literal bytes compared, the values parsed. nullopt when the event has
// another shape, or a value decode_trace_event would report.
std::optional<DecodeOutcome> read_by_shape(const PlainEventDecoder::Shape& shape, std::string_view bytes,
                                           TraceEvent& event) {
  PlainCursor c{bytes.data(), bytes.data() + bytes.size() - 1, bytes.data()};
  const char* literals = shape.literals.data();
  event = TraceEvent{};
  event.category = shape.category;
  bool have_ts = false, have_dur = false;
  for (const ShapeValue& value : shape.values) {
    if (!c.skip_literal(literals + value.literal_begin, value.literal_size)) return std::nullopt;
    if (value.is_string) {
      std::string_view content;
      bool escaped = false;
      if (!c.read_string(content, escaped)) return std::nullopt;
      if (value.role == ValueRole::kName) {
        if (escaped) return std::nullopt;
        event.name = content;
      }
    } else {
      std::string_view token;
      if (!c.read_number(token) || !apply_number(value.role, token, event)) return std::nullopt;
      have_ts |= value.role == ValueRole::kStart;
      have_dur |= value.role == ValueRole::kDuration;
    }
  }
  if (!c.skip_literal(literals + shape.tail_begin, shape.tail_size) || c.p != c.last + 1) return std::nullopt;
  return complete_event_outcome(have_ts, have_dur, event);
}

}  // namespace

PlainEventDecoder::PlainEventDecoder(DecodeOptions options) : options_(options) { shapes_.reserve(kMaxShapes); }

PlainEventDecoder::~PlainEventDecoder() = default;

std::optional<DecodeOutcome> PlainEventDecoder::decode(std::string_view bytes, TraceEvent& event) {
  if (bytes.size() < 2 || bytes.front() != '{' || bytes.back() != '}') {
    ++counts_.declined;
    return std::nullopt;
  }
  for (std::size_t i = 0; i < shapes_.size(); ++i) {
    if (auto outcome = read_by_shape(shapes_[i], bytes, event)) {
      // The shapes are tried in the order of how often they were seen (kernels and runtime calls
      // alternate, so moving the last one seen to the front would move one on every event).
      if (++shapes_[i].hits > (i > 0 ? shapes_[i - 1].hits : ~std::uint64_t{0})) std::swap(shapes_[i], shapes_[i - 1]);
      ++counts_.by_shape;
      return outcome;
    }
  }
  // The shape is noted in a scratch one whose buffers are reused: an evicted shape becomes the scratch.
  const bool learn = bytes.size() <= kMaxShapeBytes;
  if (!scratch_) scratch_ = std::make_unique<Shape>();
  Shape& shape = *scratch_;
  shape.literals.clear();
  shape.values.clear();
  shape.hits = 0;
  ShapeRecorder recorder(shape, bytes.data());
  auto outcome = PlainEventReader(bytes, options_, event, learn ? &recorder : nullptr).read();
  if (!outcome) {
    ++counts_.declined;
    return std::nullopt;
  }
  ++counts_.by_reader;
  if (learn && *outcome == DecodeOutcome::kEvent && shape.values.size() <= kMaxShapeValues) {
    recorder.finish(bytes.data() + bytes.size(), event.category);
    if (shapes_.size() < kMaxShapes) {
      shapes_.push_back(std::move(shape));
    } else {
      std::swap(shapes_.back(), shape);  // the least used goes
    }
    ++counts_.shapes_learned;
  }
  return outcome;
}

}  // namespace gpuscope::trace
