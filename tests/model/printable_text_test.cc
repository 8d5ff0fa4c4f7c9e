#include "model/printable_text.h"

#include <gtest/gtest.h>

namespace gpuscope::model {
namespace {

TEST(PrintableText, PrintableAsciiAndUtf8PassUnchanged) {
  EXPECT_EQ(printable_text("DCGM_FI_DEV_GPU_TEMP, gauge, 45 °C"), "DCGM_FI_DEV_GPU_TEMP, gauge, 45 °C");
  EXPECT_EQ(printable_text("\xf0\x9f\x94\xa5"), "\xf0\x9f\x94\xa5");  // a four-byte sequence
  EXPECT_EQ(printable_text(""), "");
}

TEST(PrintableText, ControlBytesAndDelAreEscaped) {
  EXPECT_EQ(printable_text(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable_text("\x1b[31mred\t\r\n\x7f"), "\\x1b[31mred\\x09\\x0d\\x0a\\x7f");
}

TEST(PrintableText, BytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(printable_text("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable_text("\xc3"), "\\xc3");                  // truncated two-byte sequence
  EXPECT_EQ(printable_text("\xc0\xaf"), "\\xc0\\xaf");         // overlong '/'
  EXPECT_EQ(printable_text("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
  EXPECT_EQ(printable_text("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  EXPECT_EQ(printable_text("\xe2\x82"), "\\xe2\\x82");         // cut short at the end
  EXPECT_EQ(printable_text("x\x80y"), "x\\x80y");              // a lone continuation byte
}

}  // namespace
}  // namespace gpuscope::model
