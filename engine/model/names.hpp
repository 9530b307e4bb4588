// Names that become paths or JSON strings (scenario, network, layer, platform and plot names,
// sweep values): checked at load so that no output path escapes its folder and every output
// is valid UTF-8.
#pragma once
#include <string>
#include <string_view>

namespace rsim {

// True when s is well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s);

// s for a message: control characters and bytes that are not UTF-8 as \xNN, at most 200 bytes.
std::string printable(std::string_view s);

// Why `s` cannot be text that ends up in a JSON string ("" when it can): invalid UTF-8, NUL or
// another control character (tab, newline and carriage return allowed when `multiline`).
std::string text_problem(std::string_view s, bool multiline = false);

// Why `s` cannot be a name that ends up in a file name ("" when it can): the text problems,
// plus empty, '/', '\\', "." or "..".
std::string path_name_problem(std::string_view s);

}  // namespace rsim
