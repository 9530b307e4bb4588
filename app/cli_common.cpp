#include "app/cli_common.hpp"

#include <algorithm>
#include <ostream>

#include "engine/model/diagnostics.hpp"
#include "engine/eval/evaluate.hpp"
#include <tuple>

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


int print_config_error(std::ostream& err, const ConfigError& e) {
  err << e.what();
  return kConfig;
}

std::vector<std::pair<std::string, std::string>> parse_sets(const std::vector<std::string>& sets, bool& ok, std::ostream& err) {
  std::vector<std::pair<std::string, std::string>> out;
  ok = true;
  for (const auto& s : sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      usage_error(err, "--set needs NAME=VALUE, got '" + s + "'");
      ok = false;
      continue;
    }
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

po::options_description hw_dir_option() {
  po::options_description d;
  d.add_options()("hw-dir", po::value<std::string>()->default_value(""), "platform catalog folder (default: $RSIM_HARDWARE, else share/rsim/hardware of the installation)");
  return d;
}

ConfigError in_file_order(const Diags& found) {
  std::vector<Diagnostic> list;
  for (const Diagnostic& dg : found.list()) {  // once each (the settings' errors: when loaded, and again at each evaluated point)
    const bool seen = std::any_of(list.begin(), list.end(), [&](const Diagnostic& o) {
      return o.loc.file.get() == dg.loc.file.get() && o.loc.line == dg.loc.line && o.loc.col == dg.loc.col && o.message == dg.message && o.warning == dg.warning;
    });
    if (!seen) list.push_back(dg);
  }
  std::vector<const SourceFile*> files;
  for (const auto& dg : list)
    if (std::find(files.begin(), files.end(), dg.loc.file.get()) == files.end()) files.push_back(dg.loc.file.get());
  auto rank = [&](const Diagnostic& dg) { return static_cast<size_t>(std::find(files.begin(), files.end(), dg.loc.file.get()) - files.begin()); };
  std::stable_sort(list.begin(), list.end(), [&](const Diagnostic& a, const Diagnostic& b) {
    return std::make_tuple(rank(a), a.loc.line, a.loc.col) < std::make_tuple(rank(b), b.loc.line, b.loc.col);
  });
  return ConfigError(list);
}

}  // namespace rsim::cli
