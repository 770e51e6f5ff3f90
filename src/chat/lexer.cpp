#include "chat/lexer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "chat/eval_error.h"
#include "chat/number_text.h"
#include "chat/utf8.h"

namespace minfer::chat {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string rstrip_ws(const std::string& s) { return utf8::strip(s, false, true, nullptr); }
std::string lstrip_ws(const std::string& s) { return utf8::strip(s, true, false, nullptr); }

class Lexer {
 public:
  Lexer(std::string src, const TemplateOptions& o) : s_(std::move(src)), opts_(o) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool strip_next = false;  // the previous tag ended with '-'
    while (pos < s_.size()) {
      const size_t at = find_tag(pos);
      std::string text = s_.substr(pos, at - pos);
      const int text_line = line_at(pos);
      if (strip_next) text = lstrip_ws(text);
      strip_next = false;
      if (at == s_.size()) {
        emit_text(std::move(text), text_line);
        break;
      }
      const char kind = s_[at + 1];  // '{', '%' or '#'
      const char mod = at + 2 < s_.size() ? s_[at + 2] : '\0';
      if (mod == '-') {
        text = rstrip_ws(text);
      } else if (mod != '+' && kind != '{' && opts_.lstrip_blocks) {
        lstrip_line(text, pos);
      }
      emit_text(std::move(text), text_line);
      size_t p = at + 2 + ((mod == '-' || (mod == '+' && kind != '{')) ? 1 : 0);
      if (kind == '#') {
        pos = comment(at, p, strip_next);
      } else if (kind == '{') {
        pos = expression(p, Tok::VarBegin, strip_next, at);
      } else {
        pos = block(p, strip_next, at);
      }
    }
    Token eof;
    eof.type = Tok::Eof;
    eof.line = line_at(s_.size());
    out_.push_back(eof);
    return std::move(out_);
  }

 private:
  std::string s_;
  TemplateOptions opts_;
  std::vector<Token> out_;
  std::vector<size_t> line_starts_;

  // lstrip_blocks: a block tag preceded on its line by whitespace only takes that whitespace
  // away. `text` starts at source offset `start`.
  void lstrip_line(std::string& text, size_t start) const {
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    const bool line_starting = start == 0 || s_[start - 1] == '\n';
    if ((l_pos > 0 || line_starting) && l_pos < text.size() &&
        std::all_of(text.begin() + long(l_pos), text.end(), [](char c) { return is_ws(c); }))
      text.resize(l_pos);
  }

  [[noreturn]] void error(size_t pos, const std::string& msg) {
    throw TemplateError(line_at(pos), msg);
  }

