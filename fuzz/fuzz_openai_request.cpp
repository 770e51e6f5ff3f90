// libFuzzer entry point for `minfer serve`'s parsers of what comes in: any body, for either
// endpoint (and /v1/embeddings), must either parse or throw minfer::Error (-> HTTP 400), and a parsed one must give
// sampler parameters or an Error; the same bytes as a model's reply must split into text and
// tool calls in every call format without a throw, each call's arguments a JSON object, and
// into reasoning and answer with any partial split a prefix of the whole one.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "chat/reasoning.h"
#include "chat/tool_calls.h"
#include "common/error.h"
#include "server/openai_api.h"
#include "server/reply_shaper.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  using minfer::server::ApiKind;
  for (auto kind : {ApiKind::Chat, ApiKind::Completion, ApiKind::Native, ApiKind::Infill}) {
    try {
      const auto r = minfer::server::parse_completion_request(body, kind);
      (void)minfer::server::sampler_params(r, {}, 0);
      (void)minfer::server::draft_params(r, {});
      (void)minfer::server::sse_data(r.messages);
    } catch (const minfer::Error&) {
    }
  }
  for (bool native : {false, true}) {
    try {
      const auto e = minfer::server::parse_embeddings_request(body, native);
      if (e.inputs.empty() || e.embd_normalize < -1) std::abort();
    } catch (const minfer::Error&) {
    }
  }
  using minfer::chat::ToolCallFormat;
  for (auto f : {ToolCallFormat::Hermes, ToolCallFormat::Llama3Json, ToolCallFormat::MistralNemo}) {
    const auto reply = minfer::chat::parse_tool_calls(f, body);
    for (const auto& call : reply.calls)
      if (call.name.empty() || !nlohmann::ordered_json::parse(call.arguments).is_object()) std::abort();
    if (reply.calls.empty() && reply.content != body) std::abort();
    if (minfer::chat::tool_call_start(f, body) > body.size()) std::abort();
  }
  // The server's streaming view of the same bytes as a reply, fed in pieces of 1-8 bytes (the
  // sizes from the first byte): what goes out adds up to the final parts (a prefix of them
  // where the calls' parse trimmed spaces).
  const size_t step = size > 0 ? 1 + data[0] % 8 : 1;
  for (auto f : {ToolCallFormat::None, ToolCallFormat::Hermes, ToolCallFormat::Llama3Json, ToolCallFormat::MistralNemo}) {
    for (bool reasoning : {false, true}) {
      minfer::server::ReplyShaper shaper(reasoning, false, f);
      std::string text, thought;
      for (size_t i = 0; i < size; i += step) {
        const auto d = shaper.push(body.substr(i, step));
        text += d.text;
        thought += d.reasoning;
      }
      const auto fin = shaper.finish();
      text += fin.rest.text;
      thought += fin.rest.reasoning;
      if (thought != fin.parts.reasoning) std::abort();
      if (fin.calls.empty() ? text != fin.parts.content : !text.starts_with(fin.parts.content)) std::abort();
    }
  }
  for (bool opened : {false, true}) {
    const auto whole = minfer::chat::split_reasoning(body, opened);
    const auto part = minfer::chat::split_reasoning(body.substr(0, size / 2), opened, true);
    if (!whole.reasoning.starts_with(part.reasoning) || !whole.content.starts_with(part.content)) std::abort();
  }
  return 0;
}
