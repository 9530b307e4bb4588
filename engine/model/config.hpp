// The configuration tree: YAML read once into plain values that remember where they came from.
// Everything above this layer reads CNode, never yaml-cpp.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/diagnostics.hpp"
#include "engine/model/keys.hpp"

namespace rsim {

struct CEntry;

struct CNode {
  enum class Kind { Null, Scalar, Seq, Map };
  Kind kind = Kind::Null;
  std::string scalar;          // Scalar only
  std::vector<CNode> items;    // Seq only
  std::vector<CEntry> entries; // Map only, in file order
  SourceLoc loc;

  bool is_null() const { return kind == Kind::Null; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_seq() const { return kind == Kind::Seq; }
  bool is_map() const { return kind == Kind::Map; }
  const CNode* find(std::string_view key) const;  // Map only; nullptr if absent
  std::vector<std::string> keys() const;
  const char* kind_name() const;

  static CNode make_scalar(std::string s, SourceLoc loc = {});
};

struct CEntry {
  std::string key;
  SourceLoc key_loc;
  CNode value;
};

// Two trees with the same kinds, keys, scalars and places (a value read from one stands for the
// other: its messages point to the same lines).
bool same_tree(const CNode& a, const CNode& b);

// Parse YAML text; syntax errors become ConfigError with the file position.
CNode parse_yaml(const std::string& text, const std::string& path);
// Read and parse a file (error if it cannot be read).
CNode load_yaml_file(const std::string& path);

// The bytes of a regular file of at most `max_bytes`, opened without blocking: a directory, a
// FIFO, a device or a socket is refused (never waited on, never read), and so is a bigger file.
// nullopt + why ("it is a FIFO, not a regular file", "it has N bytes; a WHAT may have at most
// ...", or the system's reason) on failure.
std::optional<std::string> read_regular_file(const std::string& path, size_t max_bytes, const std::string& what, std::string& why);
constexpr size_t kMaxScenarioBytes = 64u << 20;
constexpr size_t kMaxPluginBytes = 1u << 20;

// Reads a map's keys one by one, then reports every key nobody asked for, with a suggestion.
class MapReader {
 public:
  // `what` names the map in messages ("platform", "layer 'conv1'").
  MapReader(const CNode& node, std::string what, Diags& diags);
  // A map described by a key table (engine/model/keys.hpp): it accepts exactly the table's keys, and
  // reading a key the table lacks throws std::logic_error (the table and the loader disagree).
  MapReader(const CNode& node, const keys::MapDef& def, std::string what, Diags& diags);
  // Switch to another table (a plot's keys depend on its kind).
  void use(const keys::MapDef& def) { def_ = &def; }
  bool ok() const { return ok_; }
  const CNode* get(const std::string& key);            // optional key
  const CNode* require(const std::string& key);        // error if missing
  // Mark keys as known without reading them (they are handled elsewhere).
  void allow(const std::vector<std::string>& keys);
  // Report unknown keys; `extra` are further valid names to suggest from; into `into` when given
  // (else the reader's own diagnostics).
  void finish(const std::vector<std::string>& extra = {}, Diags* into = nullptr);
  const CNode& node() const { return node_; }

 private:
  const CNode& node_;
  std::string what_;
  Diags& diags_;
  bool ok_ = true;
  std::vector<std::string> known_;
  const keys::MapDef* def_ = nullptr;
};

// A value that may be written as one item or as a list of them: the items, in order.
std::vector<const CNode*> as_list(const CNode& n);

// Scalar conversions with located errors (the value's location).
std::optional<double> to_number(const CNode& n, Diags& d, const std::string& what);
std::optional<long long> to_integer(const CNode& n, Diags& d, const std::string& what);
std::optional<bool> to_bool(const CNode& n, Diags& d, const std::string& what);
std::optional<std::string> to_string(const CNode& n, Diags& d, const std::string& what);

// Plain parsing helpers (no diagnostics): full-string number parse.
std::optional<double> parse_double(const std::string& s);
std::optional<long long> parse_integer(const std::string& s);  // accepts "28.0"
// Shortest text that reads back as the same double; integers without ".0".
std::string format_number(double v);
// format_number's text of a finite number, written at p (at most kNumberChars bytes); returns its end
constexpr size_t kNumberChars = 24;
char* write_number(char* p, double v);
// An integer's decimal text (std::to_chars's), written at p (at most 20 bytes); returns its end
char* write_integer(char* p, long long v);

}  // namespace rsim