  int line_at(size_t pos) {
    if (line_starts_.empty()) {
      line_starts_.push_back(0);
      for (size_t i = 0; i < s_.size(); ++i)
        if (s_[i] == '\n') line_starts_.push_back(i + 1);
    }
    return int(std::upper_bound(line_starts_.begin(), line_starts_.end(), pos) -
               line_starts_.begin());
  }

  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < s_.size(); ++i)
      if (s_[i] == '{' && (s_[i + 1] == '{' || s_[i + 1] == '%' || s_[i + 1] == '#')) return i;
    return s_.size();
  }

  void emit_text(std::string text, int line) {
    if (text.empty()) return;
    Token t;
    t.type = Tok::Text;
    t.text = std::move(text);
    t.line = line;
    out_.push_back(std::move(t));
  }

  void emit(Tok type, size_t pos, std::string text = {}) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.line = line_at(pos);
    out_.push_back(std::move(t));
  }

  // After a block or comment end: trim_blocks drops one newline, '-' strips all whitespace.
  size_t after_block_end(size_t p, char mod, bool& strip_next) {
    if (mod == '-') strip_next = true;
    else if (mod != '+' && opts_.trim_blocks && p < s_.size() && s_[p] == '\n') ++p;
    return p;
  }

  size_t comment(size_t start, size_t p, bool& strip_next) {
    const size_t end = s_.find("#}", p);
    if (end == std::string::npos) error(start, "unclosed comment (missing '#}')");
    const char mod = end > p ? s_[end - 1] : '\0';
    return after_block_end(end + 2, mod, strip_next);
  }

  size_t skip_ws(size_t p) const {
    while (p < s_.size() && is_ws(s_[p])) ++p;
    return p;
  }

  bool is_raw_start(size_t p, size_t& after) {
    p = skip_ws(p);
    if (s_.compare(p, 3, "raw") != 0 || (p + 3 < s_.size() && is_name_char(s_[p + 3])))
      return false;
    after = skip_ws(p + 3);
    return true;
  }

  size_t block(size_t p, bool& strip_next, size_t start) {
    size_t q;
    if (is_raw_start(p, q)) return raw(q, start, strip_next);
    return expression(p, Tok::BlockBegin, strip_next, start);
  }

  // {% raw %}...{% endraw %}: the text in between is output verbatim.
  size_t raw(size_t p, size_t start, bool& strip_next) {
    bool strip_body = false;
    if (s_.compare(p, 3, "-%}") == 0) {
      strip_body = true;
      p += 3;
    } else if (s_.compare(p, 2, "%}") == 0) {
      p += 2;
    } else {
      error(start, "expected '%}' after 'raw'");
    }
    for (size_t i = p; (i = s_.find("{%", i)) != std::string::npos; i += 2) {
      size_t j = i + 2;
      const char open_mod = j < s_.size() ? s_[j] : '\0';
      if (open_mod == '-' || open_mod == '+') ++j;
      j = skip_ws(j);
      if (s_.compare(j, 6, "endraw") != 0) continue;
      j = skip_ws(j + 6);
      char close_mod = '\0';
      if (j < s_.size() && (s_[j] == '-' || s_[j] == '+')) close_mod = s_[j++];
      if (s_.compare(j, 2, "%}") != 0) continue;
      std::string body = s_.substr(p, i - p);
      if (strip_body) body = lstrip_ws(body);
      if (open_mod == '-') {
        body = rstrip_ws(body);
      } else if (open_mod != '+' && opts_.lstrip_blocks) {
        lstrip_line(body, p);
      }
      emit_text(std::move(body), line_at(p));
      return after_block_end(j + 2, close_mod, strip_next);
    }
    error(start, "unclosed raw block (missing '{% endraw %}')");
  }

  size_t expression(size_t p, Tok begin, bool& strip_next, size_t start) {
    emit(begin, start);
    const bool var = begin == Tok::VarBegin;
    int depth = 0;
    while (true) {
      p = skip_ws(p);
      if (p >= s_.size())
        error(start, var ? "unclosed '{{' (missing '}}')" : "unclosed '{%' (missing '%}')");
      if (depth == 0) {
        const char* close = var ? "}}" : "%}";
        char mod = '\0';
        size_t q = p;
        if (s_[q] == '-' || (!var && s_[q] == '+')) mod = s_[q++];
        if (s_.compare(q, 2, close) == 0) {
          emit(var ? Tok::VarEnd : Tok::BlockEnd, p);
          q += 2;
          if (var) {
            if (mod == '-') strip_next = true;
            return q;
          }
          return after_block_end(q, mod, strip_next);
        }
      }
      const char c = s_[p];
      if (is_name_start(c)) {
        size_t e = p;
        while (e < s_.size() && is_name_char(s_[e])) ++e;
        emit(Tok::Name, p, s_.substr(p, e - p));
        p = e;
      } else if (is_digit(c)) {
        p = number(p);
      } else if (c == '\'' || c == '"') {
        p = string(p);
      } else {
        static const char* const ops[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/",
                                          "%", "~", "<", ">", "=", ".", ",", ":", "|", "(",
                                          ")", "[", "]", "{", "}", ";"};
        const char* op = nullptr;
        for (const char* o : ops)
          if (s_.compare(p, std::strlen(o), o) == 0) {
            op = o;
            break;
          }
        if (!op) error(p, std::string("unexpected character '") + c + "'");
        if (*op == '(' || *op == '[' || *op == '{') ++depth;
        if ((*op == ')' || *op == ']' || *op == '}') && depth > 0) --depth;
        emit(Tok::Op, p, op);
        p += std::strlen(op);
      }
    }
  }

  size_t number(size_t p) {
    const size_t start = p;
    auto digits = [&](size_t q) {
      while (q < s_.size() && (is_digit(s_[q]) || (s_[q] == '_' && q + 1 < s_.size() && is_digit(s_[q + 1])))) ++q;
      return q;
    };
    // 0x / 0o / 0b integers, as Jinja2 3 reads them (underscores between digits too).
    if (s_[p] == '0' && p + 2 < s_.size()) {
      const char k = char(s_[p + 1] | 0x20);
      const int base = k == 'x' ? 16 : k == 'o' ? 8 : k == 'b' ? 2 : 0;
      const auto digit = [&](size_t q) {
        const int d = q < s_.size() ? hexval(s_[q]) : -1;
        return d >= 0 && d < base;
      };
      if (base && (digit(p + 2) || (s_[p + 2] == '_' && digit(p + 3)))) {
        size_t q = p + 2;
        while (q < s_.size() && (digit(q) || (s_[q] == '_' && digit(q + 1)))) ++q;
        const std::string_view text = std::string_view(s_).substr(start, q - start);
        std::optional<int64_t> v;
        try {
          v = parse_int(text, base);
        } catch (const EvalError&) {  // past 64 bits
        }
        if (!v) error(start, "integer literal out of range: " + std::string(text));
        Token t;
        t.line = line_at(start);
        t.text = std::string(text);
        t.type = Tok::Int;
        t.ival = *v;
        out_.push_back(std::move(t));
        return q;
      }
    }
    p = digits(p);
    bool is_float = false;
    if (p + 1 < s_.size() && s_[p] == '.' && is_digit(s_[p + 1])) {
      is_float = true;
      p = digits(p + 1);
    }
    if (p < s_.size() && (s_[p] == 'e' || s_[p] == 'E')) {
      size_t q = p + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && is_digit(s_[q])) {
        is_float = true;
        p = digits(q);
      }
    }
    std::string text;
    for (size_t i = start; i < p; ++i)
      if (s_[i] != '_') text += s_[i];
    Token t;
    t.line = line_at(start);
    t.text = text;
    if (is_float) {
      t.type = Tok::Float;
      // As Python's float(): out of range is inf (or 0 for underflow), not an error.
      t.fval = std::strtod(text.c_str(), nullptr);
    } else {
      t.type = Tok::Int;
      try {
        t.ival = std::stoll(text);
      } catch (const std::exception&) {
        error(start, "integer literal out of range: " + text);
      }
    }
    out_.push_back(std::move(t));
    return p;
  }

  static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Python's unicode-escape decoding of the literal's body.
  size_t string(size_t p) {
    const char quote = s_[p];
    const size_t start = p++;
    std::string v;
    while (true) {
      if (p >= s_.size()) error(start, "unterminated string literal");
      const char c = s_[p];
      if (c == quote) break;
      if (c != '\\') {
        v += c;
        ++p;
        continue;
      }
      if (p + 1 >= s_.size()) error(start, "unterminated string literal");
      const char e = s_[p + 1];
      p += 2;
      switch (e) {
        case '\n': break;
        case '\\': v += '\\'; break;
        case '\'': v += '\''; break;
        case '"': v += '"'; break;
        case 'a': v += '\a'; break;
        case 'b': v += '\b'; break;
        case 'f': v += '\f'; break;
        case 'n': v += '\n'; break;
        case 'r': v += '\r'; break;
        case 't': v += '\t'; break;
        case 'v': v += '\v'; break;
        case 'x': case 'u': case 'U': {
          const int n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          char32_t cp = 0;
          for (int k = 0; k < n; ++k) {
            const int h = p < s_.size() ? hexval(s_[p]) : -1;
            if (h < 0) error(start, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + char32_t(h);
            ++p;
          }
          if (cp > 0x10FFFF) error(start, "invalid \\U escape in string literal");
          utf8::append(v, cp);
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t cp = char32_t(e - '0');
            for (int k = 0; k < 2 && p < s_.size() && s_[p] >= '0' && s_[p] <= '7'; ++k)
              cp = cp * 8 + char32_t(s_[p++] - '0');
            utf8::append(v, cp);
          } else {
            v += '\\';
            v += e;
          }
      }
    }
    Token t;
    t.type = Tok::String;
    t.text = std::move(v);
    t.line = line_at(start);
    out_.push_back(std::move(t));
    return p + 1;
  }
};

std::string normalize_source(const std::string& src, const TemplateOptions& opts) {
  std::string s;
  s.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      s += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      s += src[i];
    }
  }
  if (!opts.keep_trailing_newline && !s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::vector<Token> tokenize(const std::string& source, const TemplateOptions& opts) {
  return Lexer(normalize_source(source, opts), opts).run();
}

}  // namespace minfer::chat
