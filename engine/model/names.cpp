#include "engine/model/names.hpp"

#include <cstdio>

namespace rsim {

namespace {
// Length of the UTF-8 sequence starting at s[i], or 0 when it is not well-formed.
size_t utf8_seq(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1Fu;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0Fu;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07u;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3Fu);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}
}  // namespace

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_seq(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < 200;) {
    size_t n = utf8_seq(s, i);
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  if (out.size() >= 200) out += "...";
  return out;
}

std::string text_problem(std::string_view s, bool multiline) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_seq(s, i);
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 0) return "is not valid UTF-8 (byte " + std::to_string(i + 1) + ")";
    if (c == 0) return "contains a NUL byte";
    bool space = c == '\t' || c == '\n' || c == '\r';
    if ((c < 0x20 || c == 0x7F) && !(multiline && space)) return "contains a control character (byte " + std::to_string(i + 1) + ")";
    i += n;
  }
  return "";
}

std::string path_name_problem(std::string_view s) {
  if (s.empty()) return "is empty";
  std::string t = text_problem(s);
  if (!t.empty()) return t;
  if (s == "." || s == "..") return "is '" + std::string(s) + "', which names a folder";
  if (s.find('/') != std::string_view::npos || s.find('\\') != std::string_view::npos) return "contains a path separator";
  return "";
}

}  // namespace rsim
