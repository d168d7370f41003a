// Quantity parsing and canonical formatting, checked against the strings Kubernetes writes.
#include "api/quantity.h"

#include <gtest/gtest.h>

#include <iterator>
#include <random>
#include <string>

namespace kvol::api {
namespace {

struct Case {
  const char* in;
  const char* canonical;
};

// Input -> the string Kubernetes serializes. Kubernetes keeps some non-canonical inputs
// verbatim ("1.441", "+1k", "5E6"; kubernetes/kubernetes#138165); kvol always writes the
// canonical form, which is what Kubernetes writes once the value has been touched.
const Case kCanonical[] = {
    {"0", "0"},
    {"00", "0"},
    {"0n", "0"},
    {"0m", "0"},
    {"0k", "0"},
    {"0Ki", "0"},
    {"0Gi", "0"},
    {"-0", "0"},
    {"1", "1"},
    {"-1", "-1"},
    {"1Ki", "1Ki"},
    {"1Mi", "1Mi"},
    {"1Gi", "1Gi"},
    {"6Ki", "6Ki"},
    {"8Ki", "8Ki"},
    {"1024Ki", "1Mi"},
    {"1024Mi", "1Gi"},
    {"307200Ki", "300Mi"},
    {"1025024Mi", "1001Gi"},
    {"1024Gi", "1Ti"},
    {"100Mi", "100Mi"},
    {"5Gi", "5Gi"},
    {"1.5Gi", "1536Mi"},
    {"0.5Gi", "512Mi"},
    {"0.5Mi", "512Ki"},
    {"1.5Ki", "1536"},
    {"0.5Ki", "512"},
    {"1.1Ki", "1126400m"},
    {"1.1Gi", "1181116006400m"},
    {"100.035Ki", "102435840m"},
    {"0.05Gi", "53687091200m"},
    {".001Ki", "1024m"},
    {".000001Ki", "1024u"},
    {".000000001Ki", "1024n"},
    {".000000000001Ki", "2n"},
    {"-.001Ki", "-1024m"},
    {"-1Gi", "-1Gi"},
    {"-1024Mi", "-1Gi"},
    {"-9.5Gi", "-9728Mi"},
    {"-9.5000000001Gi", "-10200547328107374183n"},
    {"1Ei", "1Ei"},
    {"3Ei", "3Ei"},
    {"7Ei", "7Ei"},
    {"1Ti", "1Ti"},
    {"1Pi", "1Pi"},
    {"1M", "1M"},
    {"1G", "1G"},
    {"1000M", "1G"},
    {"0.001T", "1G"},
    {"1000000k", "1G"},
    {"100m", "100m"},
    {"1000m", "1"},
    {"5000m", "5"},
    {"0.1", "100m"},
    {"0.5", "500m"},
    {"1.5", "1500m"},
    {"1.08", "1080m"},
    {"1080000000n", "1080m"},
    {"1000u", "1m"},
    {"9.01", "9010m"},
    {"1.0", "1"},
    {"1.000", "1"},
    {".5", "500m"},
    {"-.5", "-500m"},
    {".001", "1m"},
    {"1.", "1"},
    {"1.G", "1G"},
    {"1.441", "1441m"},
    {"1.000001", "1000001u"},
    {"1.000000001", "1000000001n"},
    {"10.035M", "10035k"},
    {"100.035k", "100035"},
    {"8.1k", "8100"},
    {"2.5P", "2500T"},
    {"1.01E", "1010P"},
    {"1.1E", "1100P"},
    {"1E", "1E"},
    {"9E", "9E"},
    {"1000", "1k"},
    {"1500", "1500"},
    {"1e3", "1e3"},
    {"1e+3", "1e3"},
    {"5E6", "5e6"},
    {"1E-3", "1e-3"},
    {"12e6", "12e6"},
    {"1E18", "1e18"},
    {".001e12", "1e9"},
    {"0.001e0", "1e-3"},
    {"1000e-12", "1e-9"},
    {"80e-3", "80e-3"},
    {"300e6", "300e6"},
    {"1e14", "100e12"},
    {"1e13", "10e12"},
    {"1e0", "1"},
    {"1.2e3", "1200"},
    {"1.3E+6", "1300e3"},
    {"1.40e9", "1400e6"},
    {"0.5e-1", "50e-3"},
    {"0.5e-2", "5e-3"},
    {"1.1E-9", "2e-9"},
    {"0.5e-9", "1e-9"},
    {"9.9999999999e-10", "1e-9"},
    {"1e-20", "1e-9"},
    {"1n", "1n"},
    {"3.001n", "4n"},
    {"-3.001n", "-4n"},
    {"0.9n", "1n"},
    {"0.0000000001", "1n"},
    {"0.0000000005", "1n"},
    {"0.000000000000001", "1n"},
    {"0.00000012345", "124n"},
    {"1e-9223372036854775808", "1e-9"},
    {"0.00000012354", "124n"},
    {"+1k", "1k"},
    {"+1Ki", "1Ki"},
    {"01", "1"},
    {"9223372036854775807", "9223372036854775807"},
    {"8589934591Gi", "8589934591Gi"},
};

TEST(QuantityTest, ParsesToCanonicalString) {
  for (const auto& c : kCanonical) {
    auto q = Quantity::Parse(c.in);
    ASSERT_TRUE(q.ok()) << c.in << ": " << q.status().ToString();
    EXPECT_EQ(q->ToString(), c.canonical) << "input " << c.in;
    // The canonical string reads back to the same value and prints the same.
    auto again = Quantity::Parse(q->ToString());
    ASSERT_TRUE(again.ok()) << c.canonical;
    EXPECT_EQ(*again, *q) << c.canonical;
    EXPECT_EQ(again->ToString(), c.canonical);
  }
}

TEST(QuantityTest, Errors) {
  const std::string kFormat =
      "quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  const std::string kSuffix = "unable to parse quantity's suffix";
  struct Bad {
    const char* in;
    std::string message;
  };
  const Bad kBad[] = {
      {"", kFormat},        {" 1", kFormat},      {"1 ", kFormat},     {"1 Gi", kFormat},
      {"1.5 ", kFormat},    {"1,5", kFormat},     {"1_000", kFormat},  {"0x10", kFormat},
      {"aoeu", kFormat},    {"NaN", kFormat},     {"1.1.M", kFormat},  {"1+1.0M", kFormat},
      {"0.1am", kFormat},   {"1KI", kFormat},     {"1MB", kFormat},    {"1e3.5", kFormat},
      {"Non-Numeric", kFormat},
      // Kubernetes reads these as zero; kvol treats a number without digits as garbage.
      {".", kFormat},       {"-", kFormat},       {"+", kFormat},      {"Gi", kFormat},
      {"1Gi1", kSuffix},    {"1Ki2", kSuffix},    {"1m5", kSuffix},    {"1i", kSuffix},
      {".5i", kSuffix},     {"-3.01i", kSuffix},  {"0.1mi", kSuffix},  {"1e", kSuffix},
      {"1E+", kSuffix},     {"-3.01e-", kSuffix}, {"1ee3", kSuffix},   {"1K", kSuffix},
      {"1ki", kSuffix},     {"1KM", kSuffix},
      {"1e99999999999999999999", kSuffix},  // the exponent is not an int64
  };
  for (const auto& b : kBad) {
    auto q = Quantity::Parse(b.in);
    ASSERT_FALSE(q.ok()) << "'" << b.in << "' parsed as " << q->ToString();
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(q.status().message(), b.message) << b.in;
  }
}

TEST(QuantityTest, OverflowIsAnErrorNotACap) {
  // Kubernetes silently caps binary quantities at 2^63-1; kvol refuses values beyond it.
  for (const char* in : {"8Ei", "9Ei", "-20Ei", "9223372036854775808", "10E",
                         "18446744073709551616", "1e100", "1000E", "9223372036854775807Ki"}) {
    auto q = Quantity::Parse(in);
    ASSERT_FALSE(q.ok()) << in;
    EXPECT_NE(q.status().message().find("too large"), std::string::npos)
        << in << ": " << q.status().message();
  }
  EXPECT_TRUE(Quantity::Parse("9223372036854775807").ok());
  EXPECT_TRUE(Quantity::Parse("-9223372036854775807").ok());
}

TEST(QuantityTest, HugeInputsStayCheap) {
  std::string digits(100000, '9');
  EXPECT_FALSE(Quantity::Parse(digits).ok());
  EXPECT_EQ(Quantity::Parse("0." + digits)->ToString(), "1");  // rounds up to the nano, then 1
  EXPECT_EQ(Quantity::Parse("0." + std::string(100000, '0') + "1Ei")->ToString(), "1n");
}

// Up to 19 digits take a 128-bit path; more take the digit-by-digit one. Zeros before the
// number and after its fraction change neither the value nor the format, only the path, so
// each quantity written both ways must parse the same, error messages included.
TEST(QuantityTest, ShortAndLongSpellingsParseAlike) {
  const char* kSuffixes[] = {"",   "n",  "u",   "m",    "k",    "M",   "G",   "T",
                             "P",  "E",  "Ki",  "Mi",   "Gi",   "Ti",  "Pi",  "Ei",
                             "e3", "e0", "E-6", "e-12", "e+18", "e28", "e-28", "e29",
                             "e-29", "e-30", "E30"};
  std::mt19937_64 rng(4);
  auto digits = [&](size_t max) {
    std::string out(rng() % (max + 1), '0');
    for (char& c : out) c = static_cast<char>('0' + rng() % 10);
    return out;
  };
  for (int i = 0; i < 200000; ++i) {
    const std::string sign = rng() % 4 == 0 ? "-" : rng() % 8 == 0 ? "+" : "";
    const size_t budget = 19;
    const std::string num = digits(rng() % 2 ? 4 : budget);
    const std::string denom = rng() % 2 ? "" : digits(budget - num.size());
    if (num.empty() && denom.empty()) continue;
    const char* suffix = kSuffixes[rng() % std::size(kSuffixes)];
    const std::string short_form = sign + num + (denom.empty() ? "" : "." + denom) + suffix;
    const std::string long_form =
        sign + std::string(20, '0') + num + "." + denom + std::string(20, '0') + suffix;
    auto a = Quantity::Parse(short_form);
    auto b = Quantity::Parse(long_form);
    ASSERT_EQ(a.ok(), b.ok()) << short_form;
    if (!a.ok()) {
      ASSERT_EQ(a.status().message(), b.status().message()) << short_form;
      continue;
    }
    ASSERT_EQ(*a, *b) << short_form << " " << a->ToString() << " " << b->ToString();
    ASSERT_EQ(a->format(), b->format()) << short_form;
    ASSERT_EQ(a->ToString(), b->ToString()) << short_form;
  }
}

TEST(QuantityTest, FormatComesFromTheSuffix) {
  EXPECT_EQ(Quantity::MustParse("1Gi").format(), Quantity::Format::kBinarySI);
  EXPECT_EQ(Quantity::MustParse("1G").format(), Quantity::Format::kDecimalSI);
  EXPECT_EQ(Quantity::MustParse("5").format(), Quantity::Format::kDecimalSI);
  EXPECT_EQ(Quantity::MustParse("1e3").format(), Quantity::Format::kDecimalExponent);
}

TEST(QuantityTest, Constructors) {
  using F = Quantity::Format;
  EXPECT_EQ(Quantity::FromMilli(1).ToString(), "1m");
  EXPECT_EQ(Quantity::FromMilli(1000).ToString(), "1");
  EXPECT_EQ(Quantity::FromMilli(1234000).ToString(), "1234");
  EXPECT_EQ(Quantity::FromMilli(1024, F::kBinarySI).ToString(), "1024m");
  EXPECT_EQ(Quantity::FromMilli(1048576, F::kBinarySI).ToString(), "1048576m");
  EXPECT_EQ(Quantity::FromUnits(1000).ToString(), "1k");
  EXPECT_EQ(Quantity::FromUnits(1234000).ToString(), "1234k");
  EXPECT_EQ(Quantity::FromUnits(1024, F::kBinarySI).ToString(), "1Ki");
  EXPECT_EQ(Quantity::FromUnits(1048576, F::kBinarySI).ToString(), "1Mi");
  EXPECT_EQ(Quantity::FromUnits(5 * (int64_t{1} << 30), F::kBinarySI).ToString(), "5Gi");
  EXPECT_EQ(Quantity::FromUnits(1000000, F::kDecimalExponent).ToString(), "1e6");
  EXPECT_EQ(Quantity::FromUnits(0, F::kBinarySI).ToString(), "0");
}

TEST(QuantityTest, ValueRoundsAwayFromZero) {
  EXPECT_EQ(Quantity::MustParse("100m").Value(), 1);
  EXPECT_EQ(Quantity::MustParse("1.5").Value(), 2);
  EXPECT_EQ(Quantity::MustParse("-1.5").Value(), -2);
  EXPECT_EQ(Quantity::MustParse("-100m").Value(), -1);
  EXPECT_EQ(Quantity::MustParse("1Gi").Value(), int64_t{1} << 30);
  EXPECT_EQ(Quantity::MustParse("5G").Value(), 5'000'000'000);
  EXPECT_EQ(Quantity::MustParse("1n").MilliValue(), 1);
  EXPECT_EQ(Quantity::MustParse("1.5").MilliValue(), 1500);
  EXPECT_EQ(Quantity::MustParse("9223372036854775807").Value(), INT64_MAX);
  EXPECT_EQ(Quantity::MustParse("9223372036854775807").MilliValue(), INT64_MAX);  // saturates
}

TEST(QuantityTest, CompareByValueAcrossFormats) {
  EXPECT_EQ(Quantity::MustParse("1Gi"), Quantity::MustParse("1024Mi"));
  EXPECT_EQ(Quantity::MustParse("1k"), Quantity::MustParse("1e3"));
  EXPECT_EQ(Quantity::MustParse("0"), Quantity::MustParse("0Gi"));
  EXPECT_LT(Quantity::MustParse("100Gi"), Quantity::MustParse("10000T"));
  EXPECT_LT(Quantity::MustParse("1G"), Quantity::MustParse("1Gi"));
  EXPECT_GT(Quantity::MustParse("5Gi"), Quantity::MustParse("5G"));
  EXPECT_LT(Quantity::MustParse("-1"), Quantity::MustParse("1n"));
  EXPECT_EQ(Quantity::MustParse("1n").Sign(), 1);
  EXPECT_TRUE(Quantity::MustParse("0m").IsZero());
}

TEST(QuantityTest, AddAndSub) {
  auto sum = Quantity::MustParse("1Gi").Add(Quantity::MustParse("512Mi"));
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(sum->ToString(), "1536Mi");
  // The receiver's format wins, unless the receiver is zero.
  EXPECT_EQ(Quantity::MustParse("10").Add(Quantity::FromUnits(1, Quantity::Format::kBinarySI))
                ->ToString(),
            "11");
  EXPECT_EQ(Quantity::MustParse("0").Add(Quantity::MustParse("100m"))->ToString(), "100m");
  EXPECT_EQ(Quantity::MustParse("100m").Add(Quantity::MustParse("0"))->ToString(), "100m");
  EXPECT_EQ(Quantity::MustParse("0").Sub(Quantity::MustParse("1Gi"))->ToString(), "-1Gi");
  EXPECT_EQ(Quantity::MustParse("1G").Add(Quantity::MustParse("500M"))->ToString(), "1500M");
  auto over = Quantity::MustParse("7Ei").Add(Quantity::MustParse("7Ei"));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace kvol::api
