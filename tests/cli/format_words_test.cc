// One --format vocabulary for every verb that prints for people or scripts: "text" or "json", with
// "table" (the word eval and backtest used first) still accepted.
#include <gtest/gtest.h>

#include "cli/backtest_verb.h"
#include "cli/dmon_verb.h"
#include "cli/eval_verb.h"
#include "cli/info_verb.h"
#include "cli/list_verb.h"
#include "cli/trace_verb.h"

namespace gpuscope::cli {
namespace {

// Parses `extra` plus --format WORD with each verb's own parser; nullopt for a usage error (its text in `error`).
std::optional<bool> json_of(std::string_view verb, const std::string& word, std::string& error) {
  auto take = [&](auto&& r) -> std::optional<bool> {
    if (!r) {
      error = r.error().text;
      return std::nullopt;
    }
    return r->json;
  };
  if (verb == "list") return take(parse_list_args(std::vector<std::string>{"--format", word}));
  if (verb == "info") return take(parse_info_args(std::vector<std::string>{"--format", word}));
  if (verb == "dmon") return take(parse_dmon_args(std::vector<std::string>{"--format", word}));
  if (verb == "trace") return take(parse_trace_args(std::vector<std::string>{"t.json", "--format", word}));
  if (verb == "eval") return take(parse_eval_args(std::vector<std::string>{"up", "--url", "u", "--format", word}, 0));
  const std::string rules = std::string(GPUSCOPE_SOURCE_DIR) + "/rules/gpu.rules.yml";
  return take(parse_backtest_args(
      std::vector<std::string>{"--scenario", std::string(GPUSCOPE_SOURCE_DIR) + "/scenarios/ecc.yaml", "--rules", rules,
                               "--format", word}, GlobalOptions{}));
}

TEST(FormatWords, EveryVerbTakesTextTableAndJson) {
  for (std::string_view verb : {"list", "info", "dmon", "trace", "eval", "backtest"}) {
    std::string error;
    EXPECT_EQ(json_of(verb, "text", error), false) << verb << ": " << error;
    EXPECT_EQ(json_of(verb, "table", error), false) << verb << ": " << error;
    EXPECT_EQ(json_of(verb, "json", error), true) << verb << ": " << error;
    EXPECT_EQ(json_of(verb, "yaml", error), std::nullopt) << verb;
    // dmon also takes nvidia-smi's csv, nounit and noheader, and says so.
    EXPECT_EQ(error, verb == "dmon" ? "unknown format 'yaml' in --format (text, csv or json; csv and text take nounit "
                                      "and noheader)"
                                    : "unknown format 'yaml' in --format (text or json)")
        << verb;
  }
}

}  // namespace
}  // namespace gpuscope::cli
