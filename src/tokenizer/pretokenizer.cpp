#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "common/error.h"
#include "tokenizer/unicode.h"

namespace minfer::tok::detail {

namespace {

// llama.cpp's regexes per pre-type (llama-vocab.cpp, llm_tokenizer_bpe). Where the HF
// regex uses (?i:'s|...) llama.cpp spells the cases out, which also keeps Unicode case
// folding (e.g. U+017F) out of the contractions; we use its spelling.
const char* const kGpt2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* const kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?"
    "((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|"
    "'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])"
    "([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kBloom = " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+";

}  // namespace

PreTypeInfo pre_type_info(const std::string& pre) {
  PreTypeInfo r;
  auto is = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (pre == n) return true;
    return false;
  };
  if (is({"default"})) {
    r.canonical = "default";
  } else if (is({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
                 "lfm2", "jina-v5-nano"})) {
    r.canonical = "llama3";
    r.regexes = {kLlama3};
    r.ignore_merges = true;
    r.add_bos = true;
  } else if (is({"dbrx", "smaug-bpe"})) {
    r.canonical = pre;
    r.regexes = {kLlama3};
  } else if (is({"deepseek-llm"})) {
    r.canonical = "deepseek-llm";
    r.clean_spaces = false;
    r.regexes = {
        "[\r\n]",
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
        "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
        "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-"
        "\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
        "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-"
        "\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}"
        "\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
        "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}"
        "\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-"
        "\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
        "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
        "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}"
        "\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-"
        "\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
        "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
        "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
        "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
        "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
        "\\s+$",
        "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+",
        "\\p{N}+",
    };
  } else if (is({"deepseek-coder"})) {
    r.canonical = "deepseek-coder";
    r.clean_spaces = false;
    r.regexes = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
                 "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"};
  } else if (is({"deepseek-v3", "hunyuan-dense", "joyai-llm"})) {
    r.canonical = pre;
    r.clean_spaces = false;
    r.regexes = {
        "\\p{N}{1,3}",
        "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"
        " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    };
  } else if (is({"falcon"})) {
    r.canonical = "falcon";
    r.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
  } else if (is({"starcoder", "refact", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"})) {
    r.canonical = "starcoder";
    r.clean_spaces = !is({"smollm"});
    r.regexes = {"\\p{N}", kGpt2};
  } else if (is({"command-r"})) {
    r.canonical = "command-r";
    r.clean_spaces = false;
    r.regexes = {"\\p{N}", kGpt2};
  } else if (is({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
                 "a.x-4.0", "mellum", "jina-v1-en", "jina-v2-code", "roberta-bpe", "mpt", "olmo",
                 "jais", "exaone4", "modern-bert"})) {
    r.canonical = "gpt-2";
    r.regexes = {kGpt2};
  } else if (is({"trillion", "granite-docling"})) {
    r.canonical = pre;
    r.clean_spaces = false;
    r.regexes = {kGpt2};
  } else if (is({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"})) {
    r.canonical = "qwen2";
    r.clean_spaces = false;
    r.regexes = {kQwen2};
  } else if (is({"stablelm2", "megrez"})) {
    r.canonical = "qwen2";
    r.regexes = {kQwen2};
  } else if (is({"hunyuan", "grok-2", "solar-open"})) {
    r.canonical = pre;
    r.clean_spaces = false;
    r.regexes = {kQwen2};
  } else if (is({"poro-chat"})) {
    r.canonical = "poro-chat";
    r.clean_spaces = false;
    r.regexes = {kBloom};
  } else if (is({"bloom", "gpt3-finnish"})) {
    r.canonical = pre;
    r.regexes = {kBloom};
  } else if (is({"viking"})) {
    r.canonical = "viking";
    r.clean_spaces = false;
    r.regexes = {kBloom, "\\p{N}"};
  } else if (is({"glm4", "chatglm-bpe"})) {
    r.canonical = "chatglm-bpe";
    r.no_bos = true;
    r.regexes = {kLlama3};
  } else if (is({"tekken"})) {
    r.canonical = "tekken";
    r.clean_spaces = false;
    r.ignore_merges = true;
    r.add_bos = true;
    r.regexes = {kTekken};
  } else if (is({"chameleon"})) {
    r.canonical = "chameleon";
    r.clean_spaces = false;
    r.add_bos = true;
    r.regexes = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
                 "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]", kGpt2};
  } else if (is({"gpt-4o", "llama4", "minimax-m2", "kanana2", "talkie"})) {
    r.canonical = "gpt-4o";
    r.clean_spaces = false;
    r.regexes = {kGpt4o};
  } else if (is({"seed-coder"})) {
    r.canonical = "seed-coder";
    r.clean_spaces = false;
    r.regexes = {
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
        "\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
  } else if (is({"bailingmoe", "bailingmoe2", "llada-moe"})) {
    r.canonical = "bailingmoe";
    r.clean_spaces = false;
    r.regexes = {
        "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"};
  } else if (is({"qwen35"})) {
    r.canonical = "qwen35";
    r.clean_spaces = false;
    r.regexes = {
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
        "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
  } else if (is({"jais-2"})) {
    r.canonical = "jais-2";
    r.regexes = {
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|"
        "\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}"};
  } else if (is({"exaone-moe"})) {
    r.canonical = "exaone-moe";
    r.regexes = {
        "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: "
        "\\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"};
  } else if (is({"laguna"})) {
    r.canonical = "laguna";
    r.clean_spaces = false;
    r.regexes = {"[^\\n]+|[\\n]+", kQwen2};
  } else if (is({"granite-embed-multi-97m"})) {
    r.canonical = pre;
    r.clean_spaces = false;
    r.ignore_merges = true;
    r.regexes = {
        "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|"
        "'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+"
        "((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| "
        "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"};
  } else if (pre.empty()) {
    r.canonical = "default";
  } else {
    r.known = false;
    r.canonical = "default";
  }
  if (r.canonical == "default") {
    r.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  }
  return r;
}

struct PreTokenizer::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& regexes) {
  for (const auto& re : regexes) {
    auto c = std::make_shared<Compiled>();
    int err = 0;
    PCRE2_SIZE erroff = 0;
    // DOLLAR_ENDONLY: llama.cpp's std::regex `$` matches only at the very end of a piece.
    c->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(re.data()), re.size(),
                            PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &erroff, nullptr);
    if (!c->code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      fail("pre-tokenizer regex '{}' does not compile at offset {}: {}", re, erroff,
           reinterpret_cast<const char*>(msg));
    }
    pcre2_jit_compile(c->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter
    res_.push_back(std::move(c));
  }
}

PreTokenizer::~PreTokenizer() = default;

namespace {

// Per-thread matching scratch: match data sized for the largest ovector we use and a JIT
// stack big enough for long runs of whitespace or letters.
struct MatchScratch {
  pcre2_match_data* md = pcre2_match_data_create(32, nullptr);
  pcre2_match_context* mctx = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  MatchScratch() { pcre2_jit_stack_assign(mctx, nullptr, stack); }
  ~MatchScratch() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(mctx);
    pcre2_match_data_free(md);
  }
};

}  // namespace

std::vector<size_t> PreTokenizer::split(std::string_view text) const {
  thread_local MatchScratch scratch;
  std::vector<size_t> pieces{text.size()};
  if (text.empty()) return {};
  for (const auto& re : res_) {
    std::vector<size_t> out;
    out.reserve(pieces.size() * 2);
    size_t base = 0;
    for (size_t len : pieces) {
      const auto* subj = reinterpret_cast<PCRE2_SPTR>(text.data() + base);
      size_t prev_end = 0, pos = 0;
      while (pos <= len) {
        int rc = pcre2_match(re->code, subj, len, pos, PCRE2_NO_UTF_CHECK, scratch.md, scratch.mctx);
        // Other errors (match or JIT stack limits on pathological input) end the search in
        // this piece: the rest stays one piece rather than failing the whole encode.
        if (rc < 0) break;
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.md);
        const size_t ms = ov[0], me = ov[1];
        if (ms > prev_end) out.push_back(ms - prev_end);
        if (me > ms) {
          out.push_back(me - ms);
          pos = me;
        } else {
          // An empty match still cuts the text there (as std::regex_iterator does); step
          // over one character to make progress.
          if (ms >= len) break;
          pos = ms + std::min(utf8_len(uint8_t(text[base + ms])), len - ms);
        }
        prev_end = std::max(prev_end, me);
      }
      if (prev_end < len) out.push_back(len - prev_end);
      base += len;
    }
    pieces = std::move(out);
  }
  return pieces;
}

}  // namespace minfer::tok::detail
