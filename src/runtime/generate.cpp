#include "runtime/generate.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "runtime/context.h"
#include "runtime/sampler.h"
#include "runtime/stop.h"
#include "runtime/token_grammar.h"
#include "tokenizer/tokenizer.h"

namespace minfer::runtime {

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Eog: return "end of generation";
    case StopReason::StopString: return "stop string";
    case StopReason::Length: return "token limit";
    case StopReason::ContextFull: return "context full";
    case StopReason::Interrupted: return "interrupted";
  }
  return "?";
}

using Clock = std::chrono::steady_clock;
static double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

GenerateResult generate(Context& ctx, const tok::Tokenizer& tok, Sampler& sampler,
                        std::span<const int32_t> prompt, const GenerateOptions& opts,
                        const std::function<void(std::string_view)>& on_text) {
  GenerateResult res;
  if (prompt.empty()) fail("empty prompt: nothing to continue from");
  const int64_t n_ctx = ctx.n_ctx();
  const int64_t n_prompt = int64_t(prompt.size());
  const int64_t n_keep = std::clamp<int64_t>(opts.n_keep, 0, ctx.n_past());
  const int64_t room_needed = n_prompt + (opts.n_predict == 0 ? 0 : 1);
  if ((opts.context_shift ? n_keep : ctx.n_past()) + room_needed > n_ctx)
    fail("prompt is {} tokens, which does not fit the context of {} tokens{} (use -c to enlarge "
         "it)",
         prompt.size(), n_ctx,
         opts.context_shift && n_keep ? fmt::format(" behind the {} kept", n_keep)
         : !opts.context_shift && ctx.n_past() ? fmt::format(" ({} already in use)", ctx.n_past())
                                              : std::string());
  const int64_t n_batch = std::max<int64_t>(1, opts.n_batch);

  // The cache position where the generated tokens start (moved down by every shift).
  int64_t base = 0;
  // Room for `need` more tokens: true when there is (after shifting, where allowed).
  auto make_room = [&](int64_t need) {
    const int64_t over = ctx.n_past() + need - n_ctx;
    if (over <= 0) return true;
    if (!opts.context_shift) return false;
    const int64_t keep = std::clamp<int64_t>(opts.n_keep, 0, ctx.n_past());
    const int64_t left = ctx.n_past() - keep;
    const int64_t discard = std::min(left, std::max(opts.n_discard > 0 ? opts.n_discard : left / 2, over));
    if (discard < over) return false;
    ctx.shift(keep, discard);
    base -= discard;
    ++res.n_context_shifts;
    res.n_discarded += discard;
    return true;
  };

  auto t0 = Clock::now();
  std::span<const float> logits;
  for (size_t i = 0; i < prompt.size(); i += size_t(n_batch)) {
    const size_t n = std::min(prompt.size() - i, size_t(n_batch));
    if (!make_room(int64_t(n)))
      fail("the prompt does not fit the context of {} tokens behind the {} kept", n_ctx, n_keep);
    logits = ctx.decode(prompt.subspan(i, n), 1);
    if (opts.prefill_progress) opts.prefill_progress(double(i + n) / double(prompt.size()));
  }
  for (int32_t t : prompt) sampler.accept(t);
  res.n_prompt = int64_t(prompt.size());
  res.t_prompt_ms = ms_since(t0);

  tok::StreamDecoder dec(tok, opts.render_special, opts.keep_special);
  StopMatcher stops(opts.stop);
  bool first_text = true;
  auto emit = [&](std::string s) {
    if (first_text && !s.empty()) {
      if (opts.strip_leading_space && s.front() == ' ') s.erase(0, 1);
      first_text = s.empty();
    }
    if (s.empty()) return;
    res.text += s;
    if (on_text) on_text(s);
  };

  t0 = Clock::now();
  const int64_t n_vocab = ctx.n_vocab();
  // What the cache holds is the prompt and every sampled token but the last, plus, with a
  // drafter, the guesses decoded after it: rows[i] are the logits after drafted[i - 1] (row 0
  // after the last sampled token), and drafted[cursor] is the guess the next sample may confirm.
  base = ctx.n_past();
  res.speculative = opts.drafter != nullptr;
  const DraftParams draft_params = opts.drafter ? opts.draft_params.value_or(opts.drafter->params()) : DraftParams{};
  std::vector<int32_t> batch, drafted, history;
  size_t cursor = 0;
  res.reason = StopReason::Length;
  for (int64_t i = 0; opts.n_predict < 0 || i < opts.n_predict; ++i) {
    if (opts.interrupt && opts.interrupt->load()) {
      res.reason = StopReason::Interrupted;
      break;
    }
    const auto row = logits.subspan(cursor * size_t(n_vocab), size_t(n_vocab));
    int32_t id = sampler.sample(row);
    if (opts.grammar && !opts.grammar->allows(id)) {
      id = sampler.sample(row, [&](int32_t t) { return opts.grammar->allows(t); });
      if (id < 0) fail("grammar: no token of the vocabulary can continue the text here");
    }
    if (opts.grammar) opts.grammar->accept(id);
    if (opts.on_sample) opts.on_sample(id, row);
    sampler.accept(id);
    res.tokens.push_back(id);
    if (tok.is_eog(id) && (!opts.ignore_eog || (opts.grammar && opts.grammar->finished()))) {
      res.reason = StopReason::Eog;
      break;
    }
    auto r = stops.push(dec.push(id));
    emit(std::move(r.text));
    if (r.stopped) {
      res.reason = StopReason::StopString;
      res.stop_string = std::move(r.stop);
      break;
    }
    if (opts.n_predict >= 0 && i + 1 >= opts.n_predict) break;
    if (cursor < drafted.size() && drafted[cursor] == id) {
      // The guess holds: the token is in the cache already and its row is the next one.
      ++cursor;
      ++res.n_tokens_in_kv;
      ++res.n_draft_accepted;
      continue;
    }
    ctx.truncate(base + res.n_tokens_in_kv);  // the guesses that did not hold
    if (!make_room(1)) {
      res.reason = StopReason::ContextFull;
      break;
    }
    batch.assign(1, id);
    drafted.clear();
    cursor = 0;
    if (opts.drafter) {
      // Each guess's row gives one more sample: no more than the samples still wanted, and the
      // guesses must fit the context behind the token.
      int64_t room = n_ctx - ctx.n_past() - 1;
      if (opts.n_predict >= 0) room = std::min(room, opts.n_predict - (i + 1) - 1);
      if (room > 0 && room >= draft_params.n_min) {
        history.assign(ctx.tokens().begin(), ctx.tokens().end());
        history.push_back(id);
        drafted = opts.drafter->draft(history, room, draft_params);
        // A draft vocabulary may be larger than the target's (by padding rows).
        const auto out = std::find_if(drafted.begin(), drafted.end(), [&](int32_t t) { return t >= n_vocab; });
        drafted.erase(out, drafted.end());
        if (int64_t(drafted.size()) < draft_params.n_min) drafted.clear();
        batch.insert(batch.end(), drafted.begin(), drafted.end());
        res.n_drafted += int64_t(drafted.size());
      }
    }
    logits = ctx.decode(batch, int64_t(batch.size()));
    ++res.n_tokens_in_kv;
    ++res.n_gen_evals;
  }
  ctx.truncate(base + res.n_tokens_in_kv);
  if (res.reason != StopReason::StopString) {
    auto r = stops.push(dec.flush());
    emit(std::move(r.text));
    if (r.stopped) {
      res.reason = StopReason::StopString;
      res.stop_string = std::move(r.stop);
    } else {
      emit(stops.flush());
    }
  }
  res.t_gen_ms = ms_since(t0);
  return res;
}

}  // namespace minfer::runtime
