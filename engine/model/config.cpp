#include "engine/model/config.hpp"
#include "engine/model/names.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rsim {

const CNode* CNode::find(std::string_view key) const {
  for (const auto& e : entries)
    if (e.key == key) return &e.value;
  return nullptr;
}

std::vector<std::string> CNode::keys() const {
  std::vector<std::string> k;
  for (const auto& e : entries) k.push_back(e.key);
  return k;
}

const char* CNode::kind_name() const {
  switch (kind) {
    case Kind::Null: return "nothing";
    case Kind::Scalar: return "a scalar";
    case Kind::Seq: return "a list";
    case Kind::Map: return "a map";
  }
  return "?";
}

bool same_tree(const CNode& a, const CNode& b) {
  if (a.kind != b.kind || a.loc.file != b.loc.file || a.loc.line != b.loc.line || a.loc.col != b.loc.col) return false;
  switch (a.kind) {
    case CNode::Kind::Scalar: return a.scalar == b.scalar;
    case CNode::Kind::Seq:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!same_tree(a.items[i], b.items[i])) return false;
      return true;
    case CNode::Kind::Map:
      if (a.entries.size() != b.entries.size()) return false;
      for (size_t i = 0; i < a.entries.size(); ++i)
        if (a.entries[i].key != b.entries[i].key || !same_tree(a.entries[i].value, b.entries[i].value)) return false;
      return true;
    case CNode::Kind::Null: break;
  }
  return true;
}

CNode CNode::make_scalar(std::string s, SourceLoc loc) {
  CNode n;
  n.kind = Kind::Scalar;
  n.scalar = std::move(s);
  n.loc = std::move(loc);
  return n;
}

namespace {

SourceLoc loc_of(const YAML::Mark& m, const std::shared_ptr<const SourceFile>& f) {
  // yaml-cpp marks are 0-based; ours are 1-based.
  if (m.line < 0) return SourceLoc{f, 0, 0};
  return SourceLoc{f, m.line + 1, m.column + 1};
}

// Aliases share nodes in yaml-cpp but are copied here: a budget stops an alias bomb.
constexpr long kMaxNodes = 5'000'000;

CNode convert(const YAML::Node& y, const std::shared_ptr<const SourceFile>& f, Diags& d, long& budget) {
  if (--budget < 0) throw ConfigError(loc_of(y.Mark(), f), "the document expands to more than 5 million values (aliases of aliases?)");
  CNode n;
  n.loc = loc_of(y.Mark(), f);
  switch (y.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      n.kind = CNode::Kind::Null;
      break;
    case YAML::NodeType::Scalar:
      n.kind = CNode::Kind::Scalar;
      n.scalar = y.Scalar();
      if (std::string why = text_problem(n.scalar, true); !why.empty())
        d.error(n.loc, "this text " + why + (why.find("UTF-8") != std::string::npos ? ": YAML files are UTF-8 text" : ""));
      break;
    case YAML::NodeType::Sequence:
      n.kind = CNode::Kind::Seq;
      for (const auto& item : y) n.items.push_back(convert(item, f, d, budget));
      break;
    case YAML::NodeType::Map:
      n.kind = CNode::Kind::Map;
      for (const auto& kv : y) {
        CEntry e;
        e.key_loc = loc_of(kv.first.Mark(), f);
        if (!kv.first.IsScalar()) {
          d.error(e.key_loc, "map keys must be plain names");
          continue;
        }
        e.key = kv.first.Scalar();
        if (std::string why = text_problem(e.key); !why.empty()) {
          d.error(e.key_loc, "this key " + why + (why.find("UTF-8") != std::string::npos ? ": YAML files are UTF-8 text" : ""));
          continue;
        }
        for (const auto& prev : n.entries)
          if (prev.key == e.key) d.error(e.key_loc, "duplicate key '" + e.key + "'", {Note{prev.key_loc, "first given here"}});
        e.value = convert(kv.second, f, d, budget);
        n.entries.push_back(std::move(e));
      }
      break;
  }
  return n;
}

}  // namespace

