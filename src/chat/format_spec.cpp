#include "chat/format_spec.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "chat/eval_error.h"
#include "chat/render_budget.h"
#include "chat/utf8.h"

namespace minfer::chat {
namespace {

constexpr size_t kMaxWidth = 1 << 16;  // past this a field is hostile, not layout

struct Spec {
  std::string fill = " ";
  char align = 0;  // 0: the type's default
  char sign = '-';
  bool alt = false;
  size_t width = 0;
  char grouping = 0;
  std::optional<int> precision;
  char type = 0;
};

[[noreturn]] void invalid(std::string_view spec) {
  eval_fail("Invalid format specifier '" + std::string(spec) + "'");
}

size_t digits_at(std::string_view s, size_t& i, std::string_view spec) {
  size_t n = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    n = n * 10 + size_t(s[i++] - '0');
    if (n > kMaxWidth) eval_fail("format width or precision too big in '" + std::string(spec) + "'");
  }
  return n;
}

Spec parse(std::string_view s) {
  Spec sp;
  size_t i = 0;
  const auto is_align = [](char c) { return c == '<' || c == '>' || c == '=' || c == '^'; };
  // The fill is one character, which may take several bytes.
  size_t first = 1;
  while (first < s.size() && (static_cast<unsigned char>(s[first]) & 0xC0) == 0x80) ++first;
  if (first < s.size() && is_align(s[first])) {
    sp.fill = std::string(s.substr(0, first));
    sp.align = s[first];
    i = first + 1;
  } else if (!s.empty() && is_align(s[0])) {
    sp.align = s[0];
    i = 1;
  }
  if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) sp.sign = s[i++];
  if (i < s.size() && s[i] == '#') {
    sp.alt = true;
    ++i;
  }
  if (i < s.size() && s[i] == '0') {
    if (!sp.align) {
      sp.fill.assign(1, '0');
      sp.align = '=';
    }
    ++i;
  }
  sp.width = digits_at(s, i, s);
  if (i < s.size() && (s[i] == ',' || s[i] == '_')) sp.grouping = s[i++];
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || s[i] < '0' || s[i] > '9') eval_fail("Format specifier missing precision");
    sp.precision = int(digits_at(s, i, s));
  }
  if (i < s.size()) sp.type = s[i++];
  if (i != s.size()) invalid(s);
  return sp;
}

// Digits grouped from the right by `sep` every `every`.
std::string group(const std::string& digits, char sep, size_t every) {
  if (!sep) return digits;
  std::string out;
  const size_t n = digits.size();
  for (size_t k = 0; k < n; ++k) {
    if (k && (n - k) % every == 0) out += sep;
    out += digits[k];
  }
  return out;
}

std::string pad(const std::string& body, const Spec& sp, char default_align, const std::string& sign_part = {}) {
  return pad_field(body, sp.width, sp.align ? sp.align : default_align, sp.fill, sign_part);
}

std::string sign_of(bool negative, char sign) {
  if (negative) return "-";
  return sign == '+' ? "+" : sign == ' ' ? " " : "";
}

std::string format_float(double x, const Spec& sp);

std::string format_int(int64_t x, const Spec& sp) {
  if (sp.type && std::string_view("eEfFgG%").find(sp.type) != std::string_view::npos) return format_float(double(x), sp);
  if (sp.precision) eval_fail("Precision not allowed in integer format specifier");
  const bool neg = x < 0;
  const uint64_t mag = neg ? 0 - uint64_t(x) : uint64_t(x);
  std::string digits, prefix;
  size_t every = 3;
  switch (sp.type) {
    case 'c': {
      if (sp.sign != '-' || sp.alt) eval_fail("Sign and alternate form not allowed with integer format specifier 'c'");
      if (x < 0 || x > 0x10FFFF) eval_fail("%c arg not in range(0x110000)");
      std::string c;
      utf8::append(c, char32_t(x));
      return pad(c, sp, '<');
    }
    case 'b':
    case 'o':
    case 'x':
    case 'X': {
      const unsigned base = sp.type == 'b' ? 2 : sp.type == 'o' ? 8 : 16;
      const char* hex = sp.type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
      uint64_t m = mag;
      do {
        digits.insert(digits.begin(), hex[m % base]);
        m /= base;
      } while (m);
      if (sp.alt) prefix = std::string("0") + sp.type;
      every = 4;
      if (sp.grouping == ',') eval_fail(std::string("Cannot specify ',' with '") + sp.type + "'.");
      break;
    }
    case 0:
    case 'd':
    case 'n': digits = std::to_string(mag); break;
    default: eval_fail(std::string("Unknown format code '") + sp.type + "' for object of type 'int'");
  }
  const std::string head = sign_of(neg, sp.sign) + prefix;
  if (sp.align == '=' && sp.fill == "0" && sp.grouping) {
    // Zero padding takes the grouping too: 1234 with '010,' is 00,001,234.
    while (utf8::length(head) + group(digits, sp.grouping, every).size() < sp.width) digits.insert(digits.begin(), '0');
    return head + group(digits, sp.grouping, every);
  }
  return pad(group(digits, sp.grouping, every), sp, '>', head);
}

