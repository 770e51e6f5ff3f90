#include "server/http_common.h"

#include <fmt/format.h>
#include <httplib.h>

#include "common/error.h"

namespace minfer::server {

int bind_http(httplib::Server& s, const std::string& host, int port, const char* who) {
  if (port == 0) {
    const int p = s.bind_to_any_port(host);
    if (p < 0) fail("{}: cannot bind {} (any port)", who, host);
    return p;
  }
  if (!s.bind_to_port(host, port)) fail("{}: cannot bind {}:{} (in use? try --port)", who, host, port);
  return port;
}

std::string http_url(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

std::string exception_message(std::exception_ptr ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "internal error";
}

namespace {

// "HOST[:PORT]" names this machine.
bool loopback(std::string host) {
  if (host.starts_with('[')) {
    host = host.substr(0, host.find(']') + 1);
  } else if (const size_t colon = host.find(':'); colon != std::string::npos) {
    host.resize(colon);
  }
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]";
}

}  // namespace

bool host_header_allowed(const std::string& bind_host, const httplib::Request& req) {
  if (bind_host != "127.0.0.1" && bind_host != "localhost" && bind_host != "::1") return true;
  return loopback(req.get_header_value("Host"));
}

std::string cors_allow_origin(const std::string& setting, const std::string& origin) {
  if (setting == "*") return "*";
  if (origin.empty() || setting == "none") return "";
  if (setting == "localhost") {
    const size_t scheme = origin.find("://");
    if (scheme == std::string::npos) return "";
    const std::string host = origin.substr(scheme + 3);
    return host.find('/') == std::string::npos && loopback(host) ? origin : "";
  }
  for (size_t start = 0; start <= setting.size();) {
    size_t end = setting.find(',', start);
    if (end == std::string::npos) end = setting.size();
    std::string item = setting.substr(start, end - start);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item == origin) return origin;
    start = end + 1;
  }
  return "";
}

}  // namespace minfer::server
