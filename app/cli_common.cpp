#include "app/cli_common.hpp"

#include <algorithm>
#include <ostream>

#include "engine/diagnostics.hpp"

namespace rsim::cli {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string text_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> w;
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], display_width(r[i]));
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += (i ? "  " : "") + r[i] + (i + 1 < r.size() ? std::string(w[i] - display_width(r[i]), ' ') : "");
    out += line + "\n";
  }
  return out;
}

int usage_error(std::ostream& err, const std::string& msg, const std::string& hint) {
  err << "rsim: error: " << msg << "\n";
  if (!hint.empty()) err << "rsim: note: " << hint << "\n";
  err << "rsim: note: see `rsim --help`\n";
  return kUsage;
}

bool parse(const std::vector<std::string>& args, const po::options_description& desc, const po::positional_options_description& pos,
           po::variables_map& vm, std::ostream& err, int& code) {
  try {
    po::store(po::command_line_parser(args).options(desc).positional(pos).run(), vm);
    po::notify(vm);
    return true;
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;
    for (const auto& o : desc.options()) names.push_back("--" + o->long_name());
    std::string bad = e.get_option_name();
    std::string hint = did_you_mean(bad, names);
    code = usage_error(err, "unknown option '" + bad + "'", hint);
  } catch (const po::error& e) {
    code = usage_error(err, e.what());
  }
  return false;
}

}  // namespace rsim::cli