std::string format_float(double x, const Spec& sp) {
  const bool neg = std::signbit(x) && !std::isnan(x);
  const double mag = std::fabs(x);
  const int prec = sp.precision.value_or(6);
  char type = sp.type;
  std::string body;
  if (std::isinf(mag) || std::isnan(mag)) {
    body = std::isnan(mag) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') body = std::isnan(mag) ? "NAN" : "INF";
    if (type == '%') body += '%';
  } else {
    std::string out(size_t(prec) + 400, '\0');  // the digits of a double with prec decimals
    char* buf = out.data();
    const size_t cap = out.size();
    switch (type) {
      case 'f':
      case 'F': std::snprintf(buf, cap, sp.alt ? "%#.*f" : "%.*f", prec, mag); break;
      case 'e':
      case 'E':
      case 'g':
      case 'G': {
        const char f[] = {'%', '.', '*', type, 0};
        const char fa[] = {'%', '#', '.', '*', type, 0};
        std::snprintf(buf, cap, sp.alt ? fa : f, prec, mag);
        break;
      }
      case '%': std::snprintf(buf, cap, sp.alt ? "%#.*f%%" : "%.*f%%", prec, mag * 100); break;
      case 0:
      case 'n':
        if (!sp.precision && type == 0) {
          std::snprintf(buf, cap, "%s", float_repr(mag).c_str());
        } else {
          // Like 'g', but a fixed-point result keeps a digit past the point (Python's None type).
          std::snprintf(buf, cap, "%.*g", std::max(prec, 1), mag);
          const std::string_view b(buf);
          if (type == 0 && b.find_first_of(".e") == std::string_view::npos) std::snprintf(buf + b.size(), 3, ".0");
        }
        break;
      default: eval_fail(std::string("Unknown format code '") + type + "' for object of type 'float'");
    }
    body = buf;  // up to the NUL snprintf wrote
  }
  if (sp.grouping) {
    if (type != 0 && type != 'f' && type != 'F' && type != 'e' && type != 'E' && type != 'g' && type != 'G' && type != '%')
      eval_fail(std::string("Cannot specify '") + sp.grouping + "' with '" + type + "'.");
    const size_t end = body.find_first_not_of("0123456789");
    body = group(body.substr(0, end), sp.grouping, 3) + (end == std::string::npos ? "" : body.substr(end));
  }
  return pad(body, sp, '>', sign_of(neg, sp.sign));
}

}  // namespace

std::string pad_field(const std::string& body, size_t width, char align, const std::string& fill,
                      const std::string& sign) {
  const size_t len = utf8::length(sign) + utf8::length(body);
  if (width <= len) return sign + body;
  const size_t n = width - len;
  check_string_size(n * fill.size() + body.size());
  const auto fills = [&](size_t k) {
    std::string f;
    for (size_t j = 0; j < k; ++j) f += fill;
    return f;
  };
  switch (align) {
    case '<': return sign + body + fills(n);
    case '^': return fills(n / 2) + sign + body + fills(n - n / 2);
    case '=': return sign + fills(n) + body;
    default: return fills(n) + sign + body;
  }
}

std::string format_value(const Value& v, std::string_view spec) {
  if (spec.empty()) return to_str(v);
  const Spec sp = parse(spec);
  switch (v.kind) {
    case Value::Int: return format_int(v.i, sp);
    case Value::Bool: return format_int(v.b, sp);
    case Value::Float: return format_float(v.f, sp);
    case Value::String:
    case Value::Undefined: {
      if (sp.type && sp.type != 's')
        eval_fail(std::string("Unknown format code '") + sp.type + "' for object of type 'str'");
      if (sp.sign != '-') eval_fail("Sign not allowed in string format specifier");
      if (sp.alt) eval_fail("Alternate form (#) not allowed in string format specifier");
      if (sp.align == '=') eval_fail("'=' alignment not allowed in string format specifier");
      std::string s = to_str(v);
      if (sp.precision) {
        const auto cps = utf8::decode(s);
        if (cps.size() > size_t(*sp.precision)) s = utf8::encode({cps.begin(), cps.begin() + *sp.precision});
      }
      return pad(s, sp, '<');
    }
    default: eval_fail("unsupported format string passed to " + type_name(v) + ".__format__");
  }
}

}  // namespace minfer::chat
