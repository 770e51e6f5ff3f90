// libFuzzer entry point for `minfer serve`'s request parser: any body, for either endpoint,
// must either parse or throw minfer::Error (-> HTTP 400), and a parsed one must give sampler
// parameters or an Error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "server/openai_api.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto kind : {minfer::server::ApiKind::Chat, minfer::server::ApiKind::Completion}) {
    try {
      const auto r = minfer::server::parse_completion_request(body, kind);
      (void)minfer::server::sampler_params(r, {}, 0);
      (void)minfer::server::sse_data(r.messages);
    } catch (const minfer::Error&) {
    }
  }
  return 0;
}