// Whether a file's first line that is not blank, a comment or a directive starts what a YAML file
// of rsim holds — a key (`name: x`, `"a b": 1`), a list item or a flow collection — or for a JSON
// file (by its name) `{` or `[`. Only then are its lines quoted under errors: a file of anything
// else (an environment dump, a key) is not shown, whatever it turns out to parse as.
static bool yaml_head(const std::string& text, bool json) {
  const size_t bom = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a byte order mark
  auto not_content = [](const std::string& l) { return l[0] == '#' || l[0] == '%' || l.rfind("---", 0) == 0; };  // comments, directives
  const FirstLine first = first_text_line(text, json ? nullptr : +not_content, bom);
  if (first.number == 0) return true;  // empty: nothing to show
  const std::string& line = first.text;
  if (json) return line[0] == '{' || line[0] == '[';
  if (line[0] == '{' || line[0] == '[' || line == "-" || line.rfind("- ", 0) == 0) return true;
  size_t colon = 0;
  if (line[0] == '"' || line[0] == '\'') {  // a quoted key
    const size_t close = line.find(line[0], 1);
    if (close == std::string::npos) return false;
    colon = close + 1;
    while (colon < line.size() && (line[colon] == ' ' || line[colon] == '\t')) ++colon;
    if (colon >= line.size() || line[colon] != ':') return false;
  } else {
    colon = line.find(':');
    if (colon == std::string::npos || colon == 0) return false;
    if (line.find_first_of("#,[]{}&*!|>%@`", 0) < colon) return false;  // not a plain key
  }
  return colon + 1 == line.size() || line[colon + 1] == ' ' || line[colon + 1] == '\t';
}

CNode parse_yaml(const std::string& text, const std::string& path) {
  const bool json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  const char* kind = json ? "JSON" : "YAML";
  // a file of anything else is refused before it is parsed: what it parsed as could be quoted
  if (!quotable_text(text))
    throw ConfigError(SourceLoc{SourceFile::from_text(path, ""), 0, 0},
                      std::string("not a ") + kind + " file: it is not UTF-8 text (a NUL byte, or binary data on its first line; its content is not shown)");
  if (!yaml_head(text, json))
    throw ConfigError(SourceLoc{SourceFile::from_text(path, ""), 0, 0},
                      std::string("not a ") + kind + " file: its first line " +
                          (json ? "does not open an object or a list" : "is not a key, a list item or a flow collection") + " (its content is not shown)");
  auto file = SourceFile::from_text(path, text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's depth guard says only "bad file" (a file loaded from text cannot be missing)
    if (e.msg == "bad file")
      throw ConfigError(loc_of(e.mark, file), "the file nests too deeply to read (lists or maps nested about a thousand levels deep here)",
                        {Note{{}, "no scenario, platform or config needs that depth: flatten it"}});
    // a tab in a line's indentation (YAML indents with spaces only) is the likely cause when it
    // stands at or before the failing line: named at its own line and column
    if (e.mark.line >= 0) {
      size_t at = 0, tab_line = 0, tab_col = 0;
      bool found = false;
      for (size_t ln = 0; at <= text.size() && ln <= static_cast<size_t>(e.mark.line); ++ln) {
        size_t end = text.find('\n', at);
        if (end == std::string::npos) end = text.size();
        for (size_t i = at; i < end && (text[i] == ' ' || text[i] == '\t'); ++i)
          if (text[i] == '\t') {
            found = true, tab_line = ln, tab_col = i - at;
            break;
          }
        at = end + 1;
      }
      if (found)
        throw ConfigError(SourceLoc{file, static_cast<int>(tab_line) + 1, static_cast<int>(tab_col) + 1}, "a tab in the indentation: YAML indents with spaces only",
                          {Note{{}, "replace the tab with spaces (the parser said: " + e.msg + ")"}});
    }
    throw ConfigError(loc_of(e.mark, file), e.msg);
  }
  Diags d;
  long budget = kMaxNodes;
  CNode n = convert(root, file, d, budget);
  if (n.is_null() && !n.loc.known()) n.loc = SourceLoc{file, 1, 1};
  d.throw_if_any();
  return n;
}

