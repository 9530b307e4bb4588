#include "engine/model/diagnostics.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace rsim {

// Valid UTF-8 without control bytes but tab, carriage return and line feed.
static bool clean_utf8(const std::string& text) {
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return false;
      ++i;
      continue;
    }
    // a lead byte and its continuation bytes (no overlong 2-byte forms, nothing past U+10FFFF)
    const size_t more = (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : 0;
    if (more == 0 || c == 0xC0 || c == 0xC1 || c > 0xF4) return false;
    for (size_t k = 1; k <= more; ++k)
      if (i + k >= n || (static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return false;
    i += more + 1;
  }
  return true;
}

FirstLine first_text_line(const std::string& text, bool (*skip)(const std::string&), size_t from) {
  int number = 1;
  for (size_t pos = from; pos < text.size(); ++number) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    size_t b = pos;  // (within the line: a search past it would rescan a run of blank lines for each)
    while (b < end && (text[b] == ' ' || text[b] == '\t' || text[b] == '\r')) ++b;
    if (b < end) {
      size_t e = end;
      if (e > b && text[e - 1] == '\r') --e;
      std::string line = text.substr(b, e - b);
      if (!skip || !skip(line)) return {number, std::move(line)};
    }
    pos = end + 1;
  }
  return {};
}

bool quotable_text(const std::string& text) {
  if (text.find('\0') != std::string::npos) return false;
  // its first line that is not blank: one stray byte further on (a Latin-1 letter in a name) is
  // a located error of its own, shown escaped
  const FirstLine l = first_text_line(text);
  return l.number == 0 || clean_utf8(l.text);
}

std::shared_ptr<const SourceFile> SourceFile::from_text(std::string path, const std::string& text) {
  auto f = std::make_shared<SourceFile>();
  f->path = std::move(path);
  if (!quotable_text(text)) return f;  // not text: nothing of it is shown
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      f->lines.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty()) f->lines.push_back(line);
  return f;
}

static void append_location(std::string& out, const SourceLoc& loc) {
  if (!loc.file) return;
  out += loc.file->path;
  if (loc.line > 0) {
    out += ':' + std::to_string(loc.line);
    if (loc.col > 0) out += ':' + std::to_string(loc.col);
  }
  out += ": ";
}

static void append_quote(std::string& out, const SourceLoc& loc) {
  if (!loc.known() || loc.line > static_cast<int>(loc.file->lines.size())) return;
  const std::string& line = loc.file->lines[static_cast<size_t>(loc.line - 1)];
  int col = std::max(1, loc.col);
  // a line longer than a screen is shown around the column, "..." marking what is cut (a
  // 200,000-character line was printed whole, twice over with its caret line)
  constexpr size_t kWidth = 160, kBefore = 60;
  size_t begin = 0, end = line.size();
  if (line.size() > kWidth) {
    const size_t at = std::min(line.size(), static_cast<size_t>(col - 1));
    begin = at > kBefore ? at - kBefore : 0;
    while (begin > 0 && (static_cast<unsigned char>(line[begin]) & 0xC0) == 0x80) --begin;  // not inside a UTF-8 character
    end = std::min(line.size(), begin + kWidth);
    while (end < line.size() && (static_cast<unsigned char>(line[end]) & 0xC0) == 0x80) ++end;
  }
  const std::string lead = begin > 0 ? "..." : "";
  const std::string text = lead + line.substr(begin, end - begin) + (end < line.size() ? "..." : "");
  out += text + '\n';
  std::string caret;
  const int shown_col = col - static_cast<int>(begin) + static_cast<int>(lead.size());
  for (int i = 1; i < shown_col; ++i) {
    // keep tabs so the caret lines up under the same column in a terminal
    size_t idx = static_cast<size_t>(i - 1);
    caret += (idx < text.size() && text[idx] == '\t') ? '\t' : ' ';
  }
  out += caret + "^\n";
}

std::string format_diagnostic(const Diagnostic& d) {
  // Without a file (command-line problems) the tool's name stands where the file would.
  const char* tool = d.loc.file ? "" : "rsim: ";
  std::string out;
  append_location(out, d.loc);
  out += tool + std::string(d.warning ? "warning: " : "error: ") + d.message + '\n';
  append_quote(out, d.loc);
  for (const Note& n : d.notes) {
    append_location(out, n.loc);
    out += (n.loc.file ? "" : tool) + std::string("note: ") + n.message + '\n';
  }
  return out;
}

static std::string join_diags(const std::vector<Diagnostic>& diags) {
  std::string s;
  for (const auto& d : diags) s += format_diagnostic(d);
  return s;
}

ConfigError::ConfigError(std::vector<Diagnostic> diags)
    : std::runtime_error(join_diags(diags)), diags_(std::move(diags)) {}

ConfigError::ConfigError(SourceLoc loc, const std::string& message, std::vector<Note> notes)
    : ConfigError(std::vector<Diagnostic>{Diagnostic{std::move(loc), message, std::move(notes)}}) {}

void Diags::error(SourceLoc loc, std::string message, std::vector<Note> notes) {
  list_.push_back(Diagnostic{std::move(loc), std::move(message), std::move(notes)});
}

void Diags::add(const ConfigError& e) {
  for (const auto& d : e.diagnostics()) list_.push_back(d);
}

void Diags::merge(const Diags& other) { list_.insert(list_.end(), other.list_.begin(), other.list_.end()); }

void Diags::throw_if_any() const {
  if (!list_.empty()) throw ConfigError(list_);
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // A likely typo: at most a third of the word changed (and at least one edit allowed).
  size_t limit = std::max<size_t>(2, word.size() / 3);
  if (best.empty() || best_d > limit) return "";
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // a short name of a longer one first ("a100" for a100_sxm_80gb, not the typo-near v100; "h100"
  // for h100_sxm), then a typo, then a name inside a longer one ("4090" for rtx4090): by
  // case-insensitive prefix or substring, when it picks out at most three
  auto lower = [](std::string t) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  const std::string w = lower(word);
  auto matches = [&](bool prefix) {
    std::vector<std::string> hits;
    if (word.size() < 3) return hits;
    for (const auto& c : candidates) {
      const size_t at = c.size() > word.size() ? lower(c).find(w) : std::string::npos;
      if (at != std::string::npos && (!prefix || at == 0)) hits.push_back(c);
    }
    return hits;
  };
  auto say = [](const std::vector<std::string>& hits) {
    if (hits.size() == 1) return "did you mean '" + hits[0] + "'?";
    std::string out = "did you mean one of ";
    for (size_t i = 0; i < hits.size(); ++i) out += (i ? ", '" : "'") + hits[i] + "'";
    return out + "?";
  };
  if (std::find(candidates.begin(), candidates.end(), word) == candidates.end())
    if (const auto hits = matches(true); !hits.empty() && hits.size() <= 3) return say(hits);
  std::string n = nearest(word, candidates);
  if (!n.empty()) return "did you mean '" + n + "'?";
  if (const auto hits = matches(false); !hits.empty() && hits.size() <= 3) return say(hits);
  return "";
}

}  // namespace rsim
