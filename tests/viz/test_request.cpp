// Validation of POST /generate bodies: every malformed request is an Error (HTTP 400).
#include <gtest/gtest.h>

#include "common/error.h"
#include "server/viz_server.h"

using namespace minfer::server;

TEST(GenerateRequest, ValidBodies) {
  GenerateRequest r = parse_generate_request(R"({"prompt":"Hi","n_predict":5})", 100, 10);
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_EQ(r.n_predict, 5);
  EXPECT_EQ(r.temp, 0.0f);
  r = parse_generate_request(R"({"prompt":"x","temp":0.7,"seed":42})", 100, 20);
  EXPECT_EQ(r.n_predict, 16);  // the default
  EXPECT_FLOAT_EQ(r.temp, 0.7f);
  EXPECT_EQ(r.seed, 42u);
}

TEST(GenerateRequest, MalformedBodiesNameTheProblem) {
  auto msg = [](const std::string& body) {
    try {
      parse_generate_request(body, 10, 100);
    } catch (const minfer::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(msg("{\"prompt\": ").find("not valid JSON"), std::string::npos);
  EXPECT_NE(msg("[1,2]").find("object"), std::string::npos);
  EXPECT_NE(msg("{}").find("'prompt'"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": 3})").find("'prompt'"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": ""})").find("empty"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "01234567890"})").find("limit of 10"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "a", "n_predict": 0})").find("'n_predict'"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "a", "n_predict": 101})").find("[1, 100]"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "a", "n_predict": 1.5})").find("integer"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "a", "temp": -1})").find("'temp'"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "a", "temp": "hot"})").find("'temp'"), std::string::npos);
  EXPECT_NE(msg(R"({"prompt": "a", "seed": -4})").find("'seed'"), std::string::npos);
}