std::optional<std::string> read_regular_file(const std::string& path, size_t max_bytes, const std::string& what, std::string& why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    why = std::strerror(errno);
    return std::nullopt;
  }
  if (S_ISDIR(st.st_mode)) why = "it is a directory, not a file";
  else if (S_ISFIFO(st.st_mode)) why = "it is a FIFO, not a regular file";
  else if (S_ISCHR(st.st_mode)) why = "it is a character device, not a regular file";
  else if (S_ISBLK(st.st_mode)) why = "it is a block device, not a regular file";
  else if (S_ISSOCK(st.st_mode)) why = "it is a socket, not a regular file";
  else if (!S_ISREG(st.st_mode)) why = "it is not a regular file";
  if (!why.empty()) return std::nullopt;
  auto too_big = [&](unsigned long long n) {
    const bool vowel = !what.empty() && std::string("AEIOUaeiou").find(what[0]) != std::string::npos;
    why = "it has " + std::to_string(n) + " bytes; " + (vowel ? "an " : "a ") + what + " may have at most " + format_number(static_cast<double>(max_bytes) / 1048576.0) +
          " MiB (" + std::to_string(max_bytes) + " bytes)";
    return std::nullopt;
  };
  if (static_cast<unsigned long long>(st.st_size) > max_bytes) return too_big(static_cast<unsigned long long>(st.st_size));
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t got = 0;
  while (true) {  // the file may change while it is read: never read past max_bytes
    if (got == out.size()) {
      if (out.size() > max_bytes) return too_big(out.size());
      out.resize(std::min(out.size() + 65536, max_bytes + 1));
      if (got == out.size()) return too_big(got);
    }
    ssize_t r = ::read(fd, out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      why = std::strerror(errno);
      return std::nullopt;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  if (got > max_bytes) return too_big(got);
  out.resize(got);
  return out;
}

CNode load_yaml_file(const std::string& path) {
  std::string why;
  auto text = read_regular_file(path, kMaxScenarioBytes, "YAML file", why);
  if (!text) throw ConfigError(SourceLoc{}, "cannot read '" + path + "': " + why);
  return parse_yaml(*text, path);
}

MapReader::MapReader(const CNode& node, std::string what, Diags& diags)
    : node_(node), what_(std::move(what)), diags_(diags) {
  if (!node.is_map()) {
    diags_.error(node.loc, what_ + " must be a map of 'key: value' entries, not " + node.kind_name());
    ok_ = false;
  }
}

MapReader::MapReader(const CNode& node, const keys::MapDef& def, std::string what, Diags& diags)
    : MapReader(node, std::move(what), diags) {
  def_ = &def;
}

const CNode* MapReader::get(const std::string& key) {
  if (def_ && !def_->find(key)) throw std::logic_error("rsim: key '" + key + "' is read from " + what_ + " but missing from key table '" + def_->name + "'");
  known_.push_back(key);
  if (!ok_) return nullptr;
  return node_.find(key);
}

const CNode* MapReader::require(const std::string& key) {
  const CNode* v = get(key);
  if (!v && ok_) diags_.error(node_.loc, what_ + " needs '" + key + "'");
  return v;
}

void MapReader::allow(const std::vector<std::string>& keys) {
  known_.insert(known_.end(), keys.begin(), keys.end());
}

void MapReader::finish(const std::vector<std::string>& extra, Diags* into) {
  if (!ok_) return;
  Diags& out = into ? *into : diags_;
  std::vector<std::string> all = def_ ? def_->names() : known_;
  all.insert(all.end(), extra.begin(), extra.end());
  for (const auto& e : node_.entries) {
    if (std::find(all.begin(), all.end(), e.key) != all.end()) continue;
    std::vector<Note> notes;
    std::string s = did_you_mean(e.key, all);
    if (!s.empty()) notes.push_back(Note{{}, s});
    else {
      std::vector<std::string> sorted = all;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      std::string list;
      for (const auto& k : sorted) list += (list.empty() ? "" : ", ") + k;
      notes.push_back(Note{{}, "valid keys: " + list});
    }
    out.error(e.key_loc, "unknown key '" + e.key + "' in " + what_, notes);
  }
}

std::vector<const CNode*> as_list(const CNode& n) {
  std::vector<const CNode*> items;
  if (n.is_seq())
    for (const auto& i : n.items) items.push_back(&i);
  else
    items.push_back(&n);
  return items;
}

std::optional<double> parse_double(const std::string& s) {
  std::string_view t = s;  // a view: called per sweep point, it allocates nothing
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.front()))) t.remove_prefix(1);
  if (t.empty()) return std::nullopt;
  if (t[0] == '+') t.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) {
    if (t == "inf" || t == ".inf") return INFINITY;
    return std::nullopt;
  }
  return v;
}

std::optional<long long> parse_integer(const std::string& s) {
  // plain decimal digits (the common case, e.g. a swept channel count): read as an integer
  if (!s.empty() && s.size() <= 15 && std::isdigit(static_cast<unsigned char>(s.front()))) {
    long long i = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec == std::errc() && p == s.data() + s.size()) return i;  // < 10^15: within the 9e15 limit below
  }
  auto v = parse_double(s);
  if (!v || !std::isfinite(*v) || std::floor(*v) != *v || std::fabs(*v) > 9.0e15) return std::nullopt;
  return static_cast<long long>(*v);
}

