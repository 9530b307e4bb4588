#include "engine/ops/llm_models.hpp"

#include <algorithm>
#include <vector>

namespace rsim {

namespace {

const CNode* field(const CNode& c, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (const CNode* v = c.find(n); v && !v->is_null()) return v;
  return nullptr;
}

// A Hugging Face config read into a transformer's arguments: each one put with its node (or a text
// of rsim's own), an integer field checked against the largest published models, and a variant
// of a supported type refused at its key
struct HfReader {
  const CNode& config;
  Diags& d;
  CNode& out;
  std::string type;
  void put(const std::string& key, const CNode& v) { out.entries.push_back(CEntry{key, v.loc, v}); }
  void put_text(const std::string& key, const std::string& v) { out.entries.push_back(CEntry{key, config.loc, CNode::make_scalar(v, config.loc)}); }
  // sizes beyond any published model are refused here, before a network of them is built (an HF
  // config with 10^9 layers took 11–25 s and 1.4 GB to be refused)
  bool integer(const char* arg, std::initializer_list<const char*> names, bool required) {
    static const std::pair<const char*, long long> kMax[] = {{"layers", 10000},    {"heads", 100000},   {"kv_heads", 100000}, {"hidden", 10000000},
                                                             {"vocab", 100000000}, {"experts", 100000}, {"window", 1LL << 40}, {"rope_positions", 1LL << 40},
                                                             {"kv_lora", 10000000}, {"q_lora", 10000000}, {"qk_nope_dim", 100000}, {"qk_rope_dim", 100000},
                                                             {"v_head_dim", 100000}, {"embed_dim", 10000000}};
    const CNode* v = field(config, names);
    if (!v) {
      if (required) d.error(config.loc, "config.json has no '" + std::string(*names.begin()) + "'", {Note{{}, "a transformer needs it (the `" + std::string(arg) + "` parameter)"}});
      return false;
    }
    auto n = to_integer(*v, d, *names.begin());
    if (n && *n < 0) d.error(v->loc, std::string(*names.begin()) + " must not be negative");
    for (const auto& [a, most] : kMax)
      if (n && std::string(arg) == a && *n > most) {
        d.error(v->loc, std::string(*names.begin()) + " = " + std::to_string(*n) + " is beyond any model (at most " + std::to_string(most) + ")");
        return false;
      }
    if (n) put(arg, *v);
    return n.has_value();
  }
  // hidden, layers, heads and vocab under Hugging Face's usual names (all required)
  void core_sizes() {
    integer("hidden", {"hidden_size"}, true);
    integer("layers", {"num_hidden_layers"}, true);
    integer("heads", {"num_attention_heads"}, true);
    integer("vocab", {"vocab_size"}, true);
  }
  bool refuse_if(const char* key, const std::string& bad, const std::string& why) {
    const CNode* v = field(config, {key});
    if (v && v->is_scalar() && v->scalar == bad) {
      d.error(v->loc, type + " with " + key + ": " + bad + " is not supported: " + why);
      return true;
    }
    return false;
  }
};

// The architecture: model_type, else the first of `architectures` (LlamaForCausalLM → llama);
// type_node: where it was read ("" and nullptr: neither)
std::string hf_model_type(const CNode& config, const CNode*& type_node) {
  type_node = field(config, {"model_type"});
  std::string type = type_node && type_node->is_scalar() ? type_node->scalar : "";
  if (type.empty())
    if (const CNode* arch = field(config, {"architectures"}); arch && arch->is_seq() && !arch->items.empty() && arch->items[0].is_scalar()) {
      type_node = &arch->items[0];
      static const std::pair<const char*, const char*> by_class[] = {
          {"GPT2LMHeadModel", "gpt2"},     {"LlamaForCausalLM", "llama"}, {"MistralForCausalLM", "mistral"}, {"MixtralForCausalLM", "mixtral"},
          {"Qwen2ForCausalLM", "qwen2"},   {"GemmaForCausalLM", "gemma"}, {"Phi3ForCausalLM", "phi3"}, {"Qwen2MoeForCausalLM", "qwen2_moe"},
          {"FalconForCausalLM", "falcon"}, {"OPTForCausalLM", "opt"}, {"DeepseekV2ForCausalLM", "deepseek_v2"}, {"DeepseekV3ForCausalLM", "deepseek_v3"},
          {"Gemma2ForCausalLM", "gemma2"}, {"Gemma3ForCausalLM", "gemma3_text"}, {"Qwen3ForCausalLM", "qwen3"}, {"Qwen3MoeForCausalLM", "qwen3_moe"},
          {"GPTNeoXForCausalLM", "gpt_neox"}, {"PhiForCausalLM", "phi"}};
      type = "(" + arch->items[0].scalar + ")";
      for (const auto& [cls, t] : by_class)
        if (arch->items[0].scalar == cls) type = t;
    }
  return type;
}

// Falcon: one layer norm (with bias) per block feeding attention and the MLP side by side;
// multi_query: one K/V head; an ungated GELU MLP of ffn_hidden_size (default 4 × hidden);
// `bias` on every projection; rotary positions; the LM head tied by default.
// new_decoder_architecture (Falcon-40B/180B): num_kv_heads grouped K/V heads (multi_query
// ignored), and two layer norms, one for attention and one for the MLP, unless
// num_ln_in_parallel_attn is 1 (Hugging Face's FalconDecoderLayer). False after an error.
bool falcon_args(HfReader& r) {
  const CNode& config = r.config;
  Diags& d = r.d;
  r.core_sizes();
  const CNode* nda = field(config, {"new_decoder_architecture"});
  if (nda && nda->scalar == "true") {
    r.integer("kv_heads", {"num_kv_heads", "num_attention_heads"}, false);
    const CNode* nln = field(config, {"num_ln_in_parallel_attn"});
    const bool one = nln && nln->is_scalar() && nln->scalar == "1";
    if (nln && nln->is_scalar() && !one && nln->scalar != "2" && nln->scalar != "null") {
      d.error(nln->loc, "num_ln_in_parallel_attn must be 1 or 2 (got " + nln->scalar + ")");
      return false;
    }
    r.put_text("parallel_norms", one ? "1" : "2");
  } else if (const CNode* mq = field(config, {"multi_query"}); !mq || mq->scalar == "true") {
    r.put_text("kv_heads", "1");
  } else {
    r.integer("kv_heads", {"num_kv_heads", "num_attention_heads"}, false);
  }
  r.integer("intermediate", {"ffn_hidden_size"}, false);
  const CNode* b = field(config, {"bias"});
  r.put_text("bias", b && b->scalar == "true" ? "true" : "false");
  r.put_text("norm", "layernorm");
  r.put_text("mlp", "gelu");
  r.put_text("parallel", "true");
  const CNode* tie = field(config, {"tie_word_embeddings"});
  r.put_text("tied", tie && tie->scalar == "false" ? "false" : "true");
  return true;
}

bool opt_args(HfReader& r) {
  const CNode& config = r.config;
  Diags& d = r.d;
  // OPT: learned positions with a table of max_position_embeddings + 2 rows (the first two are
  // an offset), pre-norm LayerNorms, biases everywhere, an ungated ReLU MLP of ffn_dim, tied
  r.core_sizes();
  r.integer("intermediate", {"ffn_dim"}, true);
  if (const CNode* mp = field(config, {"max_position_embeddings"})) {
    if (auto n = to_integer(*mp, d, "max_position_embeddings")) r.put_text("positions", std::to_string(*n + 2));
  } else {
    d.error(config.loc, "config.json has no 'max_position_embeddings'", {Note{{}, "OPT's learned position table has max_position_embeddings + 2 rows"}});
  }
  const CNode* eb = field(config, {"enable_bias"});
  r.put_text("bias", eb && eb->scalar == "false" ? "false" : "true");
  r.put_text("norm", "layernorm");
  r.put_text("mlp", "relu");
  // opt-350m: post-norm blocks (no final layer norm), and a 512-wide token table projected in to
  // the blocks' width and out again before the (tied) LM head
  if (const CNode* before = field(config, {"do_layer_norm_before"}); before && before->scalar == "false") r.put_text("post_norm", "true");
  r.integer("embed_dim", {"word_embed_proj_dim"}, false);
  const CNode* tie = field(config, {"tie_word_embeddings"});
  r.put_text("tied", tie && tie->scalar == "false" ? "false" : "true");
  return true;
}

bool neox_phi_args(HfReader& r) {
  const CNode& config = r.config;
  Diags& d = r.d;
  const std::string& type = r.type;
  // GPT-NeoX (Pythia) and Phi-1/1.5/2: LayerNorms with biases, an ungated GELU MLP with biases,
  // rotary positions on part of each head (rotary_pct, default 0.25; partial_rotary_factor,
  // default 0.5). GPT-NeoX: attention and MLP side by side on a norm each
  // (use_parallel_residual, default true), q/k/v and dense biases unless attention_bias is false,
  // an untied LM head by default. Phi: attention and MLP side by side on one norm, biases
  // everywhere (the LM head's too), untied by default.
  r.core_sizes();
  r.integer("intermediate", {"intermediate_size"}, true);
  if (type == "phi") r.integer("kv_heads", {"num_key_value_heads"}, false);
  r.put_text("norm", "layernorm");
  r.put_text("mlp", "gelu");
  r.put_text("bias", "true");
  const bool neox = type == "gpt_neox";
  if (neox) {
    const CNode* ab = field(config, {"attention_bias"});
    const std::string attn_bias = ab && ab->scalar == "false" ? "false" : "true";
    r.put_text("qkv_bias", attn_bias), r.put_text("o_bias", attn_bias);
    const CNode* par = field(config, {"use_parallel_residual"});
    if (!par || par->scalar != "false") r.put_text("parallel", "true"), r.put_text("parallel_norms", "2");
  } else {
    r.put_text("parallel", "true");
    r.put_text("lm_head_bias", "true");
  }
  // the rotated features: int(head_dim × the fraction), as Hugging Face computes them
  const CNode* h = field(config, {"hidden_size"});
  const CNode* nh = field(config, {"num_attention_heads"});
  const CNode* pct = field(config, {neox ? "rotary_pct" : "partial_rotary_factor"});
  Diags again;  // (hidden_size and the heads are read and reported above)
  const long long hv = h ? to_integer(*h, again, "hidden_size").value_or(0) : 0, nv = nh ? to_integer(*nh, again, "num_attention_heads").value_or(0) : 0;
  const std::string pct_key = neox ? "rotary_pct" : "partial_rotary_factor";
  const double f = pct ? to_number(*pct, d, pct_key).value_or(-1) : neox ? 0.25 : 0.5;
  if (pct && !(f > 0 && f <= 1)) {
    d.error(pct->loc, pct_key + " must be above 0 and at most 1");
    return false;
  }
  if (hv > 0 && nv > 0 && hv % nv != 0) {
    d.error(nh->loc, "num_attention_heads (" + std::to_string(nv) + ") does not divide hidden_size (" + std::to_string(hv) + ")");
    return false;
  }
  if (hv > 0 && nv > 0) r.put_text("rotary_dim", std::to_string(static_cast<long long>(static_cast<double>(hv / nv) * f)));
  const CNode* tie = field(config, {"tie_word_embeddings"});
  r.put_text("tied", tie && tie->scalar == "true" ? "true" : "false");
  return true;
}

bool deepseek_args(HfReader& r) {
  const CNode& config = r.config;
  Diags& d = r.d;
  // DeepSeek-V2/V3: multi-head latent attention; fine-grained routed experts with shared ones
  // (n_shared_experts × moe_intermediate_size, ungated) after first_k_dense_replace dense layers.
  // The multi-token-prediction module (num_nextn_predict_layers) is not part of the model Hugging
  // Face builds and is not counted.
  r.integer("kv_lora", {"kv_lora_rank"}, true);
  r.integer("q_lora", {"q_lora_rank"}, false);
  r.integer("qk_nope_dim", {"qk_nope_head_dim"}, true);
  r.integer("qk_rope_dim", {"qk_rope_head_dim"}, true);
  r.integer("v_head_dim", {"v_head_dim"}, true);
  if (const CNode* f = field(config, {"moe_layer_freq"}); f && f->scalar != "1") {
    d.error(f->loc, "moe_layer_freq = " + f->scalar + " is not supported: rsim builds DeepSeek with a mixture in every layer after first_k_dense_replace",
            {Note{{}, "every published DeepSeek-V2/V3 config has moe_layer_freq: 1"}});
    return false;
  }
  if (r.integer("experts", {"n_routed_experts"}, false)) {
    r.integer("top_k", {"num_experts_per_tok"}, true);
    r.integer("moe_intermediate", {"moe_intermediate_size"}, true);
    r.integer("first_dense", {"first_k_dense_replace"}, false);
    const CNode* shared = field(config, {"n_shared_experts"});
    const CNode* mi = field(config, {"moe_intermediate_size"});
    if (shared && mi) {
      auto ns = to_integer(*shared, d, "n_shared_experts");
      auto m = to_integer(*mi, d, "moe_intermediate_size");
      if (ns && m && *ns >= 0 && *ns <= 1000 && *m >= 0) r.put_text("shared_intermediate", std::to_string(*ns * *m));
    }
    const CNode* tm = field(config, {"topk_method"});
    if (tm && tm->scalar == "noaux_tc") r.put_text("router_bias", "true");  // e_score_correction_bias
  }
  return true;
}

// A mixture of experts (not DeepSeek's): its experts, routing and shared experts, the dense layers
void moe_args(HfReader& r) {
  const CNode& config = r.config;
  Diags& d = r.d;
  const std::string& type = r.type;
  r.integer("top_k", {"num_experts_per_tok"}, true);
  r.integer("moe_intermediate", {"moe_intermediate_size"}, false);
  if (r.integer("shared_intermediate", {"shared_expert_intermediate_size"}, false) && type == "qwen2_moe") r.put_text("shared_gate", "true");
  r.integer("sparse_step", {"decoder_sparse_step"}, false);
  // mlp_only_layers: those layers have a dense MLP of intermediate_size (a bit each in dense_mask)
  if (const CNode* only = field(config, {"mlp_only_layers"}); only && only->is_seq() && !only->items.empty()) {
    unsigned long long mask = 0;
    for (const CNode& it : only->items) {
      const auto i = to_integer(it, d, "mlp_only_layers");
      if (!i) continue;
      if (*i < 0 || *i > 62)
        d.error(it.loc, "mlp_only_layers lists layer " + std::to_string(*i) + ": rsim takes layers 0 to 62 there",
                {Note{{}, "the dense layers are kept as a 63-bit mask; a deeper model's dense layers past 62 are not built yet"}});
      else mask |= 1ULL << *i;
    }
    r.put_text("dense_mask", std::to_string(mask));
  }
}

// The Llama family's (and Gemma's, Qwen's, Mistral's, Phi-3's): RMSNorm, a gated MLP, its biases,
// sliding windows and Gemma's alternating local and global layers. False after an error.
bool rmsnorm_args(HfReader& r) {
  const CNode& config = r.config;
  Diags& d = r.d;
  const std::string& type = r.type;
  r.put_text("norm", "rmsnorm");
  r.integer("rope_positions", {"max_position_embeddings"}, false);  // RoPE's table
  const CNode* act = field(config, {"hidden_act", "hidden_activation"});
  std::string a = act ? act->scalar : "silu";
  r.put_text("mlp", a.rfind("gelu", 0) == 0 ? "geglu" : "swiglu");
  const CNode* ab = field(config, {"attention_bias"});
  r.put_text("bias", ab && ab->scalar == "true" ? "true" : "false");
  // Qwen2: biases on q, k and v and none on o, which its model_type implies (no key says so)
  if (type == "qwen2" || type == "qwen2_moe") r.put_text("qkv_bias", "true"), r.put_text("o_bias", "false");
  // Qwen3: no q/k/v biases (attention_bias, default false) but an RMSNorm of each head of q and k
  const bool qwen3 = type == "qwen3" || type == "qwen3_moe";
  if (qwen3) r.put_text("qk_norm", "true");
  // sliding-window attention: `sliding_window` (null: none); Qwen2/3 only with use_sliding_window
  const CNode* sw = field(config, {"sliding_window"});
  const CNode* use = field(config, {"use_sliding_window"});
  const bool qwen_off = (type == "qwen2" || type == "qwen2_moe" || qwen3) && !(use && use->scalar == "true");
  bool qwen_none = false;  // Qwen slides only the layers from max_window_layers (default 28) on
  if (sw && !qwen_off && (type == "qwen2" || type == "qwen2_moe" || qwen3)) {
    const CNode* mwl = field(config, {"max_window_layers"});
    const CNode* nl = field(config, {"num_hidden_layers"});
    Diags again;  // (the layers are read and reported above)
    const long long from = mwl ? to_integer(*mwl, d, "max_window_layers").value_or(0) : 28;
    const long long layers = nl ? to_integer(*nl, again, "num_hidden_layers").value_or(0) : 0;
    if (from >= layers) {
      qwen_none = true;  // no layer index reaches max_window_layers: none slides
    } else if (from > 0) {
      d.error(mwl ? mwl->loc : use->loc, "use_sliding_window with max_window_layers = " + std::to_string(from) + " of " + std::to_string(layers) +
                                             " layers is not supported: only the layers from " + std::to_string(from) + " on would slide",
              {Note{{}, "rsim slides every layer or none (max_window_layers 0, or at least num_hidden_layers)"}});
      return false;
    }
  }
  if (sw && !qwen_off && !qwen_none && !(use && use->scalar == "false")) r.integer("window", {"sliding_window"}, false);
  if (type == "gemma2" || type == "gemma3_text") {
    // Gemma-2/3: norms before and after attention and the MLP; local (sliding) and global layers
    // alternate: Gemma-2 every other layer, Gemma-3 every sliding_window_pattern-th is global.
    // (Attention and final-logit softcapping add a tanh per score or logit: not counted.)
    r.put_text("sandwich_norms", "true");
    if (type == "gemma3_text") r.put_text("qk_norm", "true");
    long long pattern = type == "gemma2" ? 2 : 6;
    if (const CNode* p = field(config, {"sliding_window_pattern"})) pattern = to_integer(*p, d, "sliding_window_pattern").value_or(pattern);
    if (const CNode* lt = field(config, {"layer_types"}); lt && lt->is_seq() && !lt->items.empty()) {
      // a list of sliding_attention / full_attention: built when it is periodic, a full layer every P
      long long first_full = -1;
      for (size_t i = 0; i < lt->items.size() && first_full < 0; ++i)
        if (lt->items[i].scalar == "full_attention") first_full = static_cast<long long>(i);
      bool periodic = first_full >= 0;
      for (size_t i = 0; i < lt->items.size() && periodic; ++i)
        periodic = (lt->items[i].scalar == "full_attention") == ((static_cast<long long>(i) + 1) % (first_full + 1) == 0);
      if (!periodic) {
        d.error(lt->loc, "layer_types is not a repeating pattern of sliding layers and one full-attention layer: not supported",
                {Note{{}, "rsim builds a global layer every P layers (sliding_window_pattern)"}});
        return false;
      }
      pattern = first_full + 1;
    }
    if (pattern < 1 || pattern > 10000) {
      d.error(config.loc, "sliding_window_pattern must be 1 to 10000");
      return false;
    }
    r.put_text("window_pattern", std::to_string(pattern));
  }
  return true;
}

// Without head_dim, a head is hidden / heads features: Hugging Face rejects a config whose heads
// do not divide hidden (a silent floor would build a narrower model); each KV head serves the same
// number of query heads
void check_heads(const CNode& config, bool deepseek, Diags& d) {
  const CNode* h = field(config, {"hidden_size", "n_embd"});
  const CNode* nh = field(config, {"num_attention_heads", "n_head"});
  long long hv = -1, nv = -1;
  Diags again;  // (read and reported above: not twice)
  if (h) hv = to_integer(*h, again, "hidden_size").value_or(-1);
  if (nh) nv = to_integer(*nh, again, "num_attention_heads").value_or(-1);
  if (hv > 0 && nv > 0 && !field(config, {"head_dim"}) && !deepseek && hv % nv != 0)
    d.error(nh->loc, "num_attention_heads (" + std::to_string(nv) + ") does not divide hidden_size (" + std::to_string(hv) + ")",
            {Note{{}, "each head has hidden_size / num_attention_heads features; give head_dim if the heads are narrower or wider"}});
  // grouped-query attention: each KV head serves heads / kv_heads query heads
  if (const CNode* kh = field(config, {"num_key_value_heads"}); kh && nv > 0) {
    const long long kv = to_integer(*kh, again, "num_key_value_heads").value_or(-1);
    if (kv > 0 && nv % kv != 0)
      d.error(kh->loc, "num_key_value_heads (kv_heads) = " + std::to_string(kv) + " does not divide num_attention_heads (heads) = " + std::to_string(nv),
              {Note{{}, "each key/value head serves the same number of query heads"}});
  }
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
  HfReader r{config, d, out, ""};
  auto integer = [&](const char* arg, std::initializer_list<const char*> names, bool required) { return r.integer(arg, names, required); };
  auto put_text = [&](const std::string& key, const std::string& v) { r.put_text(key, v); };
  // Only the architectures rsim builds exactly; any other is refused, never approximated by a Llama.
  const CNode* type_node = nullptr;
  const std::string type = r.type = hf_model_type(config, type_node);
  static const std::vector<std::string> supported = {"gpt2",   "gpt_neox", "llama",       "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
                                                     "qwen3_moe", "gemma", "gemma2", "gemma3_text", "phi", "phi3",   "falcon", "opt",
                                                     "deepseek_v2", "deepseek_v3"};
  if (std::find(supported.begin(), supported.end(), type) == supported.end()) {
    std::string list;
    for (const auto& t : supported) list += (list.empty() ? "" : ", ") + t;
    d.error(type_node ? type_node->loc : config.loc,
            type.empty() ? std::string("config.json names no model_type (nor architectures): rsim cannot tell which architecture to build")
                         : "model_type '" + type + "' is not supported: rsim would count it wrongly (it builds exactly " + list + ")",
            {Note{{}, "supported model types: " + list +
                          "; others (encoders, encoder-decoders, state-space and recurrent models, other attention variants) are refused rather than guessed"}});
    return out;
  }
  bool gpt2 = type == "gpt2";
  // torch_dtype: the network's dtype unless the network or settings give one (file_dtype)
  if (const CNode* td = field(config, {"torch_dtype"}); td && td->is_scalar()) {
    static const std::pair<const char*, const char*> names[] = {{"float32", "fp32"}, {"float16", "fp16"}, {"bfloat16", "bf16"}, {"float64", "fp64"}};
    for (const auto& [torch, ours] : names)
      if (td->scalar == torch) out.entries.push_back(CEntry{"file_dtype", td->loc, CNode::make_scalar(ours, td->loc)});
  }
  if (type == "falcon" && (r.refuse_if("alibi", "true", "ALiBi attention biases are not modelled") ||
                           r.refuse_if("parallel_attn", "false", "only Falcon's parallel attention and MLP block is built")))
    return out;
  if (type == "opt" && r.refuse_if("_remove_final_layer_norm", "true", "a pre-norm OPT without its final layer norm is not built")) return out;
  if (type == "falcon") {
    falcon_args(r);
    return out;
  }
  if (type == "opt") {
    opt_args(r);
    return out;
  }
  if (type == "phi" && r.refuse_if("qk_layernorm", "true", "its LayerNorm of each head of q and k is not built")) return out;
  if (type == "gpt_neox" || type == "phi") {
    neox_phi_args(r);
    return out;
  }
  const bool deepseek = type == "deepseek_v2" || type == "deepseek_v3";
  if (deepseek && !deepseek_args(r)) return out;
  integer("hidden", {"hidden_size", "n_embd"}, true);
  integer("layers", {"num_hidden_layers", "n_layer"}, true);
  integer("heads", {"num_attention_heads", "n_head"}, true);
  integer("vocab", {"vocab_size"}, true);
  integer("kv_heads", {"num_key_value_heads"}, false);
  integer("head_dim", {"head_dim"}, false);
  if (!integer("intermediate", {"intermediate_size", "n_inner"}, !gpt2) && gpt2) {
    // GPT-2's n_inner is null: 4 · n_embd (the transformer's default)
  }
  if (!deepseek && integer("experts", {"num_local_experts", "num_experts"}, false)) moe_args(r);
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
  } else if (!rmsnorm_args(r)) {
    return out;
  }
  check_heads(config, deepseek, d);
  return out;
}

}  // namespace rsim
