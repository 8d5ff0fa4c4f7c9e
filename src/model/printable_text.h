// Text from outside (a file's line, a flag's value) made safe to echo in a one-line message: control
// bytes and bytes that are not UTF-8 are written as \xNN, so a binary file cannot garble a terminal or log.
#pragma once

#include <string>
#include <string_view>

namespace gpuscope::model {

// Valid UTF-8 and printable ASCII pass unchanged; tab, newline, carriage return, other control bytes,
// DEL and every byte of an invalid or truncated UTF-8 sequence become "\xNN".
std::string printable_text(std::string_view text);

}  // namespace gpuscope::model
