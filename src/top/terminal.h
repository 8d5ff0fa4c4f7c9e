// Terminal: the ncurses screen `gpuscope top` paints a ScreenBuffer on, and its keys. The only file that
// knows ncurses: it opens the terminal on stdin/stdout (failing with a message, never exiting, when the
// terminal type is unknown), maps keys to top's Key values, draws in color when there are colors and
// with ASCII stand-ins when the locale cannot show UTF-8, and gives the terminal back as it found it.
#pragma once

#include <expected>
#include <memory>
#include <optional>
#include <string>

#include "top/screen_buffer.h"

namespace gpuscope::top {

class Terminal {
 public:
  static std::expected<std::unique_ptr<Terminal>, std::string> open();
  ~Terminal();  // close()
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int width() const;
  int height() const;
  void paint(const ScreenBuffer& buffer);
  // Waits up to `timeout_ms` for a key; nullopt when none came.
  std::optional<int> read_key(int timeout_ms);
  // Restores the terminal (idempotent).
  void close();

 private:
  Terminal() = default;
  struct Screen;
  Screen* screen_ = nullptr;
  bool utf8_ = true;
  bool colors_ = false;
};

}  // namespace gpuscope::top
