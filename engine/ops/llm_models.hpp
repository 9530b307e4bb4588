// Transformer models from outside the zoo's YAML: a Hugging Face config.json read into the
// arguments of the zoo's `transformer` model (`{model: hf, args: {config: path/config.json}}`).
#pragma once
#include <string>

#include "engine/model/config.hpp"

namespace rsim {

// The `transformer` arguments of a config.json (JSON is YAML: read with the same loader).
// Reads hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, vocab_size, tie_word_embeddings, num_local_experts,
// num_experts_per_tok, hidden_act, model_type (GPT-2's n_embd, n_inner, n_layer, n_head and
// n_positions too), attention_bias, sliding_window / use_sliding_window. The architecture is
// model_type (else architectures[0]): gpt2, llama, mistral, mixtral, qwen2 (q/k/v biases, no o
// bias), qwen2_moe (fine-grained and shared experts), gemma, phi3, falcon (parallel block,
// multi-query), opt (learned positions, ReLU); any other is refused with a located error listing these. Missing required
// fields are errors at the file; other fields are ignored.
CNode hf_transformer_args(const CNode& config, Diags& d);

}  // namespace rsim
