// A text file that may be gzip'd: zlib reads it (the only file of rsim that includes zlib).
#include "engine/model/text_file.hpp"

#include <zlib.h>

#include "engine/model/config.hpp"

namespace rsim {

std::optional<std::string> read_text_file(const std::string& path, size_t max_bytes, const std::string& what, std::string& why) {
  if (!(path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0)) return read_regular_file(path, max_bytes, what, why);
  // (the compressed file itself must be a regular file too: read_regular_file refuses the rest)
  if (!read_regular_file(path, max_bytes, what, why)) return std::nullopt;
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) {
    why = "it cannot be opened";
    return std::nullopt;
  }
  std::string text;
  char buf[1 << 16];
  int got;
  while ((got = gzread(gz, buf, sizeof buf)) > 0) {
    text.append(buf, static_cast<size_t>(got));
    if (text.size() > max_bytes) {
      gzclose(gz);
      why = "it holds more than " + std::to_string(max_bytes) + " bytes uncompressed; a " + what + " may have at most that";
      return std::nullopt;
    }
  }
  const bool bad = got < 0;
  gzclose(gz);
  if (bad) {
    why = "it is not a readable gzip file";
    return std::nullopt;
  }
  return text;
}

}  // namespace rsim
