// The keys of `gpuscope top` and what each does to the model and the view, as a pure function of
// (key, state), so every binding is unit-tested without a terminal. The terminal maps its key codes
// (ncurses' KEY_UP, ...) to the Key values below; printable keys are their character.
#pragma once

#include <optional>
#include <string>

#include "top/top_model.h"

namespace gpuscope::top {

// Non-character keys, above every Unicode code point.
enum Key : int {
  kKeyUp = 0x110000,
  kKeyDown,
  kKeyLeft,
  kKeyRight,
  kKeyEnter,
  kKeyEscape,
  kKeyBackspace,
  kKeyTab,
  kKeyHelp,  // F1
  kKeyQuit,  // F10, as in htop
  kKeyResize,
};

// What the screen shows besides the model: the help overlay, the user-filter prompt being typed.
struct ViewState {
  bool help = false;
  std::optional<std::string> user_prompt;  // set while typing a user name after 'u'
  bool quit = false;
};

// Applies one key. While the help is shown any key closes it (q still quits); while the prompt is open
// keys edit it (Enter sets the filter, an empty one clears it; Escape leaves it as it was).
void handle_key(int key, TopModel& model, ViewState& view);

// The help overlay's lines (key, what it does), drawn by the screen.
struct KeyHelp {
  const char* keys;
  const char* action;
};
const std::vector<KeyHelp>& key_help();

}  // namespace gpuscope::top
