#include "trace/cpu_op_reader.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "trace/event_fields.h"

namespace gpuscope::trace {
namespace {

struct CpuOpCursor {
  const char* p;
  const char* end;  // the event's closing '}'

  void skip_space() {
    while (p < end && is_json_space(*p)) ++p;
  }

  // `literal` (a key with its quotes, or punctuation) after optional whitespace.
  template <std::size_t N>
  bool expect(const char (&literal)[N]) {
    skip_space();
    if (static_cast<std::size_t>(end - p) < N - 1 || std::memcmp(p, literal, N - 1) != 0) return false;
    p += N - 1;
    return true;
  }

  // A key's colon and the whitespace around it.
  bool colon() {
    skip_space();
    if (p >= end || *p != ':') return false;
    ++p;
    skip_space();
    return true;
  }

  // A string of printable ASCII without escapes, whose opening quote is at p.
  bool plain_string(std::string_view& content) {
    if (p >= end || *p != '"') return false;
    const char* begin = ++p;
#if defined(__SSE2__)
    while (end - p >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i stop = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
          _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));  // signed: non-ASCII bytes are below 0x20 too
      if (const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop)); mask != 0) {
        p += __builtin_ctz(mask);
        break;
      }
      p += 16;
    }
#endif
    while (p < end) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++p;
    }
    if (p >= end || *p != '"') return false;
    content = std::string_view(begin, static_cast<std::size_t>(p - begin));
    ++p;
    return true;
  }

  bool number(std::string_view& token) {
    const std::size_t length = json_number_length(std::string_view(p, static_cast<std::size_t>(end - p)));
    if (length == 0) return false;
    token = std::string_view(p, length);
    p += length;
    return true;
  }
};

}  // namespace

bool read_kineto_cpu_op(std::string_view bytes, TraceEvent& event) {
  if (bytes.size() < 2) return false;
  CpuOpCursor c{bytes.data() + 1, bytes.data() + bytes.size() - 1};
  std::string_view name, token;
  // Kineto's own spacing in one compare; any other spacing token by token.
  constexpr std::string_view kKinetoHead = "\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": ";
  c.skip_space();
  if (static_cast<std::size_t>(c.end - c.p) > kKinetoHead.size() && std::memcmp(c.p, kKinetoHead.data(), kKinetoHead.size()) == 0) {
    c.p += kKinetoHead.size();
  } else if (!c.expect("\"ph\"") || !c.colon() || !c.expect("\"X\"") || !c.expect(",") || !c.expect("\"cat\"") ||
             !c.colon() || !c.expect("\"cpu_op\"") || !c.expect(",") || !c.expect("\"name\"") || !c.colon()) {
    return false;
  }
  if (!c.plain_string(name) || !c.expect(",")) return false;
  std::int64_t tid = -1;
  if (c.expect("\"pid\"")) {
    // Any number; a string pid (a label) is left to the decoders.
    if (!c.colon() || !c.number(token) || !c.expect(",")) return false;
  }
  if (c.expect("\"tid\"")) {
    if (!c.colon() || !c.number(token) || !c.expect(",")) return false;
    const auto value = integer_value(token);
    if (!value) return false;
    tid = *value;
  }
  if (!c.expect("\"ts\"") || !c.colon() || !c.number(token)) return false;
  const auto start = microseconds_text_to_ns(token);
  if (!start || !c.expect(",") || !c.expect("\"dur\"") || !c.colon() || !c.number(token)) return false;
  const auto duration = microseconds_text_to_ns(token);
  if (!duration || *duration < 0 || !c.expect(",") || !c.expect("\"args\"") || !c.colon()) return false;
  event = TraceEvent{};
  event.category = EventCategory::kCpuOp;
  event.name = name;
  event.tid = tid;
  event.start_ns = *start;
  event.duration_ns = *duration;
  return true;
}

}  // namespace gpuscope::trace
