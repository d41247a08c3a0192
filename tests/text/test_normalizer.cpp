// text/normalizer.h: Hugging Face's normalizer steps on fixed inputs whose results are
// Unicode facts (or Python's str methods), and through a tokenizer's encode.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/thrown_message.h"
#include "text/normalizer.h"

namespace squeeze::text {
namespace {

std::string run(const std::vector<std::string>& steps, const std::string& text) { return Normalizer(steps).apply(text); }

TEST(Normalizer, UnicodeFormsAndCase) {
  const std::string decomposed = "e\xCC\x81", composed = "\xC3\xA9";  // e + U+0301, U+00E9
  EXPECT_EQ(run({"NFC"}, "caf" + decomposed), "caf" + composed);
  EXPECT_EQ(run({"NFD"}, "caf" + composed), "caf" + decomposed);
  EXPECT_EQ(run({"NFKC"}, "\xEF\xAC\x81"), "fi");  // U+FB01 ligature
  EXPECT_EQ(run({"NFKD"}, "\xE2\x91\xA0"), "1");   // U+2460 circled one
  EXPECT_EQ(run({"Lowercase"}, "\xC3\x80" "B\xCE\xA3x"), "\xC3\xA0" "b\xCF\x83x");  // ÀBΣx -> àbσx
  EXPECT_EQ(run({}, "As Is"), "As Is");
  // Invalid UTF-8 passes through the forms and case untouched (the tokenizer reads it bytewise).
  EXPECT_EQ(run({"NFC", "Lowercase"}, std::string("A\xFF")), std::string("a\xFF"));
}

TEST(Normalizer, StripReplacePrependAndSequence) {
  EXPECT_EQ(run({"Strip 1 1"}, " \t\xE3\x80\x80hi \n"), "hi");  // U+3000 ideographic space
  EXPECT_EQ(run({"Strip 1 0"}, "  hi  "), "hi  ");
  EXPECT_EQ(run({"Strip 0 1"}, "  hi  "), "  hi");
  EXPECT_EQ(run({Normalizer::replace_step(" ", "\xE2\x96\x81")}, "a b c"), "a\xE2\x96\x81" "b\xE2\x96\x81" "c");
  EXPECT_EQ(run({Normalizer::replace_step("ab", "")}, "xabyab"), "xy");
  EXPECT_EQ(run({Normalizer::prepend_step("\xE2\x96\x81")}, "hi"), "\xE2\x96\x81hi");
  EXPECT_EQ(run({Normalizer::prepend_step("_")}, ""), "");
  // In order: strip, then lowercase, then prepend.
  EXPECT_EQ(run({"Strip 1 1", "Lowercase", Normalizer::prepend_step("_")}, "  HeLLo "), "_hello");
}

TEST(Normalizer, BadStepsAreOneLineErrors) {
  for (const char* bad : {"NFX", "Strip 2 1", "Replace zz 41", "Prepend", ""}) {
    const std::string m = thrown_message([&] { Normalizer({bad}); });
    EXPECT_NE(m.find("normalizer step"), std::string::npos) << bad << ": " << m;
  }
}

}  // namespace
}  // namespace squeeze::text
