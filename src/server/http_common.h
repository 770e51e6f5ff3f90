// What minfer's two HTTP servers (`minfer viz`, `minfer serve`) share: binding with a clear
// error, the base URL, the DNS-rebinding guard of a server bound to a loopback address, and
// which web pages may read its responses (CORS).
#pragma once
#include <exception>
#include <string>

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace minfer::server {

// Binds `host:port` (port 0: any free port) and returns the port; Error naming `who` when the
// address cannot be bound.
int bind_http(httplib::Server& s, const std::string& host, int port, const char* who);

// "http://HOST:PORT/" ([HOST] for IPv6).
std::string http_url(const std::string& host, int port);

// What a handler threw, for a 500 response ("internal error" for a non-std exception).
std::string exception_message(std::exception_ptr ep);

// On a loopback address a request must also name a loopback host: a web page elsewhere that
// rebinds its DNS name to 127.0.0.1 cannot then drive the server from a browser. True when
// `req` may proceed (always, for a server bound to another address).
bool host_header_allowed(const std::string& bind_host, const httplib::Request& req);
inline constexpr const char* kHostRefused =
    "the Host header must name this machine (127.0.0.1, localhost or [::1])";

// The Access-Control-Allow-Origin of a response to a page from `origin` (the request's Origin
// header) under llama-server's --cors-origins setting: "*" (any page: its default), "localhost"
// (pages served from this machine), "none", or a comma-separated list of origins (the page's own
// when it is one of them). Empty: no header, so a browser keeps the response from the page.
std::string cors_allow_origin(const std::string& setting, const std::string& origin);

}  // namespace minfer::server