namespace {

// "00" "01" … "99": an integer's digits are written two at a time
constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[static_cast<size_t>(2 * i)] = static_cast<char>('0' + i / 10);
    t[static_cast<size_t>(2 * i + 1)] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

constexpr std::array<uint64_t, 20> kPowersOf10 = [] {
  std::array<uint64_t, 20> t{};
  t[0] = 1;
  for (size_t i = 1; i < t.size(); ++i) t[i] = t[i - 1] * 10;
  return t;
}();

// the digits of u < 10^8 (32-bit arithmetic)
char* write_small(char* p, uint32_t u) {
  // the digit count: floor(log10(2^b)) + 1 or one more, b the highest set bit (1233 / 4096 ≈ log10 2)
  const unsigned b = 31u - static_cast<unsigned>(__builtin_clz(u | 1));
  size_t n = (b * 1233u >> 12) + 1;
  if (u >= kPowersOf10[n]) ++n;
  char* const end = p + n;
  char* q = end;
  while (u >= 100) {
    const uint32_t r = u % 100;
    u /= 100;
    q -= 2;
    std::memcpy(q, &kDigitPairs[2 * r], 2);
  }
  if (u >= 10) std::memcpy(q - 2, &kDigitPairs[2 * u], 2);
  else q[-1] = static_cast<char>('0' + u);
  return end;
}

// exactly 8 digits of u < 10^8, leading zeros included
void write_8(char* p, uint32_t u) {
  const uint32_t hi = u / 10000, lo = u % 10000;
  std::memcpy(p, &kDigitPairs[2 * (hi / 100)], 2);
  std::memcpy(p + 2, &kDigitPairs[2 * (hi % 100)], 2);
  std::memcpy(p + 4, &kDigitPairs[2 * (lo / 100)], 2);
  std::memcpy(p + 6, &kDigitPairs[2 * (lo % 100)], 2);
}

// the digits of u < 10^16: the part above the last 8 digits, then those 8
char* write_digits(char* p, uint64_t u) {
  if (u < 100000000) return write_small(p, static_cast<uint32_t>(u));
  p = write_small(p, static_cast<uint32_t>(u / 100000000));
  write_8(p, static_cast<uint32_t>(u % 100000000));
  return p + 8;
}

}  // namespace

char* write_number(char* p, double v) {
  if (std::fabs(v) < 1e15) {  // an integer's digits (-0 too, as "0")
    const long long i = static_cast<long long>(v);
    if (static_cast<double>(i) == v) {
      if (i < 0) *p++ = '-';
      return write_digits(p, i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i));  // (below 10^15)
    }
  }
  return std::to_chars(p, p + kNumberChars, v).ptr;
}

char* write_integer(char* p, long long v) {
  const uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (u >= 10000000000000000ull) return std::to_chars(p, p + 20, v).ptr;  // (write_digits: below 10^16)
  if (v < 0) *p++ = '-';
  return write_digits(p, u);
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[kNumberChars];
  return std::string(buf, write_number(buf, v));
}

static bool expect_scalar(const CNode& n, Diags& d, const std::string& what) {
  if (n.is_scalar()) return true;
  d.error(n.loc, what + " must be a single value, not " + n.kind_name());
  return false;
}

std::optional<double> to_number(const CNode& n, Diags& d, const std::string& what) {
  if (!expect_scalar(n, d, what)) return std::nullopt;
  auto v = parse_double(n.scalar);
  if (!v || std::isnan(*v)) {
    d.error(n.loc, what + " must be a number, not '" + n.scalar + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<long long> to_integer(const CNode& n, Diags& d, const std::string& what) {
  if (!expect_scalar(n, d, what)) return std::nullopt;
  auto v = parse_integer(n.scalar);
  if (!v) {
    // a whole number past what rsim counts with (9e15) is said so, not called "not a whole number"
    if (auto x = parse_double(n.scalar); x && std::isfinite(*x) && std::floor(*x) == *x && std::fabs(*x) > 9.0e15)
      d.error(n.loc, what + " = " + n.scalar + " is too large: rsim counts up to 9e15");
    else d.error(n.loc, what + " must be a whole number, not '" + n.scalar + "'");
    return std::nullopt;
  }
  return v;
}

std::optional<bool> to_bool(const CNode& n, Diags& d, const std::string& what) {
  if (!expect_scalar(n, d, what)) return std::nullopt;
  const std::string& s = n.scalar;
  if (s == "true" || s == "True" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "False" || s == "no" || s == "off") return false;
  d.error(n.loc, what + " must be true or false, not '" + s + "'");
  return std::nullopt;
}

std::optional<std::string> to_string(const CNode& n, Diags& d, const std::string& what) {
  if (!expect_scalar(n, d, what)) return std::nullopt;
  return n.scalar;
}

}  // namespace rsim
