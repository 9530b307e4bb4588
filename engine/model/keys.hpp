// The scenario and platform formats, key by key: one table that the loaders read (which keys a
// map accepts, which it requires) and that `rsim schema` turns into a JSON Schema, so the two
// cannot drift. A loader opens a map with `MapReader(node, keys::map("settings"), what, d)`;
// reading a key the table lacks is a programming error (std::logic_error), and the keys the
// table lists are exactly the keys the map accepts.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/units.hpp"

namespace rsim::keys {

enum class T {
  String,     // free text
  Name,       // an identifier: letters, digits, _ (not starting with a digit)
  Number,     // a number (or an expression)
  Integer,    // a whole number (or an expression)
  Bool,       // true / false (or an expression)
  Fraction,   // a number in (0, 1]
  Quantity,   // a number with a unit of `dim`, e.g. '760.32 GB/s'
  Enum,       // one of `choices` (or of the named list `choices_from`)
  Map,        // a map described by the table `ref`
  List,       // a list of `ref` (a table, or a named definition of the schema)
  OneOrList,  // one `item` or a list of them
  Def,        // a named definition of the schema (`ref`): unions such as "catalog name or map"
};

struct Type {
  T t = T::String;
  Dim dim = Dim::Bytes;               // Quantity
  std::vector<std::string> choices;   // Enum
  std::string choices_from;           // Enum: a list known at run time ("dtype", "pass", "plot_column")
  std::string ref;                    // Map, List, Def: a table name or a definition name
  T item = T::String;                 // OneOrList: String or Enum (with choices / choices_from)
  double min = 0, max = 0;            // Number, Integer: bounds when min < max
  bool no_expr = false;               // a literal only (no ${…})
};

struct Key {
  std::string name;
  Type type;
  bool required = false;
  std::string doc;
};

struct MapDef {
  std::string name;   // "settings", "platform", "plot.trend", ...
  std::string title;
  std::vector<Key> keys;
  const Key* find(std::string_view key) const;
  std::vector<std::string> names() const;
};

// One table; throws std::logic_error for a name it lacks.
const MapDef& map(std::string_view name);
// Every table, in the order the schema lists them.
const std::vector<MapDef>& all();
// The plot kinds, in the order the docs list them (each has a table "plot.KIND")
const std::vector<std::string>& plot_kinds();

}  // namespace rsim::keys
