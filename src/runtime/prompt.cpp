#include "runtime/prompt.h"

#include "chat/template.h"
#include "runtime/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

std::string render_chat(const Model& m, const std::string& tmpl,
                        const nlohmann::ordered_json& messages, bool add_generation_prompt,
                        const nlohmann::ordered_json& extra_vars) {
  const auto& tok = m.tokenizer();
  const std::string bos = tok.bos() >= 0 ? tok.token_text(tok.bos()) : std::string();
  const std::string eos = tok.eos() >= 0 ? tok.token_text(tok.eos()) : std::string();
  // Text from a terminal may hold invalid UTF-8, which the template's string filters cannot
  // take: such bytes become U+FFFD (a JSON round trip with the replacing error handler).
  using json = nlohmann::ordered_json;
  const json clean = json::parse(messages.dump(-1, ' ', false, json::error_handler_t::replace));
  return chat::apply_template(tmpl, clean, add_generation_prompt, bos, eos, extra_vars);
}

std::vector<int32_t> tokenize_prompt(const Model& m, const std::string& text, bool allow_bos) {
  const auto& tok = m.tokenizer();
  bool add_special = allow_bos && tok.add_bos();
  if (add_special && tok.bos() >= 0 && text.starts_with(tok.token_text(tok.bos())))
    add_special = false;
  return tok.encode(text, add_special, /*parse_special=*/true);
}

}  // namespace minfer::runtime
