#include "runtime/generate.h"

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
  if (ctx.n_past() + int64_t(prompt.size()) >= n_ctx + (opts.n_predict == 0 ? 1 : 0))
    fail("prompt is {} tokens, which does not fit the context of {} tokens{} (use -c to enlarge "
         "it)",
         prompt.size(), n_ctx,
         ctx.n_past() ? fmt::format(" ({} already in use)", ctx.n_past()) : std::string());
  const int64_t n_batch = std::max<int64_t>(1, opts.n_batch);

  auto t0 = Clock::now();
  std::span<const float> logits;
  for (size_t i = 0; i < prompt.size(); i += size_t(n_batch)) {
    const size_t n = std::min(prompt.size() - i, size_t(n_batch));
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
  res.reason = StopReason::Length;
  for (int64_t i = 0; opts.n_predict < 0 || i < opts.n_predict; ++i) {
    if (opts.interrupt && opts.interrupt->load()) {
      res.reason = StopReason::Interrupted;
      break;
    }
    const auto row = logits.subspan(logits.size() - size_t(n_vocab));
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
    if (ctx.n_past() + 1 > n_ctx) {
      res.reason = StopReason::ContextFull;
      break;
    }
    const int32_t one[1] = {id};
    logits = ctx.decode(one, 1);
    ++res.n_tokens_in_kv;
    ++res.n_gen_evals;
  }
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
