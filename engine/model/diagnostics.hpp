// Diagnostics: source locations, GNU-style error messages, did-you-mean.
// The library never prints or exits; it throws ConfigError and app/ reports it.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rsim {

// The text of one input file, kept so that messages can quote the offending line.
// A file's lines, quoted under located errors. A text that is not quotable_text (NUL separators,
// binary data: /proc/self/environ passes as a regular file) keeps no lines, so that no error shows
// its bytes.
struct SourceFile {
  std::string path;
  std::vector<std::string> lines;
  static std::shared_ptr<const SourceFile> from_text(std::string path, const std::string& text);
};

// The first line of `text` from byte `from` on that is not blank and that `skip` (given the line
// from its first non-blank character) does not pass over: that text (without a carriage return)
// and its 1-based number counted from `from`; number 0 when there is none.
struct FirstLine {
  int number = 0;
  std::string text;
};
FirstLine first_text_line(const std::string& text, bool (*skip)(const std::string&) = nullptr, size_t from = 0);

// Whether a file's text may be quoted in a message: no NUL byte, and its first line that is not
// blank valid UTF-8 with no control byte but tab and carriage return.
bool quotable_text(const std::string& text);

// 1-based line and column; line == 0 means "no location".
struct SourceLoc {
  std::shared_ptr<const SourceFile> file;
  int line = 0;
  int col = 0;
  bool known() const { return file && line > 0; }
  SourceLoc shifted(int columns) const {
    SourceLoc l = *this;
    l.col += columns;
    return l;
  }
};

struct Note {
  SourceLoc loc;  // may be unknown
  std::string message;
};

struct Diagnostic {
  SourceLoc loc;
  std::string message;
  std::vector<Note> notes;
  bool warning = false;  // "warning:" instead of "error:" (the run goes on)
};

// "file:line:col: error: message", the source line, a caret under the column, then notes.
std::string format_diagnostic(const Diagnostic& d);

// One or more configuration errors. what() is the formatted text of all of them.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<Diagnostic> diags);
  ConfigError(SourceLoc loc, const std::string& message, std::vector<Note> notes = {});
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

// Collects the errors of one phase so that a user sees all of them at once.
class Diags {
 public:
  void error(SourceLoc loc, std::string message, std::vector<Note> notes = {});
  void add(const ConfigError& e);
  void merge(const Diags& other);
  const std::vector<Diagnostic>& list() const { return list_; }
  bool empty() const { return list_.empty(); }
  size_t size() const { return list_.size(); }
  // Throws ConfigError if any error was collected.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> list_;
};

// Levenshtein distance between two strings.
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `word` if it is close enough to be a likely typo, else "".
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);
// "; did you mean 'x'?" or "" — convenience for messages.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace rsim
