// ncursesw, opened with dlopen by `gpuscope top` rather than linked: with libtinfo under it, it cost every
// gpuscope process (`serve` included) ~0.3 MB resident and its symbol relocations at start-up, and only top
// draws (issue 23). Types, constants and the macros over a WINDOW come from <ncurses.h>.
#pragma once

#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <ncurses.h>

#include <expected>
#include <string>

namespace gpuscope::top {

// The functions terminal.cc calls, by their ncurses names, with the header's own types (decltype names no
// symbol, so nothing is linked). The header's stdscr macros (refresh(), timeout(), get_wch(), mvadd_wch())
// are spelled out as the w* functions they stand for, on `*screen_window`.
struct CursesApi {
  decltype(&::newterm) newterm;
  decltype(&::delscreen) delscreen;
  decltype(&::endwin) endwin;
  decltype(&::set_escdelay) set_escdelay;
  decltype(&::cbreak) cbreak;
  decltype(&::noecho) noecho;
  decltype(&::nonl) nonl;
  decltype(&::keypad) keypad;
  decltype(&::curs_set) curs_set;
  decltype(&::has_colors) has_colors;
  decltype(&::start_color) start_color;
  decltype(&::use_default_colors) use_default_colors;
  decltype(&::init_pair) init_pair;
  decltype(&::setcchar) setcchar;
  decltype(&::wmove) wmove;
  decltype(&::wadd_wch) wadd_wch;
  decltype(&::wrefresh) wrefresh;
  decltype(&::wtimeout) wtimeout;
  decltype(&::wget_wch) wget_wch;
  WINDOW** screen_window;  // ncurses' stdscr: the current screen's window, set by newterm
};

// ncursesw loaded (once, thread-safely), or one line saying why it cannot be. Never unloaded.
std::expected<const CursesApi*, std::string> curses_api();

}  // namespace gpuscope::top
