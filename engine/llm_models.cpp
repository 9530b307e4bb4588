#include "engine/llm_models.hpp"

namespace rsim {

namespace {

const CNode* field(const CNode& c, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const CNode* v = c.find(n); v && !v->is_null()) return v;
  return nullptr;
}

}  // namespace

CNode hf_transformer_args(const CNode& config, Diags& d) {
  CNode out;
  out.kind = CNode::Kind::Map;
  out.loc = config.loc;
  if (!config.is_map()) {
    d.error(config.loc, "a Hugging Face config.json is a JSON object (hidden_size, num_hidden_layers, ...)");
    return out;
  }
  auto put = [&](const std::string& key, const CNode& v) { out.entries.push_back(CEntry{key, v.loc, v}); };
  auto put_text = [&](const std::string& key, const std::string& v) { out.entries.push_back(CEntry{key, config.loc, CNode::make_scalar(v, config.loc)}); };
  auto integer = [&](const char* arg, std::initializer_list<const char*> names, bool required) -> bool {
    const CNode* v = field(config, names);
    if (!v) {
      if (required) d.error(config.loc, "config.json has no '" + std::string(*names.begin()) + "'", {Note{{}, "a transformer needs it (the `" + std::string(arg) + "` parameter)"}});
      return false;
    }
    auto n = to_integer(*v, d, *names.begin());
    if (n && *n < 0) d.error(v->loc, std::string(*names.begin()) + " must not be negative");
    if (n) put(arg, *v);
    return n.has_value();
  };
  std::string type = field(config, {"model_type"}) ? field(config, {"model_type"})->scalar : "";
  bool gpt2 = type == "gpt2";
  integer("hidden", {"hidden_size", "n_embd"}, true);
  integer("layers", {"num_hidden_layers", "n_layer"}, true);
  integer("heads", {"num_attention_heads", "n_head"}, true);
  integer("vocab", {"vocab_size"}, true);
  integer("kv_heads", {"num_key_value_heads"}, false);
  integer("head_dim", {"head_dim"}, false);
  if (!integer("intermediate", {"intermediate_size", "n_inner"}, !gpt2) && gpt2) {
    // GPT-2's n_inner is null: 4 · n_embd (the transformer's default)
  }
  if (integer("experts", {"num_local_experts"}, false)) integer("top_k", {"num_experts_per_tok"}, true);
  // tie_word_embeddings defaults to true in Hugging Face's PretrainedConfig
  const CNode* tie = field(config, {"tie_word_embeddings"});
  if (tie) {
    if (auto b = to_bool(*tie, d, "tie_word_embeddings")) put_text("tied", *b ? "true" : "false");
  } else {
    put_text("tied", "true");
  }
  if (gpt2) {
    put_text("norm", "layernorm");
    put_text("mlp", "gelu");
    put_text("bias", "true");
    integer("positions", {"n_positions", "max_position_embeddings"}, true);
  } else {
    put_text("norm", "rmsnorm");
    const CNode* act = field(config, {"hidden_act", "hidden_activation"});
    std::string a = act ? act->scalar : "silu";
    put_text("mlp", a.rfind("gelu", 0) == 0 ? "geglu" : "swiglu");
    const CNode* ab = field(config, {"attention_bias"});
    put_text("bias", ab && ab->scalar == "true" ? "true" : "false");
  }
  return out;
}

}  // namespace rsim
