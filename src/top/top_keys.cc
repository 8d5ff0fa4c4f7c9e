#include "top/top_keys.h"

#include <vector>

namespace gpuscope::top {
namespace {

// The longest user name the prompt takes (Linux's limit is 32).
constexpr std::size_t kMaxUserName = 32;

void edit_prompt(int key, TopModel& model, ViewState& view) {
  std::string& text = *view.user_prompt;
  if (key == kKeyEnter) {
    model.set_user_filter(text);
    view.user_prompt.reset();
  } else if (key == kKeyEscape) {
    view.user_prompt.reset();
  } else if (key == kKeyBackspace) {
    if (!text.empty()) text.pop_back();
  } else if (key > ' ' && key < 0x7f && text.size() < kMaxUserName) {
    text += static_cast<char>(key);
  }
}

}  // namespace

void handle_key(int key, TopModel& model, ViewState& view) {
  if (view.user_prompt) {
    edit_prompt(key, model, view);
    return;
  }
  if (key == 'q' || key == 'Q' || key == kKeyQuit) {
    view.quit = true;
    return;
  }
  if (view.help) {
    if (key != kKeyResize) view.help = false;
    return;
  }
  switch (key) {
    case 'h': case '?': case kKeyHelp: view.help = true; break;
    case 's': model.cycle_sort(); break;
    case 'm': model.set_sort(SortKey::kMemory); break;
    case 'S': model.set_sort(SortKey::kSmPercent); break;
    case 'P': model.set_sort(SortKey::kPid); break;
    case 'p': case ' ': model.toggle_pause(); break;
    case 'u': case '/': view.user_prompt = model.user_filter(); break;
    case kKeyUp: case kKeyLeft: case 'k': model.select_previous(); break;
    case kKeyDown: case kKeyRight: case 'j': model.select_next(); break;
    case kKeyTab: case kKeyEnter: case 'f': model.toggle_focus(); break;
    case kKeyEscape:
      if (model.focused()) model.toggle_focus();
      break;
    default:
      if (key >= '0' && key <= '9') model.select_index(static_cast<unsigned>(key - '0'));
      break;
  }
}

const std::vector<KeyHelp>& key_help() {
  static const std::vector<KeyHelp> lines = {
      {"h ? F1", "this help (any key closes it)"},
      {"q F10", "quit"},
      {"Up/Down j/k", "select the previous / next GPU"},
      {"0-9", "select GPU with that index"},
      {"Tab Enter f", "focus the selected GPU (details, its processes only); again or Esc: all GPUs"},
      {"s", "cycle the process sort: memory, SM%, pid"},
      {"m S P", "sort processes by memory / SM% / pid"},
      {"u /", "show only one user's processes (empty: everyone's)"},
      {"p Space", "pause: keep the values on screen (readings go on)"},
  };
  return lines;
}

}  // namespace gpuscope::top
