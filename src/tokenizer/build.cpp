// build_impl: llama.cpp's llama_vocab::impl::load applied to a Spec — defaults per model and
// pre-type, special ids, text-detected EOT/EOM/FIM and end-of-generation tokens, the
// special-token cache and the Phi-3 attribute quirk.
#include <algorithm>
#include <cctype>

#include "common/error.h"
#include "tokenizer/impl.h"
#include "tokenizer/unicode.h"

namespace minfer::tok {

namespace {

uint32_t attr_from_type(int32_t type) {
  switch (type) {
    case 1: return ATTR_NORMAL;
    case 2: return ATTR_UNKNOWN;
    case 3: return ATTR_CONTROL;
    case 4: return ATTR_USER_DEFINED;
    case 5: return ATTR_UNUSED;
    case 6: return ATTR_BYTE;
    default: return ATTR_UNDEFINED;
  }
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> build_impl(detail::Spec spec) {
  auto im = std::make_unique<Tokenizer::Impl>();
  Tokenizer::Impl& v = *im;
  const std::string& src = spec.source;
  const size_t n = spec.tokens.size();
  if (n == 0) fail("{}: the tokenizer has no tokens (tokenizer.ggml.tokens is empty)", src);
  if (n > size_t(INT32_MAX)) fail("{}: too many tokens ({})", src, n);
  if (!spec.scores.empty() && spec.scores.size() != n)
    fail("{}: tokenizer.ggml.scores has {} entries for {} tokens", src, spec.scores.size(), n);
  if (!spec.types.empty() && spec.types.size() != n)
    fail("{}: tokenizer.ggml.token_type has {} entries for {} tokens", src, spec.types.size(), n);

  if (spec.model == "llama") {
    v.kind = Tokenizer::Impl::Kind::Spm;
    v.bos = 1;
    v.eos = 2;
    v.unk = 0;
    v.add_space_prefix = true;
    v.clean_spaces = false;
    v.add_bos = true;
    v.add_eos = false;
    v.pre_canonical = "default";
  } else if (spec.model == "gpt2") {
    v.kind = Tokenizer::Impl::Kind::Bpe;
    v.bos = 11;
    v.eos = 11;
    const detail::PreTypeInfo info = detail::pre_type_info(spec.pre.value_or(""));
    if (!info.known)
      fail("{}: pre-tokenizer type '{}' (tokenizer.ggml.pre) is not supported: minfer would split "
           "the text differently from llama.cpp",
           src, *spec.pre);
    v.pre_canonical = info.canonical;
    v.ignore_merges = info.ignore_merges;
    v.add_bos = info.add_bos;
    v.clean_spaces = info.clean_spaces;
    if (info.no_bos) v.bos = -1;
    v.pretok = std::make_unique<detail::PreTokenizer>(info.regexes);
  } else if (spec.model.empty()) {
    fail("{}: no tokenizer (tokenizer.ggml.model is missing)", src);
  } else {
    fail("{}: tokenizer model '{}' is not supported (supported: 'llama' SentencePiece, 'gpt2' "
         "byte-level BPE)",
         src, spec.model);
  }
  if (spec.add_space_prefix) v.add_space_prefix = *spec.add_space_prefix;

  v.tokens.resize(n);
  for (size_t i = 0; i < n; ++i) {
    auto& t = v.tokens[i];
    t.text = spec.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : spec.tokens[i];
    t.score = spec.scores.empty() ? 0.0f : spec.scores[i];
    t.type = spec.types.empty() ? TokenType::Normal : TokenType(spec.types[i]);
    t.attr = spec.types.empty() ? ATTR_NORMAL : attr_from_type(spec.types[i]);
  }
  // A duplicate text maps to its last id, as in llama.cpp.
  v.text_ids.build(n, [&v](size_t i) { return std::string_view(v.tokens[i].text); });

  for (int b = 0; b < 256; ++b) v.byte_token[b] = v.text_to_token(detail::byte_to_unicode(uint8_t(b)));
  if (v.kind == Tokenizer::Impl::Kind::Bpe) {
    v.bpe_pairs.reserve(spec.merges.size());
    for (size_t i = 0; i < spec.merges.size(); ++i) {
      const std::string& m = spec.merges[i];
      const size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) continue;
      const std::string_view left = std::string_view(m).substr(0, sp);
      const std::string_view right = std::string_view(m).substr(sp + 1);
      const int32_t l = v.text_to_token(left), r = v.text_to_token(right);
      if (l >= 0 && r >= 0) {
        std::string both(left);
        both += right;
        v.bpe_pairs.insert(l, r, int32_t(i), v.text_to_token(both));
      } else {
        v.bpe_ranks.emplace(Tokenizer::Impl::merge_key(left, right), int32_t(i));
      }
    }
  }

  // Special ids: a key overrides the default when it is in range (llama.cpp warns and keeps
  // the default otherwise); a default that is out of range means "none".
  auto set_id = [&](int32_t& id, const std::optional<uint32_t>& key) {
    if (key && *key < n) id = int32_t(*key);
    if (id >= int32_t(n)) id = -1;
  };
  set_id(v.bos, spec.bos);
  set_id(v.eos, spec.eos);
  set_id(v.eot, spec.eot);
  set_id(v.eom, spec.eom);
  set_id(v.unk, spec.unk);
  set_id(v.sep, spec.sep);
  set_id(v.pad, spec.pad);
  set_id(v.mask, spec.mask);
  set_id(v.fim_pre, spec.fim_pre);
  set_id(v.fim_suf, spec.fim_suf);
  set_id(v.fim_mid, spec.fim_mid);
  set_id(v.fim_pad, spec.fim_pad);
  set_id(v.fim_rep, spec.fim_rep);
  set_id(v.fim_sep, spec.fim_sep);
  if (spec.add_bos) v.add_bos = *spec.add_bos;
  if (spec.add_eos) v.add_eos = *spec.add_eos;

  // llama.cpp adds the CONTROL attribute to a text-detected token (and warns that the model
  // file mislabels it); the other attribute bits stay.
  auto make_control = [&](int32_t id) {
    if ((v.tokens[id].attr & ATTR_CONTROL) == 0) {
      v.tokens[id].attr |= ATTR_CONTROL;
      v.tokens[id].type = TokenType::Control;
    }
  };
  auto set_attr = [&](int32_t id, uint32_t attr, TokenType type) {
    v.tokens[size_t(id)].attr = attr;
    v.tokens[size_t(id)].type = type;
  };
  // Tokens recognised by their text (llama.cpp walks a hash map; we take the lowest id). The
  // lists are llama.cpp v0.4.0's (llama-vocab.cpp, llama_vocab::impl::load).
  auto detect = [&](int32_t& id, std::initializer_list<const char*> texts) {
    if (id != -1) return;
    for (const char* t : texts) v.for_each_id_of(t, [&](int32_t i) { id = id < 0 || i < id ? i : id; });
    if (id >= 0) make_control(id);
  };
  detect(v.eot, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                 "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
                 "<end_of_utterance>"});
  detect(v.eom, {"<|eom_id|>"});
  detect(v.fim_pre, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                     "▁<PRE>", "<|code_prefix|>", "<|prefix|>"});
  detect(v.fim_suf, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                     "▁<SUF>", "<|code_suffix|>", "<|suffix|>"});
  detect(v.fim_mid, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                     "▁<MID>", "<|code_middle|>", "<|middle|>"});
  detect(v.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
  detect(v.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
  detect(v.fim_sep, {"<|file_sep|>"});

  // End of generation: FIM pad/repo/sep, every token with an end-of-turn text, EOS/EOT/EOM.
  // "</s>" is on the list for PaddleOCR: in other vocabularies (Qwen's, id 128247) it is a
  // plain token that llama.cpp makes CONTROL and end-of-generation all the same.
  std::vector<uint8_t> eog(n, 0);
  for (int32_t id : {v.fim_pad, v.fim_rep, v.fim_sep})
    if (id >= 0) eog[id] = 1;
  for (const char* t : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                        "<｜end▁of▁sentence｜>", "[e~["})
    v.for_each_id_of(t, [&](int32_t i) {
      eog[size_t(i)] = 1;
      make_control(i);
    });
  // gpt-oss: these are always rendered.
  for (const char* t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
    v.for_each_id_of(t, [&](int32_t i) { set_attr(i, ATTR_USER_DEFINED, TokenType::UserDefined); });
  for (int32_t id : {v.eos, v.eot, v.eom})
    if (id >= 0) eog[id] = 1;
  // The end-of-generation token of one text (the last id of a duplicated text, as llama.cpp's
  // checks below find it), or -1.
  auto eog_id_of = [&](const char* text) {
    int32_t found = -1;
    v.for_each_id_of(text, [&](int32_t i) {
      if (eog[size_t(i)] && i > found) found = i;
    });
    return found;
  };
  {
    // o200k_harmony (<|return|> and <|call|>) and solar-open (<|calls|> and <|flush|>): <|end|>
    // does not end generation there.
    const int32_t end = eog_id_of("<|end|>");
    const bool call = eog_id_of("<|call|>") >= 0 || eog_id_of("<|calls|>") >= 0;
    if (end >= 0 && call && (eog_id_of("<|return|>") >= 0 || eog_id_of("<|flush|>") >= 0)) {
      eog[size_t(end)] = 0;
      set_attr(end, ATTR_USER_DEFINED, TokenType::UserDefined);
    }
  }
  {
    // Gemma 4 (<|tool_response>): its "</s>" is text, not an end of generation.
    const int32_t s = eog_id_of("</s>");
    if (s >= 0 && eog_id_of("<|tool_response>") >= 0) {
      eog[size_t(s)] = 0;
      set_attr(s, ATTR_NORMAL, TokenType::Normal);
    }
  }
  v.is_eog = std::move(eog);
  for (size_t i = 0; i < n; ++i)
    if (v.is_eog[i]) v.eog.push_back(int32_t(i));

  for (size_t i = 0; i < n; ++i)
    if (v.tokens[i].attr & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN))
      v.special_cache.push_back(int32_t(i));
  std::stable_sort(v.special_cache.begin(), v.special_cache.end(), [&](int32_t a, int32_t b) {
    return v.tokens[a].text.size() > v.tokens[b].text.size();
  });

  v.pieces.resize(n);
  for (size_t i = 0; i < n; ++i) v.pieces[i] = v.compute_piece(int32_t(i));

  // llama.cpp sets these attributes by model name; GGUF does not store them.
  std::string name = spec.general_name;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
    for (int32_t id : v.special_cache) v.tokens[id].attr |= ATTR_RSTRIP;
    auto set_rstrip = [&](const char* text, bool on) {
      const int32_t id = v.text_to_token(text);
      if (id < 0) return;
      auto& a = v.tokens[size_t(id)].attr;
      a = on ? (a | ATTR_RSTRIP) : (a & ~uint32_t(ATTR_RSTRIP));
    };
    set_rstrip("</s>", true);
    for (const char* t : {"<unk>", "<s>", "<|endoftext|>"}) set_rstrip(t, false);
  }

  v.spec = std::move(spec);
  return im;
}

}  // namespace minfer::tok
