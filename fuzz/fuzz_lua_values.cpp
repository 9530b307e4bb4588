// The Lua host's value conversion: nested tables, cycles, metatables, NaN and odd bytes read raw.
#include <cstddef>
#include <cstdint>

#include "scripting/lua_value.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rsim::lua_fuzz_values(data, size);
  return 0;
}
