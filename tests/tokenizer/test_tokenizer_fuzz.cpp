// Random bytes never crash any tokenizer; byte-level BPE round-trips valid UTF-8; and the
// throughput on 1 MB of mixed text is printed (no timing assertion).
#include <gtest/gtest.h>

#include <ctime>
#include <random>

#include "common/test_data.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vectors.h"

using minfer::test::shared_path;

namespace {

struct Loaded {
  std::string name;
  std::unique_ptr<minfer::gguf::File> file;
  std::unique_ptr<minfer::tok::Tokenizer> tok;
};

std::vector<Loaded> load_all() {
  std::vector<Loaded> out;
  for (const char* v : {"gpt-2", "llama-spm", "phi-3", "deepseek-coder", "deepseek-llm", "falcon",
                        "starcoder"}) {
    Loaded l;
    l.name = v;
    l.file = minfer::gguf::File::open(shared_path(std::string("vocab/ggml-vocab-") + v + ".gguf"));
    l.tok = minfer::tok::Tokenizer::from_gguf(*l.file);
    out.push_back(std::move(l));
  }
  {
    Loaded l;
    l.name = "tiny-qwen2";
    l.file = minfer::gguf::File::open(shared_path("models/tiny-qwen2-q8_0.gguf"));
    l.tok = minfer::tok::Tokenizer::from_gguf(*l.file);
    out.push_back(std::move(l));
  }
  out.push_back({"byte-level", nullptr, minfer::tok::Tokenizer::byte_level({"<|eos|>"})});
  return out;
}

// Mostly-valid UTF-8 built from code points of every length, sometimes with special-token
// texts and whitespace runs mixed in.
std::string random_utf8(std::mt19937& rng, size_t n_cpts) {
  static const uint32_t ranges[][2] = {{0x20, 0x7E}, {0x09, 0x0D}, {0xA0, 0x2FF}, {0x370, 0x4FF},
                                       {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F6FF},
                                       {0x300, 0x36F}};
  std::string s;
  for (size_t i = 0; i < n_cpts; ++i) {
    const auto& r = ranges[rng() % 8];
    uint32_t cp = r[0] + rng() % (r[1] - r[0] + 1);
    if (rng() % 10 == 0) cp = ' ';
    if (cp < 0x80) {
      s.push_back(char(cp));
    } else if (cp < 0x800) {
      s.push_back(char(0xC0 | (cp >> 6)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(char(0xE0 | (cp >> 12)));
      s.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(char(0xF0 | (cp >> 18)));
      s.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(char(0x80 | (cp & 0x3F)));
    }
  }
  return s;
}

TEST(Fuzz, RandomBytesNeverCrash) {
  MINFER_REQUIRE_SHARED();
  auto toks = load_all();
  std::mt19937 rng(12345);
  const std::vector<std::string> extras = {"<|im_start|>", "<|endoftext|>", "<s>", "</s>",
                                           "<|eos|>", "\n\n", "   ", "\xE2\x96\x81"};
  for (int i = 0; i < 2000; ++i) {
    std::string s(rng() % 64, '\0');
    for (char& c : s) c = char(rng());
    if (i % 3 == 0) s += extras[rng() % extras.size()] + s;
    for (const auto& t : toks) {
      const bool add = rng() % 2, special = rng() % 2;
      const auto ids = t.tok->encode(s, add, special);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < t.tok->n_vocab()) << t.name;
      (void)t.tok->decode(ids);
      (void)t.tok->decode(ids, true);
    }
  }
}

// The GPT-2 code point of each byte; a byte-level vocabulary may lack some of them (falcon
// has no token for 0x0B), and then llama.cpp drops that byte.
std::string byte_cp(uint8_t b) {
  uint32_t cp = b;
  if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)) {
    uint32_t n = 256;
    for (int k = 0; k < b; ++k)
      if (!((k >= 0x21 && k <= 0x7E) || (k >= 0xA1 && k <= 0xAC) || k >= 0xAE)) ++n;
    cp = n;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(char(cp));
  } else {
    s.push_back(char(0xC0 | (cp >> 6)));
    s.push_back(char(0x80 | (cp & 0x3F)));
  }
  return s;
}

bool covers(const minfer::tok::Tokenizer& tok, const std::string& s) {
  for (char c : s)
    if (!tok.find_token(byte_cp(uint8_t(c)))) return false;
  return true;
}

TEST(Fuzz, LongRunsOfOneKindOfCharacter) {
  MINFER_REQUIRE_SHARED();
  auto toks = load_all();
  for (const std::string unit : {" ", "a", "\n", "7", "'s", "\xE4\xBD\xA0", "\xFF", "<|", " \t"}) {
    std::string s;
    while (s.size() < 200000) s += unit;
    for (const auto& t : toks) {
      const auto ids = t.tok->encode(s + "x", false, true);
      EXPECT_FALSE(ids.empty()) << t.name;
      if (t.tok->model() == "gpt2" && unit != "\xFF" && covers(*t.tok, s)) {
        std::string back;
        for (int32_t id : ids) back += t.tok->token_to_piece(id);
        EXPECT_EQ(back, s + "x") << t.name << " unit '" << unit << "'";
      }
    }
  }
}

TEST(Fuzz, ByteLevelBpeRoundTripsValidUtf8) {
  MINFER_REQUIRE_SHARED();
  auto toks = load_all();
  std::mt19937 rng(777);
  int checked = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string s = random_utf8(rng, 1 + rng() % 40);
    for (const auto& t : toks) {
      if (t.tok->model() != "gpt2" || !covers(*t.tok, s)) continue;
      ++checked;
      std::string back;
      for (int32_t id : t.tok->encode(s, false, false)) back += t.tok->token_to_piece(id);
      ASSERT_EQ(back, s) << t.name;
    }
  }
  EXPECT_GT(checked, 5000);
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

TEST(Fuzz, ThroughputOnOneMegabyte) {
  MINFER_REQUIRE_SHARED();
  auto toks = load_all();
  std::mt19937 rng(99);
  std::string text;
  const std::string inp = minfer::test::read_file(shared_path("vocab/ggml-vocab-gpt-2.gguf.inp"));
  while (text.size() < (1u << 20)) {
    text += inp;
    text += random_utf8(rng, 2000);
  }
  text.resize(1u << 20);
  for (const auto& t : toks) {
    // Thread CPU time: the machine is shared, so wall time says little.
    const double t0 = cpu_seconds();
    const auto ids = t.tok->encode(text, false, true);
    const double s = cpu_seconds() - t0;
    std::printf("%-16s 1 MiB -> %8zu tokens in %.3f s CPU (%.1f MB/s)\n", t.name.c_str(), ids.size(),
                s, 1.048576 / s);
    EXPECT_FALSE(ids.empty());
  }
}

}  // namespace
