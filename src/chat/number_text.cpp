#include "chat/number_text.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>

#include "chat/eval_error.h"

namespace minfer::chat {

std::optional<int64_t> parse_int(std::string_view t, int base) {
  size_t i = 0;
  bool neg = false;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) neg = t[i++] == '-';
  if (t.size() - i >= 2 && t[i] == '0') {
    const char p = char(std::tolower(static_cast<unsigned char>(t[i + 1])));
    const int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (pb && (base == 0 || base == pb)) {
      base = pb;
      i += 2;
      if (i < t.size() && t[i] == '_') ++i;  // 0x_1f is Python's too
    }
  }
  if (base == 0) {
    base = 10;
    // Base 0 takes no leading zeros in a nonzero decimal.
    if (t.size() - i > 1 && t[i] == '0' && t.find_first_not_of("0_", i) != std::string_view::npos) return std::nullopt;
  }
  uint64_t acc = 0;
  bool any = false, prev_us = true;
  for (; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '_') {
      if (prev_us) return std::nullopt;
      prev_us = true;
      continue;
    }
    const int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                  : std::isalpha(static_cast<unsigned char>(c)) ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                                                                : 99;
    if (d >= base) return std::nullopt;
    if (acc > (uint64_t(INT64_MAX) + 1 - uint64_t(d)) / uint64_t(base))
      eval_fail(std::string(t) + " does not fit 64 bits");
    acc = acc * uint64_t(base) + uint64_t(d);
    any = true;
    prev_us = false;
  }
  if (!any || prev_us) return std::nullopt;
  if (!neg && acc > uint64_t(INT64_MAX)) eval_fail(std::string(t) + " does not fit 64 bits");
  return neg ? int64_t(0 - acc) : int64_t(acc);
}

std::optional<double> parse_float(std::string_view t) {
  std::string clean;
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean += t[i++];
  std::string word;
  for (size_t k = i; k < t.size(); ++k) word += char(std::tolower(static_cast<unsigned char>(t[k])));
  if (word == "inf" || word == "infinity" || word == "nan") return std::strtod((clean + word).c_str(), nullptr);
  const auto digits = [&](bool& any) {
    bool prev_digit = false;
    for (; i < t.size(); ++i) {
      if (std::isdigit(static_cast<unsigned char>(t[i]))) {
        clean += t[i];
        prev_digit = any = true;
      } else if (t[i] == '_' && prev_digit && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i + 1]))) {
        prev_digit = false;
      } else {
        break;
      }
    }
  };
  bool int_part = false, frac_part = false;
  digits(int_part);
  if (i < t.size() && t[i] == '.') {
    clean += t[i++];
    digits(frac_part);
  }
  if (!int_part && !frac_part) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    clean += t[i++];
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) clean += t[i++];
    bool exp = false;
    digits(exp);
    if (!exp) return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  return std::strtod(clean.c_str(), nullptr);
}

}  // namespace minfer::chat
