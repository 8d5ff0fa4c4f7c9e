// OptionalLibrary: what serve and the notifiers say when the library they open at run time is missing
// or too old, tried on libraries every test machine has or certainly lacks.
#include "model/optional_library.h"

#include <gtest/gtest.h>

namespace gpuscope::model {
namespace {

struct ZlibApi {
  const char* (*version)();
  int (*missing)();
};

TEST(OptionalLibrary, NamesTheLibraryThatIsNotInstalled) {
  auto library = OptionalLibrary::open({"libgpuscope-no-such.so.1", "libgpuscope-nor-this.so.2"}, "libnothing");
  ASSERT_FALSE(library.has_value());
  EXPECT_TRUE(library.error().starts_with("libnothing is not installed (libgpuscope-no-such.so.1: ")) << library.error();
  EXPECT_EQ(library.error().find('\n'), std::string::npos);
}

TEST(OptionalLibrary, OpensTheFirstThatLoadsAndBindsItsFunctions) {
  auto library = OptionalLibrary::open({"libgpuscope-no-such.so.1", "libz.so.1"}, "zlib");
  ASSERT_TRUE(library.has_value()) << library.error();
  ZlibApi api{};
  library->bind("zlibVersion", api.version);
  auto bound = library->finish(api);
  ASSERT_TRUE(bound.has_value()) << bound.error();
  EXPECT_EQ(std::string(bound->version()).substr(0, 2), "1.");
}

TEST(OptionalLibrary, NamesTheFirstMissingFunction) {
  auto library = OptionalLibrary::open({"libz.so.1"}, "zlib");
  ASSERT_TRUE(library.has_value()) << library.error();
  ZlibApi api{};
  library->bind("zlibVersion", api.version);
  library->bind("gpuscope_no_such_function", api.missing);
  library->bind("another_missing_one", api.missing);
  auto bound = library->finish(api);
  ASSERT_FALSE(bound.has_value());
  EXPECT_EQ(bound.error(), "the installed zlib lacks gpuscope_no_such_function");
}

// A type of its own: once() keeps one result per Api type.
struct CountedApi {
  int load_number;
};

int loads = 0;

std::expected<CountedApi, std::string> load_counted() { return CountedApi{++loads}; }

TEST(OptionalLibrary, LoadsOnce) {
  auto first = OptionalLibrary::once(&load_counted);
  auto second = OptionalLibrary::once(&load_counted);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(*first, *second);  // the same stored result, not a second load
  EXPECT_EQ((*first)->load_number, 1);
  EXPECT_EQ(loads, 1);
}

}  // namespace
}  // namespace gpuscope::model
