// Where the tests find ../shared (the read-only test data beside the repository).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace minfer::test {

// ../shared relative to the repository root, as the developers' guide fixes it.
inline std::filesystem::path shared_dir() {
  return std::filesystem::path(MINFER_SOURCE_DIR) / ".." / "shared";
}

inline std::string shared_path(const std::string& rel) { return (shared_dir() / rel).string(); }

inline bool have_shared() { return std::filesystem::is_directory(shared_dir()); }

}  // namespace minfer::test

// Skips the current test, loudly, when the shared test data is not present.
#define MINFER_REQUIRE_SHARED()                                                              \
  do {                                                                                       \
    if (!::minfer::test::have_shared()) {                                                    \
      fprintf(stderr, "\n*** SKIPPED: test data folder %s is missing ***\n\n",               \
              ::minfer::test::shared_dir().string().c_str());                                \
      GTEST_SKIP() << "../shared is missing";                                                \
    }                                                                                        \
  } while (0)
