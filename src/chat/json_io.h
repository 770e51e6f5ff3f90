// JSON <-> Value: variables in, and the `tojson` filter out (Python's json.dumps).
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>

#include "chat/value.h"

namespace minfer::chat {

Value from_json(const nlohmann::ordered_json& j);

// json.dumps(v, ensure_ascii=False, indent=indent (<0: None), separators=None, sort_keys=False)
std::string to_json(const Value& v, int indent = -1);

}  // namespace minfer::chat
