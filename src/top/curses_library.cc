#include "top/curses_library.h"

#include "model/optional_library.h"

namespace gpuscope::top {
namespace {

std::expected<CursesApi, std::string> load_curses() {
  auto library = model::OptionalLibrary::open({"libncursesw.so.6"}, "ncursesw (libncursesw6)");
  if (!library) return std::unexpected(library.error());
  CursesApi api{};
  library->bind("newterm", api.newterm);
  library->bind("delscreen", api.delscreen);
  library->bind("endwin", api.endwin);
  library->bind("set_escdelay", api.set_escdelay);
  library->bind("cbreak", api.cbreak);
  library->bind("noecho", api.noecho);
  library->bind("nonl", api.nonl);
  library->bind("keypad", api.keypad);
  library->bind("curs_set", api.curs_set);
  library->bind("has_colors", api.has_colors);
  library->bind("start_color", api.start_color);
  library->bind("use_default_colors", api.use_default_colors);
  library->bind("init_pair", api.init_pair);
  library->bind("setcchar", api.setcchar);
  library->bind("wmove", api.wmove);
  library->bind("wadd_wch", api.wadd_wch);
  library->bind("wrefresh", api.wrefresh);
  library->bind("wtimeout", api.wtimeout);
  library->bind("wget_wch", api.wget_wch);
  library->bind("stdscr", api.screen_window);
  return library->finish(api);
}

}  // namespace

std::expected<const CursesApi*, std::string> curses_api() { return model::OptionalLibrary::once(&load_curses); }

}  // namespace gpuscope::top
