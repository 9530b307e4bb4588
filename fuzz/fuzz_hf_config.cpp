// The Hugging Face config reader: any bytes named config.json give a model's arguments or a
// ConfigError (not JSON, not an object, a count past its cap, heads that do not divide hidden).
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/model/config.hpp"
#include "engine/ops/llm_models.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    rsim::CNode json = rsim::parse_yaml(text, "config.json");
    rsim::Diags d;
    (void)rsim::hf_transformer_args(json, d);
  } catch (const rsim::ConfigError&) {
  }
  return 0;
}
