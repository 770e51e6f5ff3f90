// A user's text as the tokens a model reads: the chat template rendered with the model's
// BOS/EOS texts, and llama_tokenize's BOS rule. The CLI commands and the OpenAI server share it.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace minfer::runtime {

class Model;

// Renders `messages` (an array of {"role", "content", ...}) with template source `tmpl`;
// invalid UTF-8 in them becomes U+FFFD. extra_vars (an object, or null) adds template variables
// such as enable_thinking.
std::string render_chat(const Model& m, const std::string& tmpl,
                        const nlohmann::ordered_json& messages, bool add_generation_prompt,
                        const nlohmann::ordered_json& extra_vars = nullptr);

// llama_tokenize with the model's add_bos and special tokens parsed. A BOS already written by
// the template is not doubled; allow_bos = false for text that continues a cached prefix.
std::vector<int32_t> tokenize_prompt(const Model& m, const std::string& text, bool allow_bos = true);

}  // namespace minfer::runtime
