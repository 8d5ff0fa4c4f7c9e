#include "top/screen_buffer.h"

#include <algorithm>

namespace gpuscope::top {
namespace {

// Characters one cell wide on every terminal: ASCII and the Latin, Greek and Cyrillic blocks, and the
// box-drawing, block and geometric shapes the screen draws with. East Asian scripts and emoji are
// left out (two cells, or one, by the terminal's whim).
bool single_width(char32_t c) {
  if (c >= 0x20 && c < 0x7f) return true;
  if (c >= 0xa0 && c < 0x0530) return true;
  if (c >= 0x2010 && c <= 0x2027) return true;  // dashes, quotes, bullet, ellipsis
  if (c >= 0x2190 && c <= 0x21ff) return true;  // arrows
  if (c >= 0x2500 && c <= 0x25ff) return true;  // box drawing, blocks, shapes
  return false;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

}  // namespace

std::u32string cell_text(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    std::size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1f) : len == 3 ? (b & 0x0f) : (b & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cont = static_cast<unsigned char>(s[i + k]);
      if ((cont & 0xc0) != 0x80) ok = false;
      c = (c << 6) | (cont & 0x3f);
    }
    out += ok && single_width(c) ? c : U'?';
    i += ok ? len : 1;
  }
  return out;
}

ScreenBuffer::ScreenBuffer(int width, int height)
    : width_(std::max(width, 0)), height_(std::max(height, 0)),
      cells_(static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_)) {}

int ScreenBuffer::put(int x, int y, std::u32string_view text, Style style) {
  if (y < 0 || y >= height_) return x + static_cast<int>(text.size());
  for (char32_t c : text) {
    if (x >= 0 && x < width_) cells_[static_cast<std::size_t>(y * width_ + x)] = {c, style};
    ++x;
  }
  return x;
}

int ScreenBuffer::put(int x, int y, std::string_view utf8, Style style) { return put(x, y, cell_text(utf8), style); }

void ScreenBuffer::restyle(int x, int y, int count, Style style) {
  if (y < 0 || y >= height_) return;
  for (int i = std::max(x, 0); i < std::min(x + count, width_); ++i) {
    cells_[static_cast<std::size_t>(y * width_ + i)].style = style;
  }
}

std::string ScreenBuffer::row_text(int y) const {
  std::string out;
  for (int x = 0; x < width_; ++x) append_utf8(out, at(x, y).ch);
  return out;
}

std::string ScreenBuffer::text() const {
  std::string out;
  for (int y = 0; y < height_; ++y) {
    if (y > 0) out += '\n';
    out += row_text(y);
  }
  return out;
}

}  // namespace gpuscope::top
