#include "engine/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace rsim {

const CNode* CNode::find(const std::string& key) const {
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

CNode parse_yaml(const std::string& text, const std::string& path) {
  auto file = SourceFile::from_text(path, text);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(loc_of(e.mark, file), e.msg);
  }
  Diags d;
  long budget = kMaxNodes;
  CNode n = convert(root, file, d, budget);
  if (n.is_null() && !n.loc.known()) n.loc = SourceLoc{file, 1, 1};
  d.throw_if_any();
  return n;
}

CNode load_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(SourceLoc{}, "cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_yaml(ss.str(), path);
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

void MapReader::finish(const std::vector<std::string>& extra) {
  if (!ok_) return;
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
    diags_.error(e.key_loc, "unknown key '" + e.key + "' in " + what_, notes);
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
  std::string t = s;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t b = 0;
  while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
  t = t.substr(b);
  if (t.empty()) return std::nullopt;
  if (t[0] == '+') t = t.substr(1);
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || p != t.data() + t.size()) {
    if (t == "inf" || t == ".inf") return INFINITY;
    return std::nullopt;
  }
  return v;
}

std::optional<long long> parse_integer(const std::string& s) {
  auto v = parse_double(s);
  if (!v || !std::isfinite(*v) || std::floor(*v) != *v || std::fabs(*v) > 9.0e15) return std::nullopt;
  return static_cast<long long>(*v);
}

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::floor(v) == v && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  return std::string(buf, p);
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
    d.error(n.loc, what + " must be a whole number, not '" + n.scalar + "'");
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
