// Stop strings on the byte stream, including ones split across tokens.
#include <gtest/gtest.h>

#include "runtime/stop.h"

using namespace minfer::runtime;

// Feeds the pieces one by one; returns everything released and whether a stop fired.
static std::pair<std::string, bool> feed(StopMatcher& m, const std::vector<std::string>& pieces) {
  std::string out;
  bool stopped = false;
  for (const auto& p : pieces) {
    auto r = m.push(p);
    out += r.text;
    stopped = stopped || r.stopped;
  }
  if (!stopped) out += m.flush();
  return {out, stopped};
}

TEST(Stop, NoStopStringsPassesEverythingThrough) {
  StopMatcher m({});
  auto r = m.push("hello");
  EXPECT_EQ(r.text, "hello");
  EXPECT_FALSE(r.stopped);
}

TEST(Stop, StopInsideOnePiece) {
  StopMatcher m({"END"});
  auto [out, stopped] = feed(m, {"abc", "deENDfg", "more"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "abcde");
}

TEST(Stop, StopSplitAcrossPiecesIsNeverPrinted) {
  StopMatcher m({"<|end|>"});
  auto r1 = m.push("Hello <|");
  EXPECT_EQ(r1.text, "Hello ");  // "<|" is held back
  auto r2 = m.push("en");
  EXPECT_EQ(r2.text, "");
  auto r3 = m.push("d|> tail");
  EXPECT_TRUE(r3.stopped);
  EXPECT_EQ(r3.text, "");
  EXPECT_EQ(r3.stop, "<|end|>");
  EXPECT_TRUE(m.push("x").text.empty());
}

TEST(Stop, FalseAlarmIsReleased) {
  StopMatcher m({"STOP"});
  auto [out, stopped] = feed(m, {"ST", "OK", " fine ST"});
  EXPECT_FALSE(stopped);
  EXPECT_EQ(out, "STOK fine ST");
}

TEST(Stop, HeldPrefixThatTurnsIntoAnotherMatch) {
  // "aab" with stop "ab": the held "a" is released when the next "a" arrives, then "ab" stops.
  StopMatcher m({"ab"});
  auto [out, stopped] = feed(m, {"a", "a", "b"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "a");
}

TEST(Stop, EarliestOfSeveralStopsWins) {
  StopMatcher m({"world", "lo w"});
  auto [out, stopped] = feed(m, {"hello world"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "hel");
}

TEST(Stop, Utf8StopSplitInsideACharacter) {
  // "¿" is C2 BF: a token boundary inside the stop string's first character.
  StopMatcher m({"\xC2\xBF" "fin"});
  auto [out, stopped] = feed(m, {"ok \xC2", "\xBF" "f", "in!"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "ok ");
}

TEST(Stop, ByteByByteStreamingMatchesWholeText) {
  const std::string text = "one two <stop> three";
  StopMatcher m({"<stop>"});
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  auto [out, stopped] = feed(m, bytes);
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "one two ");
}
