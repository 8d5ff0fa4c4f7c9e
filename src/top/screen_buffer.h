// ScreenBuffer: a grid of cells (one character and one style each) that the screen is drawn into
// before the terminal paints it, so drawing is tested as text, without a terminal, and nothing drawn
// can spill past the edge: every write is clipped to the grid.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuscope::top {

// What a cell means; the terminal picks the colors (none on a terminal without them).
enum class Style : std::uint8_t {
  kNormal,
  kDim,
  kBold,
  kTitle,     // the top line
  kHeader,    // the process table's header (reverse video)
  kSelected,  // the selected GPU's marker and name
  kGood,
  kWarn,
  kBad,
  kUtil,      // utilization.gpu's bar: the number that lies
  kSm,        // SM active's bar: the number that does not
  kTensor,
  kDram,
  kMemory,
  kPower,
  kCount,
};

struct Cell {
  char32_t ch = U' ';
  Style style = Style::kNormal;
};

class ScreenBuffer {
 public:
  ScreenBuffer(int width, int height);
  int width() const { return width_; }
  int height() const { return height_; }

  // Writes `text` from column x of row y, clipped to the grid; returns the column after it.
  int put(int x, int y, std::u32string_view text, Style style = Style::kNormal);
  int put(int x, int y, std::string_view utf8, Style style = Style::kNormal);
  // Sets the style of `count` cells from (x, y), keeping their characters.
  void restyle(int x, int y, int count, Style style);
  const Cell& at(int x, int y) const { return cells_[static_cast<std::size_t>(y * width_ + x)]; }

  // A row as UTF-8, every cell (trailing spaces too); all rows joined by '\n'.
  std::string row_text(int y) const;
  std::string text() const;

 private:
  int width_;
  int height_;
  std::vector<Cell> cells_;
};

// UTF-8 text from outside (a process's command line, an error) as cells: one character per cell, so
// control characters, invalid bytes and characters a terminal may draw two cells wide become '?'.
std::u32string cell_text(std::string_view utf8);

}  // namespace gpuscope::top
