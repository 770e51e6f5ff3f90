// strftime_now(): the local clock, or the fixed time in MINFER_FAKE_NOW (for reproducible
// renders and tests). Formatting uses the "C" locale's English month and day names.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "chat/builtins.h"
#include "chat/eval_error.h"

namespace minfer::chat {

static std::tm now_tm() {
  std::tm tm{};
  const char* fake = std::getenv("MINFER_FAKE_NOW");
  if (fake && *fake) {
    int Y = 0, M = 0, D = 0, h = 0, m = 0, s = 0;
    const int n = std::sscanf(fake, "%d-%d-%d%*[T ]%d:%d:%d", &Y, &M, &D, &h, &m, &s);
    if (n < 3 || M < 1 || M > 12 || D < 1 || D > 31 || h < 0 || h > 23 || m < 0 || m > 59 ||
        s < 0 || s > 60)
      eval_fail(std::string("MINFER_FAKE_NOW is not an ISO 8601 time like 2025-03-05T09:07:00: ") + fake);
    tm.tm_year = Y - 1900;
    tm.tm_mon = M - 1;
    tm.tm_mday = D;
    tm.tm_hour = h;
    tm.tm_min = m;
    tm.tm_sec = s;
    // timegm normalises and fills in the weekday and the day of the year, with no time zone.
    std::time_t t = timegm(&tm);
    gmtime_r(&t, &tm);
    return tm;
  }
  const std::time_t t = std::time(nullptr);
  localtime_r(&t, &tm);
  return tm;
}

std::string strftime_now(const std::string& fmt) {
  const std::tm tm = now_tm();
  if (fmt.empty()) return {};
  std::string buf(fmt.size() * 8 + 64, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
  if (n == 0) eval_fail("strftime_now(): cannot format '" + fmt + "'");
  buf.resize(n);
  return buf;
}

}  // namespace minfer::chat
