// HF tokenizer.json -> Spec, following llama.cpp's convert_hf_to_gguf.py (get_vocab_base,
// gguf-py SpecialVocab) for byte-level BPE tokenizers.
#include <filesystem>
#include <map>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.h"
#include "tokenizer/impl.h"

namespace minfer::tok {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

json read_json(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail("{}: cannot open", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    fail("{}: not valid JSON: {}", p.string(), e.what());
  }
}

// The pre-tokenizer regexes llama.cpp's converter recognises (by the tokenization they give;
// we compare the regex itself).
const char* const kLlama3Re =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2Re =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

std::string detect_pre(const json& pt, const std::string& src) {
  if (pt.is_null()) fail("{}: no pre_tokenizer: not a byte-level BPE tokenizer", src);
  const std::string type = pt.value("type", "");
  if (type == "ByteLevel") {
    if (pt.value("use_regex", true)) return "gpt-2";
    fail("{}: ByteLevel pre-tokenizer without a regex is not supported", src);
  }
  if (type == "Sequence" && pt.contains("pretokenizers") && pt["pretokenizers"].is_array()) {
    std::string regex;
    bool byte_level = false;
    for (const auto& p : pt["pretokenizers"]) {
      const std::string t = p.value("type", "");
      if (t == "ByteLevel") byte_level = true;
      if (t == "Split" && p.contains("pattern") && p["pattern"].is_object() &&
          p["pattern"].contains("Regex") && p["pattern"]["Regex"].is_string())
        regex = p["pattern"]["Regex"].get<std::string>();
    }
    if (!byte_level) fail("{}: the pre-tokenizer is not byte-level (no ByteLevel step)", src);
    if (regex == kLlama3Re) return "llama-bpe";
    if (regex == kQwen2Re) return "qwen2";
    fail("{}: unsupported pre-tokenizer regex '{}' (known: llama-bpe, qwen2, gpt-2)", src, regex);
  }
  fail("{}: unsupported pre-tokenizer type '{}'", src, type);
}

// The converter's does_token_look_special.
bool looks_special(const std::string& t) {
  auto starts = [&](std::string_view p) { return t.rfind(p, 0) == 0; };
  auto ends = [&](std::string_view s) {
    return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0;
  };
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (starts("<|") && ends("|>")) return true;
  if (starts("<｜") && ends("｜>")) return true;
  if (starts("<unused") && ends(">")) return true;
  return false;
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_hf(const std::string& tokenizer_json_path) {
  const fs::path path(tokenizer_json_path);
  const std::string src = path.string();
  const json j = read_json(path);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    fail("{}: no \"model\" object: not an HF tokenizer.json", src);
  const json& model = j["model"];
  if (model.value("type", "") != "BPE")
    fail("{}: model type '{}' is not supported (byte-level BPE only)", src, model.value("type", ""));
  if (model.value("byte_fallback", false))
    fail("{}: a byte-fallback (SentencePiece-style) BPE; convert it from tokenizer.model", src);

  detail::Spec s;
  s.source = src;
  s.model = "gpt2";
  s.pre = detect_pre(j.contains("pre_tokenizer") ? j["pre_tokenizer"] : json(), src);

  // id -> text over the base vocabulary and the added tokens.
  std::map<int64_t, std::string> by_id;
  if (!model.contains("vocab") || !model["vocab"].is_object())
    fail("{}: model.vocab is missing", src);
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0)
      fail("{}: vocab entry '{}' has no valid id", src, text);
    by_id[id.get<int64_t>()] = text;
  }
  struct Added {
    std::string content;
    bool special;
  };
  std::map<int64_t, Added> added;
  std::vector<std::pair<std::string, int64_t>> added_list;  // in file order
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto& a : j["added_tokens"]) {
      if (!a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string())
        fail("{}: an added_tokens entry lacks id/content", src);
      const int64_t id = a["id"].get<int64_t>();
      if (id < 0) fail("{}: added token with negative id {}", src, id);
      added[id] = {a["content"].get<std::string>(), a.value("special", false)};
      added_list.emplace_back(a["content"].get<std::string>(), id);
      by_id[id] = a["content"].get<std::string>();
    }
  }
  std::set<std::string> added_texts;
  for (const auto& [id, a] : added) added_texts.insert(a.content);

  const fs::path dir = path.parent_path();
  json tcfg, cfg;
  if (fs::exists(dir / "tokenizer_config.json")) tcfg = read_json(dir / "tokenizer_config.json");
  if (fs::exists(dir / "config.json")) cfg = read_json(dir / "config.json");

  int64_t n_vocab = by_id.empty() ? 0 : by_id.rbegin()->first + 1;
  const json* vcfg = &cfg;
  if (cfg.is_object() && !cfg.contains("vocab_size") && cfg.contains("text_config"))
    vcfg = &cfg["text_config"];
  if (vcfg->is_object() && vcfg->contains("vocab_size") && (*vcfg)["vocab_size"].is_number_integer())
    n_vocab = std::max(n_vocab, (*vcfg)["vocab_size"].get<int64_t>());
  if (n_vocab > 16 * 1024 * 1024) fail("{}: implausible vocabulary size {}", src, n_vocab);

  for (int64_t i = 0; i < n_vocab; ++i) {
    auto it = by_id.find(i);
    if (it == by_id.end()) {
      s.tokens.push_back("[PAD" + std::to_string(i) + "]");
      s.types.push_back(int32_t(TokenType::Unused));
      continue;
    }
    std::string text = it->second;
    if (added_texts.count(text)) {
      auto a = added.find(i);
      const bool special = a != added.end() && a->second.special;
      if (special || looks_special(text)) {
        s.types.push_back(int32_t(TokenType::Control));
      } else {
        // Pre-normalize user-defined spaces (the converter's Gemma rule).
        for (size_t p; (p = text.find("\xE2\x96\x81")) != std::string::npos;) text.replace(p, 3, " ");
        s.types.push_back(int32_t(TokenType::UserDefined));
      }
    } else {
      s.types.push_back(int32_t(TokenType::Normal));
    }
    s.tokens.push_back(std::move(text));
  }

  if (model.contains("merges") && model["merges"].is_array()) {
    for (const auto& m : model["merges"]) {
      if (m.is_string()) {
        s.merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        s.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        fail("{}: a merges entry is neither \"a b\" nor [\"a\", \"b\"]", src);
      }
    }
  }

  // gguf-py SpecialVocab: tokenizer_config.json first (texts looked up among the added
  // tokens), then config.json's *_token_id for what is still unset.
  auto set_special = [&](std::optional<uint32_t>& slot, int64_t id) {
    if (!slot && id >= 0 && id < n_vocab) slot = uint32_t(id);
  };
  struct Kind {
    const char* name;
    std::optional<uint32_t>* slot;
  };
  const Kind kinds[] = {{"bos", &s.bos}, {"eos", &s.eos}, {"unk", &s.unk},
                        {"sep", &s.sep}, {"pad", &s.pad}, {"mask", &s.mask}};
  if (tcfg.is_object()) {
    for (const Kind& k : kinds) {
      const std::string key = std::string(k.name) + "_token";
      if (!tcfg.contains(key)) continue;
      const json& e = tcfg[key];
      std::string content;
      if (e.is_string())
        content = e.get<std::string>();
      else if (e.is_object() && e.contains("content") && e["content"].is_string())
        content = e["content"].get<std::string>();
      else
        continue;
      for (const auto& [text, id] : added_list) {
        if (text == content) {
          set_special(*k.slot, id);
          break;
        }
      }
    }
    if (tcfg.contains("add_bos_token") && tcfg["add_bos_token"].is_boolean())
      s.add_bos = tcfg["add_bos_token"].get<bool>();
    if (tcfg.contains("add_eos_token") && tcfg["add_eos_token"].is_boolean())
      s.add_eos = tcfg["add_eos_token"].get<bool>();
    if (tcfg.contains("chat_template")) {
      const json& ct = tcfg["chat_template"];
      if (ct.is_string()) {
        s.chat_template = ct.get<std::string>();
      } else if (ct.is_array()) {
        for (const auto& e : ct)
          if (e.is_object() && e.value("name", "") == "default" && e.contains("template") &&
              e["template"].is_string())
            s.chat_template = e["template"].get<std::string>();
      }
    }
  }
  if (cfg.is_object()) {
    for (const Kind& k : kinds) {
      const std::string key = std::string(k.name) + "_token_id";
      if (cfg.contains(key) && cfg[key].is_number_integer()) set_special(*k.slot, cfg[key].get<int64_t>());
    }
  }
  if (!s.chat_template && fs::exists(dir / "chat_template.jinja")) {
    std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    s.chat_template = ss.str();
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(build_impl(std::move(s))));
}

}  // namespace minfer::tok
