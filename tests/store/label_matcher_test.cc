#include "store/label_matcher.h"

#include <string>
#include <vector>

#include <re2/re2.h>

#include <gtest/gtest.h>

namespace gpuscope::store {
namespace {

using Op = LabelMatcher::Op;

// What Prometheus's anchored (?s) regex answers, straight from RE2.
bool re2_full_match(const std::string& regex, const std::string& value) {
  re2::RE2::Options options;
  options.set_log_errors(false);
  options.set_dot_nl(true);
  const re2::RE2 re("^(?:" + regex + ")$", options);
  EXPECT_TRUE(re.ok()) << regex;
  return re2::RE2::FullMatch(value, re);
}

TEST(LabelMatcher, LiteralAlternativesAreASetWithRe2sAnswers) {
  const std::vector<std::string> literal = {"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_SM_ACTIVE",
                                            "a",
                                            "",
                                            "a|",
                                            "|a|b",
                                            "b|a|b",
                                            "up|gpuscope_up",
                                            "with space|x-y/z:w=1,2"};
  const std::vector<std::string> values = {"",  "a",  "b",  "ab", "a|b", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE",
                                           "DCGM_FI_DEV_GPU_UTILX", "up", "gpuscope_up", "gpuscope_upx", "with space",
                                           "x-y/z:w=1,2", "A", "a\n", "\na"};
  for (const auto& regex : literal) {
    auto m = LabelMatcher::make(Op::kRegex, "__name__", regex);
    auto not_m = LabelMatcher::make(Op::kNotRegex, "__name__", regex);
    ASSERT_TRUE(m && not_m) << regex;
    EXPECT_TRUE(m->literal_set()) << regex;
    for (const auto& v : values) {
      EXPECT_EQ(m->matches(v), re2_full_match(regex, v)) << regex << " on \"" << v << '"';
      EXPECT_EQ(not_m->matches(v), !re2_full_match(regex, v)) << regex << " on \"" << v << '"';
    }
  }
}

TEST(LabelMatcher, AnyMetacharacterOrNonAsciiByteGoesToRe2) {
  const std::vector<std::string> regexes = {"a.b", "a+", "a*", "a?", "(a|b)", "[ab]", "a{2}", "^a", "a$",
                                            "a\\|b", "\\d", "caf\xc3\xa9", ".*", ".+"};
  const std::vector<std::string> values = {"", "a", "b", "aa", "a.b", "axb", "a|b", "7", "caf\xc3\xa9", "a\nb"};
  for (const auto& regex : regexes) {
    auto m = LabelMatcher::make(Op::kRegex, "l", regex);
    ASSERT_TRUE(m) << regex;
    EXPECT_FALSE(m->literal_set()) << regex;
    for (const auto& v : values) EXPECT_EQ(m->matches(v), re2_full_match(regex, v)) << regex << " on " << v;
  }
  // Equality matchers have no regex at all.
  EXPECT_FALSE(LabelMatcher::make(Op::kEqual, "l", "a|b")->literal_set());
  EXPECT_TRUE(LabelMatcher::make(Op::kEqual, "l", "a|b")->matches("a|b"));
}

TEST(LabelMatcher, ABadRegexIsAnErrorNamingIt) {
  auto m = LabelMatcher::make(Op::kRegex, "l", "a(b");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().find("invalid regular expression \"a(b\""), std::string::npos) << m.error();
  EXPECT_FALSE(LabelMatcher::make(Op::kNotRegex, "l", "caf\xc3")) << "RE2 refuses invalid UTF-8";
}

}  // namespace
}  // namespace gpuscope::store
