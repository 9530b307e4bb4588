// What the command files of app/ share: exit codes, option parsing with did-you-mean, and text
// tables. Boost.Program_options is included here and in app/ only.
#pragma once
#include <boost/program_options.hpp>
#include <iosfwd>
#include <string>
#include <vector>

namespace rsim::cli {

namespace po = boost::program_options;

constexpr int kOk = 0, kConfig = 1, kUsage = 2;

// Display width of UTF-8 text (code points; every character here is one column wide).
size_t display_width(const std::string& s);
// Left-aligned columns, two spaces apart, aligned by display width.
std::string text_table(const std::vector<std::vector<std::string>>& rows);
// "rsim: error: MSG", a note with the hint, the pointer to --help; returns kUsage.
int usage_error(std::ostream& err, const std::string& msg, const std::string& hint = "");
// Parses a subcommand's options; on a usage problem prints it and returns false with `code` set.
bool parse(const std::vector<std::string>& args, const po::options_description& desc, const po::positional_options_description& pos,
           po::variables_map& vm, std::ostream& err, int& code);

// `rsim estimate MODEL --platform P...`: a model's answer with no YAML written (cmd_estimate.cpp).
int cmd_estimate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace rsim::cli
