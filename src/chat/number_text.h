// Numbers read from text as Python reads them: the int and float filters, and the lexer's
// 0x / 0o / 0b literals.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace minfer::chat {

// Python's int(text, base): an optional sign, digits with single underscores between them, and
// for base 0 (or the prefix's own base) a 0x / 0o / 0b prefix; nullopt where Python raises.
// EvalError for a number past 64 bits.
std::optional<int64_t> parse_int(std::string_view t, int base);

// Python's float(text): decimal digits (single underscores between them), an optional fraction
// and exponent, or inf / infinity / nan in any case; no hexadecimal.
std::optional<double> parse_float(std::string_view t);

}  // namespace minfer::chat
