// AdmissionControl on a fake clock: the rate is measured only while the workers are
// saturated; a request that could not finish by its deadline, or that would make an admitted
// one miss its own, is refused at once; what it leaves, and a request alone, is admitted.
#include "gateway/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>

#include "gateway/least_tokens.h"

namespace stamen::gateway {
namespace {

using Clock = AdmissionControl::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Keys: any distinct addresses.
const int kKeys[64] = {};
const void* Key(int i) { return &kKeys[i]; }

TEST(AdmissionControlTest, MeasuresTheRateWhileSaturatedAndRefusesWhatCannotFinishInTime) {
  AdmissionControl admission(/*saturation_tokens=*/4000, /*headroom=*/1.0);
  const Clock::time_point start{};
  // Unmeasured: a request alone is admitted whatever its size; more only within saturation.
  EXPECT_EQ(admission.Admit(Key(0), 100'000, start + seconds(60), start), "");
  EXPECT_EQ(admission.Admit(Key(1), 2'000, start + seconds(60), start), "");
  EXPECT_NE(admission.Admit(Key(2), 100'000, start + seconds(60), start), "");
  admission.Release(Key(1));
  // 10,000 tokens a second for 3 s, while saturated: the first chunk opens the window.
  for (int step = 1; step <= 31; ++step) admission.Computed(Key(0), 1'000, start + milliseconds(100 * step));
  EXPECT_NEAR(admission.rate(), 10'000, 1);
  // 69,000 tokens left: 6.9 s. A request of 100,000 needs its own 100,000 and 69,000 beside it:
  // 16.9 s. Due in 16 s: refused at once; due in 20 s: admitted.
  const Clock::time_point now = start + milliseconds(3100);
  const std::string refusal = admission.Admit(Key(2), 100'000, now + seconds(16), now);
  EXPECT_NE(refusal.find("could not finish within its deadline"), std::string::npos) << refusal;
  // Asked before tokenizing (a lower bound of the tokens): the same answer, and nothing admitted.
  EXPECT_EQ(admission.Refusal(100'000, now + seconds(16), now), refusal);
  EXPECT_EQ(admission.Refusal(100'000, now + seconds(20), now), "");
  EXPECT_EQ(admission.RetryAfterSeconds(), 7);  // still only request 0's 69,000 tokens
  EXPECT_EQ(admission.Admit(Key(2), 100'000, now + seconds(20), now), "");
  // A small one (1,000 tokens: 3,000 with its share of the two beside it, 0.3 s) is admitted
  // even when due in a second; but not when it would make request 0 (due at 60 s) late, which
  // it cannot here.
  EXPECT_EQ(admission.Admit(Key(3), 1'000, now + seconds(1), now), "");
  // Request 2 is due in 20 s and has 100,000 left: another 100,000 beside it, due in 60 s,
  // would make it finish after 100,000 + 69,000 + 1,000 + 100,000 = 27 s: refused for its sake.
  const std::string others = admission.Admit(Key(4), 100'000, now + seconds(60), now);
  EXPECT_NE(others.find("already queued miss their deadlines"), std::string::npos) << others;
  EXPECT_EQ(admission.RetryAfterSeconds(), 17);  // 170,000 tokens admitted at 10,000 a second
  // Below saturation (what is left is the clients' pace, not the workers' rate) nothing is measured.
  admission.Release(Key(0));
  admission.Release(Key(2));
  admission.Computed(Key(3), 1'000, now + seconds(10));
  EXPECT_NEAR(admission.rate(), 10'000, 1);
}

// When the workers slow down after admission (other load on the machine), the youngest admitted
// request is given up as soon as the rate says an admitted one would miss its deadline.
TEST(AdmissionControlTest, ShedsTheYoungestWhenTheWorkersSlowDown) {
  AdmissionControl admission(/*saturation_tokens=*/4000);
  admission.SeedRate(10'000);
  const Clock::time_point start{};
  ASSERT_EQ(admission.Admit(Key(0), 50'000, start + seconds(10), start), "");
  ASSERT_EQ(admission.Admit(Key(1), 20'000, start + seconds(10), start), "");
  // 4,000 tokens a second: after 1 s the rate is 7,000 (half the seed, half the sample), and
  // request 0 would need (45,000 + 20,000) / 7,000 = 9.3 s of the 8.75 s left.
  std::vector<const void*> shed;
  for (int step = 1; step <= 5; ++step) {
    shed = admission.Computed(Key(0), 1'000, start + milliseconds(250 * step));
    if (step < 5) {
      EXPECT_TRUE(shed.empty()) << step;
    }
  }
  EXPECT_NEAR(admission.rate(), 7'000, 1);
  EXPECT_EQ(shed, std::vector<const void*>{Key(1)});
  EXPECT_EQ(admission.RetryAfterSeconds(), 7);  // 45,000 left at 7,000 a second
}

// A body that passed with its lower bound holds it while it is tokenized: the bodies that
// arrive meanwhile are counted against it and refused before they are tokenized (without it, at
// 16 clients all 17 bodies were tokenized and 7 refused only after). A reservation is not work
// at the workers: it is neither in Retry-After nor measured; released, it leaves no trace.
TEST(AdmissionControlTest, AReservationCountsAgainstLaterRequestsUntilReleased) {
  AdmissionControl admission(/*saturation_tokens=*/4000, /*headroom=*/1.0);
  admission.SeedRate(10'000);
  const Clock::time_point now{};
  // Alone, any reservation passes; beside it, 100,000 more due in 15 s would need 20 s.
  EXPECT_EQ(admission.Reserve(Key(0), 100'000, now + seconds(60), now), "");
  EXPECT_NE(admission.Refusal(100'000, now + seconds(15), now), "");
  EXPECT_NE(admission.Reserve(Key(1), 100'000, now + seconds(15), now), "");
  EXPECT_EQ(admission.RetryAfterSeconds(), 1);  // nothing sent to the workers yet
  // A refused reservation holds nothing: a small request beside the first still passes.
  EXPECT_EQ(admission.Reserve(Key(1), 1'000, now + seconds(15), now), "");
  admission.Release(Key(1));
  // The first is tokenized: its reservation goes, its real count is admitted in its place.
  admission.Release(Key(0));
  EXPECT_EQ(admission.Refusal(100'000, now + seconds(15), now), "");
  EXPECT_EQ(admission.Admit(Key(2), 120'000, now + seconds(60), now), "");
  EXPECT_EQ(admission.RetryAfterSeconds(), 12);
  admission.Release(Key(2));
  EXPECT_EQ(admission.Refusal(1'000'000, now + seconds(15), now), "");  // alone again
}

// The lower bound counts words (runs between ASCII whitespace), capped at the model's length;
// token ids count as themselves.
TEST(LeastTokensTest, CountsWordsCappedAtTheModelLength) {
  EXPECT_EQ(LeastTokens("", 512), 0);
  EXPECT_EQ(LeastTokens("  \t\n ", 512), 0);
  EXPECT_EQ(LeastTokens("one", 512), 1);
  EXPECT_EQ(LeastTokens("  two\twords\n", 512), 2);
  EXPECT_EQ(LeastTokens("unaffable, isn't it?", 512), 3);
  EXPECT_EQ(LeastTokens("東京は日本の首都です", 512), 1);  // no ASCII space: one run, still ≤ its tokens
  EXPECT_EQ(LeastTokens("a b c d e f", 4), 4);
  EXPECT_EQ(LeastTokens("a b c d e f", 0), 6);
  EXPECT_EQ(LeastInputTokens(Input(std::vector<int32_t>{101, 7592, 102}), 512), 3);
  EXPECT_EQ(LeastInputTokens(Input(std::vector<int32_t>{101, 7592, 102}), 2), 2);
}

// Texts long enough for the counter's 64- and 16-byte blocks, with words across their edges and
// every kind of ASCII whitespace (and UTF-8 bytes, which are not spaces), against a plain count.
TEST(LeastTokensTest, LongTextsCountAsAPlainWalkDoes) {
  const std::string alphabet = std::string("ab \t\n\v\f\rxy  ") + "\xE3\x81\x82";
  uint32_t state = 12345;
  for (size_t length = 0; length < 300; ++length) {
    std::string text(length, 'a');
    for (char& byte : text) {
      state = state * 1664525u + 1013904223u;
      byte = alphabet[(state >> 16) % alphabet.size()];
    }
    int64_t words = 0;
    bool in_word = false;
    for (const char byte : text) {
      const bool space = std::string_view(" \t\n\v\f\r").find(byte) != std::string_view::npos;
      words += !space && !in_word;
      in_word = !space;
    }
    EXPECT_EQ(LeastTokens(text, 0), words) << length;
    for (const int64_t cap : {1, 3, 17, 40}) EXPECT_EQ(LeastTokens(text, cap), std::min(words, cap)) << length;
  }
}

}  // namespace
}  // namespace stamen::gateway
