// A text file that may be gzip'd (a trace, a measured table): the one place rsim reads gzip.
#pragma once
#include <optional>
#include <string>

namespace rsim {

// The bytes of `path`, decompressed when its name ends in .gz, at most `max_bytes` of them (after
// decompression); nullopt + why ("not a readable gzip file", "larger than …", the system's reason).
// A plain file is read as read_regular_file does (a FIFO or a device is refused, never waited on).
std::optional<std::string> read_text_file(const std::string& path, size_t max_bytes, const std::string& what, std::string& why);

}  // namespace rsim
