#include "top/terminal.h"

#include <langinfo.h>

#include <algorithm>
#include <clocale>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <cwchar>

#include "top/curses_library.h"
#include "top/top_keys.h"

namespace gpuscope::top {

struct Terminal::Screen {
  const CursesApi& curses;
  SCREEN* screen = nullptr;
  WINDOW* window() const { return *curses.screen_window; }
};

namespace {

// Escape alone (closing the help or a prompt) is told from an arrow key's escape sequence after this
// long; ncurses' default, one second, makes Escape feel broken.
constexpr int kEscapeDelayMs = 25;

// Color pair numbers, one per colored style.
enum Pair : short { kPairGood = 1, kPairWarn, kPairBad, kPairUtil, kPairSm, kPairTensor, kPairDram, kPairMemory, kPairSelected };

struct Look {
  attr_t attr = A_NORMAL;
  short pair = 0;
};

Look look_of(Style s) {
  switch (s) {
    case Style::kNormal: return {};
    case Style::kDim: return {A_DIM, 0};
    case Style::kBold: return {A_BOLD, 0};
    case Style::kTitle: return {A_REVERSE | A_BOLD, 0};
    case Style::kHeader: return {A_REVERSE, 0};
    case Style::kSelected: return {A_BOLD, kPairSelected};
    case Style::kGood: return {A_NORMAL, kPairGood};
    case Style::kWarn: return {A_BOLD, kPairWarn};
    case Style::kBad: return {A_BOLD, kPairBad};
    case Style::kUtil: return {A_NORMAL, kPairUtil};
    case Style::kSm: return {A_BOLD, kPairSm};
    case Style::kTensor: return {A_NORMAL, kPairTensor};
    case Style::kDram: return {A_NORMAL, kPairDram};
    case Style::kMemory: return {A_NORMAL, kPairMemory};
    case Style::kPower: return {};
    case Style::kCount: break;
  }
  return {};
}

// Where the locale cannot show UTF-8 (LANG=C over SSH), the screen's few non-ASCII characters become ASCII.
wchar_t ascii_stand_in(char32_t c) {
  switch (c) {
    case U'█': case U'▉': case U'▊': case U'▇': return L'#';
    case U'▋': case U'▌': case U'▍': case U'▆': case U'▅': return L'=';
    case U'▎': case U'▏': case U'▄': case U'▃': return L'-';
    case U'▂': case U'▁': return L'_';
    case U'▶': return L'>';
    case U'▼': return L'v';
    case U'·': case U'…': return L'.';
    case U'—': return L'-';
    case U'°': return L' ';
    default: return c < 0x80 ? static_cast<wchar_t>(c) : L'?';
  }
}

int map_key(int ch, bool function_key) {
  if (function_key) {
    switch (ch) {
      case KEY_UP: return kKeyUp;
      case KEY_DOWN: return kKeyDown;
      case KEY_LEFT: return kKeyLeft;
      case KEY_RIGHT: return kKeyRight;
      case KEY_ENTER: return kKeyEnter;
      case KEY_BACKSPACE: return kKeyBackspace;
      case KEY_F(1): return kKeyHelp;
      case KEY_F(10): return kKeyQuit;
      case KEY_RESIZE: return kKeyResize;
      default: return -1;
    }
  }
  switch (ch) {
    case '\n': case '\r': return kKeyEnter;
    case 27: return kKeyEscape;
    case '\t': return kKeyTab;
    case 127: case 8: return kKeyBackspace;
    default: return ch;
  }
}

}  // namespace

std::expected<std::unique_ptr<Terminal>, std::string> Terminal::open() {
  std::setlocale(LC_ALL, "");
  std::unique_ptr<Terminal> t(new Terminal());
  t->utf8_ = std::strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0') return std::unexpected("TERM is not set: top cannot tell what the terminal can do");
  auto api = curses_api();
  if (!api) return std::unexpected(api.error());
  const CursesApi& c = **api;
  // newterm, not initscr: initscr exits the process when the terminal type is unknown.
  SCREEN* screen = c.newterm(nullptr, stdout, stdin);
  if (screen == nullptr) return std::unexpected("unknown terminal type '" + std::string(term) + "' (TERM)");
  t->screen_ = new Screen{c, screen};
  c.set_escdelay(kEscapeDelayMs);
  c.cbreak();  // not raw(): Ctrl-C still sends SIGINT, which ends top cleanly
  c.noecho();
  c.nonl();
  c.keypad(t->screen_->window(), TRUE);
  c.curs_set(0);
  if (c.has_colors()) {
    c.start_color();
    c.use_default_colors();
    t->colors_ = true;
    c.init_pair(kPairGood, COLOR_GREEN, -1);
    c.init_pair(kPairWarn, COLOR_YELLOW, -1);
    c.init_pair(kPairBad, COLOR_RED, -1);
    c.init_pair(kPairUtil, COLOR_YELLOW, -1);
    c.init_pair(kPairSm, COLOR_GREEN, -1);
    c.init_pair(kPairTensor, COLOR_CYAN, -1);
    c.init_pair(kPairDram, COLOR_BLUE, -1);
    c.init_pair(kPairMemory, COLOR_MAGENTA, -1);
    c.init_pair(kPairSelected, COLOR_CYAN, -1);
  }
  return t;
}

Terminal::~Terminal() { close(); }

void Terminal::close() {
  if (screen_ == nullptr) return;
  screen_->curses.endwin();
  screen_->curses.delscreen(screen_->screen);
  delete screen_;
  screen_ = nullptr;
  std::fflush(stdout);
}

int Terminal::width() const { return screen_ != nullptr ? getmaxx(screen_->window()) : 0; }
int Terminal::height() const { return screen_ != nullptr ? getmaxy(screen_->window()) : 0; }

void Terminal::paint(const ScreenBuffer& buffer) {
  if (screen_ == nullptr) return;
  const CursesApi& curses = screen_->curses;
  WINDOW* window = screen_->window();
  const int h = std::min(buffer.height(), height());
  const int w = std::min(buffer.width(), width());
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      // The bottom-right cell is left alone: writing it scrolls some terminals.
      if (y == height() - 1 && x == width() - 1) continue;
      const Cell& c = buffer.at(x, y);
      wchar_t text[2] = {utf8_ ? static_cast<wchar_t>(c.ch) : ascii_stand_in(c.ch), L'\0'};
      const Look look = look_of(c.style);
      cchar_t cc;
      curses.setcchar(&cc, text, look.attr, colors_ ? look.pair : 0, nullptr);
      if (curses.wmove(window, y, x) != ERR) curses.wadd_wch(window, &cc);  // mvadd_wch
    }
  }
  curses.wrefresh(window);
}

std::optional<int> Terminal::read_key(int timeout_ms) {
  if (screen_ == nullptr) return std::nullopt;
  WINDOW* window = screen_->window();
  screen_->curses.wtimeout(window, timeout_ms);
  wint_t ch = 0;
  const int kind = screen_->curses.wget_wch(window, &ch);
  if (kind == ERR) return std::nullopt;
  const int key = map_key(static_cast<int>(ch), kind == KEY_CODE_YES);
  if (key < 0) return std::nullopt;
  return key;
}

}  // namespace gpuscope::top
