// Lua values read from C++: raw reads only (no metamethod of a script ever runs), nesting and
// size limited (a cycle is an error, not a crash), never raising a Lua error, so they are safe in
// C++ frames that hold objects with destructors. Also the work bound of Lua's string patterns.
#pragma once
#include <cstddef>
#include <string>

#include "engine/model/config.hpp"
#include "engine/model/tensor.hpp"

struct lua_State;

namespace rsim {

constexpr int kLuaMaxDepth = 8;           // tables inside tables, in values handed to rsim
constexpr long kLuaMaxValues = 100000;    // numbers and strings in one such value

// The value at idx as a YAML-like node (numbers, booleans, strings, lists). false + why when it
// is nested too deep, too big, has a metatable or holds something else.
bool lua_value_to_node(lua_State* L, int idx, CNode& out, std::string& why);

// A shape: a plain list of 1 to 16 positive whole numbers (at most 9e15).
bool lua_value_to_shape(lua_State* L, int idx, Shape& out, std::string& why);

// An upper bound on the steps Lua's matcher takes to search subject s for pattern p from every
// start position (string.find/match/gmatch/gsub); stops counting above `limit`.
double lua_pattern_work(const char* s, size_t n, const char* p, size_t m, double limit);

// For fuzzing: builds Lua values (nested tables, cycles, metatables, odd numbers and bytes) from
// `data` and converts them with the functions above. Never crashes, never leaks.
void lua_fuzz_values(const unsigned char* data, size_t size);

}  // namespace rsim
