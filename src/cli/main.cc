// gpuscope's entry point; everything lives in run_cli so tests can drive it in-process.
#include <iostream>
#include <span>

#include "cli/run_cli.h"

int main(int argc, char** argv) {
  // Lines go out as they are made (flushed per reading by the verbs), not buffered through stdio too.
  std::ios::sync_with_stdio(false);
  return gpuscope::cli::run_cli(std::span<const char* const>(argv, static_cast<std::size_t>(argc)), std::cout,
                                std::cerr);
}
