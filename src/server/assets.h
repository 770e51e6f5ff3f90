// The viz front-end (viz/dist/*, bundled by scripts/build-viz.sh) embedded in the binary at
// build time by embed_assets.cmake, so that the page works offline from one executable.
// A build without the bundle still links: it has no assets and the server answers "/" with a
// page that says how to build them.
#pragma once
#include <cstddef>
#include <string_view>

namespace minfer::server {

struct Asset {
  std::string_view path;  // "/index.html", "/app.js"
  std::string_view mime;
  const unsigned char* data;
  size_t size;
};

// nullptr when there is no such asset.
const Asset* find_asset(std::string_view path);
bool assets_present();

}  // namespace minfer::server
