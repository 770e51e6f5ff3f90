// The one exception type of minfer. Every failure a user can cause (a bad file, a bad flag,
// a prompt longer than the context) is reported by throwing Error with a message that names
// what is wrong; the CLI prints it as one line and exits non-zero.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace minfer {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

template <typename... Args>
[[noreturn]] inline void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace minfer
