#include "runtime/speculative.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "common/error.h"
#include "runtime/context.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

void DraftParams::validate() const {
  if (n_max < 0) fail("--draft-max must be >= 0, got {}", n_max);
  if (n_min < 0) fail("--draft-min must be >= 0, got {}", n_min);
  if (n_min > n_max) fail("--draft-min ({}) must not exceed --draft-max ({})", n_min, n_max);
  if (!(p_min >= 0.0f && p_min <= 1.0f)) fail("--draft-p-min must be in [0, 1], got {}", p_min);
}

std::string draft_mismatch(const tok::Tokenizer& target, const tok::Tokenizer& draft) {
  if (target.model() != draft.model())
    return fmt::format("its tokenizer is '{}', the target's '{}'", draft.model(), target.model());
  if (target.bos() != draft.bos() || target.eos() != draft.eos() ||
      target.add_bos() != draft.add_bos() || target.add_eos() != draft.add_eos())
    return fmt::format("its BOS/EOS tokens ({}/{}, added: {}/{}) are not the target's ({}/{}, added: {}/{})",
                       draft.bos(), draft.eos(), draft.add_bos(), draft.add_eos(), target.bos(),
                       target.eos(), target.add_bos(), target.add_eos());
  // llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE: padding rows at the end of a vocabulary differ
  // between sizes of one family (Qwen2.5 7B 152064, 0.5B 151936).
  const int32_t nt = target.n_vocab(), nd = draft.n_vocab();
  if (std::abs(nt - nd) > 128)
    return fmt::format("its vocabulary has {} tokens, the target's {} (at most 128 apart)", nd, nt);
  for (int32_t id = 5; id < std::min(nt, nd); ++id)
    if (target.token_text(id) != draft.token_text(id))
      return fmt::format("token {} is '{}' there, '{}' in the target", id, draft.token_text(id),
                         target.token_text(id));
  return {};
}

Drafter::Drafter(Context& ctx, DraftParams p) : ctx_(ctx), p_(p) { p_.validate(); }

// One pass keeps the 40 largest logits; after the first few thousand a logit rarely enters them.
std::pair<int32_t, double> draft_choice(std::span<const float> logits) {
  constexpr size_t kTop = 40;
  std::array<float, kTop> top;
  size_t n = 0, low = 0;  // low: where the smallest of a full `top` is
  int32_t best = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    if (x > logits[size_t(best)]) best = int32_t(i);
    if (n < kTop) {
      top[n++] = x;
      if (n == kTop) low = size_t(std::min_element(top.begin(), top.end()) - top.begin());
    } else if (x > top[low]) {
      top[low] = x;
      low = size_t(std::min_element(top.begin(), top.end()) - top.begin());
    }
  }
  const float max = logits[size_t(best)];
  if (!std::isfinite(max)) return {best, 0.0};
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(double(top[i]) - double(max));
  return {best, 1.0 / sum};
}

std::vector<int32_t> Drafter::draft(std::span<const int32_t> history, int64_t n, const DraftParams& p) {
  p.validate();
  std::vector<int32_t> out;
  if (history.empty()) return out;
  // The last drafted token is never evaluated: history and n - 1 guesses must fit.
  n = std::min<int64_t>({n, p.n_max, ctx_.n_ctx() - int64_t(history.size()) + 1});
  if (n <= 0) return out;
  // A token of the target's larger vocabulary (its padding rows) is none of the draft's.
  const int64_t n_vocab = ctx_.n_vocab();
  if (std::any_of(history.begin(), history.end(), [&](int32_t t) { return t < 0 || t >= n_vocab; })) return out;

  // What the cache shares with the history stays; the rest (at least the last token, whose
  // logits give the first guess) is evaluated.
  const size_t common = size_t(ctx_.keep_prefix(history));
  std::span<const float> logits;
  constexpr size_t kBatch = 512;
  for (size_t i = common; i < history.size(); i += kBatch)
    logits = ctx_.decode(history.subspan(i, std::min(kBatch, history.size() - i)), 1);

  while (true) {
    const auto [id, prob] = draft_choice(logits);
    if (prob < double(p.p_min)) break;
    out.push_back(id);
    if (int64_t(out.size()) >= n) break;
    const int32_t one[1] = {id};
    logits = ctx_.decode(one, 1);
  }
  return out;
}

}  // namespace minfer::runtime
