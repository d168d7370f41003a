// Quantity parsing and canonical formatting, following Kubernetes' resource.Quantity.
#include "api/quantity.h"

#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

namespace kvol::api {
namespace {

using u128 = unsigned __int128;
using i128 = __int128;

constexpr u128 kNano = 1'000'000'000;
constexpr u128 kMaxUnits = 9'223'372'036'854'775'807ULL;  // 2^63 - 1
constexpr u128 kMaxNanos = kMaxUnits * kNano;
constexpr size_t kMaxDigits = 29;  // kMaxNanos has 28 digits; 29 is always too large

Status FormatError() {
  return InvalidArgumentError("quantities must match the regular expression '" +
                              std::string(kQuantityRegex) + "'");
}
Status SuffixError() { return InvalidArgumentError("unable to parse quantity's suffix"); }
Status TooLargeError() {
  return InvalidArgumentError("quantity is too large: the largest supported value is " +
                              std::to_string(static_cast<unsigned long long>(kMaxUnits)));
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string U128ToString(u128 v) {
  if (v == 0) return "0";
  char buf[48];
  int i = 48;
  while (v > 0) {
    buf[--i] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  }
  return std::string(buf + i, 48 - i);
}

struct Suffix {
  int base = 10;     // 10 or 2
  int64_t exp = 0;   // power of base
  Quantity::Format format = Quantity::Format::kDecimalSI;
};

bool InterpretSuffix(std::string_view s, Suffix* out) {
  using F = Quantity::Format;
  struct Entry {
    std::string_view name;
    int base;
    int exp;
    F format;
  };
  static constexpr Entry kTable[] = {
      {"", 10, 0, F::kDecimalSI},   {"n", 10, -9, F::kDecimalSI}, {"u", 10, -6, F::kDecimalSI},
      {"m", 10, -3, F::kDecimalSI}, {"k", 10, 3, F::kDecimalSI},  {"M", 10, 6, F::kDecimalSI},
      {"G", 10, 9, F::kDecimalSI},  {"T", 10, 12, F::kDecimalSI}, {"P", 10, 15, F::kDecimalSI},
      {"E", 10, 18, F::kDecimalSI}, {"Ki", 2, 10, F::kBinarySI},  {"Mi", 2, 20, F::kBinarySI},
      {"Gi", 2, 30, F::kBinarySI},  {"Ti", 2, 40, F::kBinarySI},  {"Pi", 2, 50, F::kBinarySI},
      {"Ei", 2, 60, F::kBinarySI},
  };
  for (const auto& e : kTable) {
    if (e.name == s) {
      *out = {e.base, e.exp, e.format};
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    // An exponent, parsed as Go's strconv.ParseInt(s[1:], 10, 64) would.
    std::string_view digits = s.substr(1);
    bool neg = false;
    if (digits[0] == '+' || digits[0] == '-') {
      neg = digits[0] == '-';
      digits.remove_prefix(1);
    }
    if (digits.empty()) return false;
    u128 v = 0;
    for (char c : digits) {
      if (!IsDigit(c)) return false;
      v = v * 10 + static_cast<u128>(c - '0');
      if (v > (static_cast<u128>(1) << 63)) return false;  // outside int64
    }
    if (!neg && v == (static_cast<u128>(1) << 63)) return false;
    const int64_t exp = v == (static_cast<u128>(1) << 63)
                            ? std::numeric_limits<int64_t>::min()
                            : (neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v));
    *out = {10, exp, F::kDecimalExponent};
    return true;
  }
  return false;
}

// Multiplies a big-endian decimal digit string by 2, in place.
void DoubleDigits(std::vector<uint8_t>& d) {
  int carry = 0;
  for (size_t i = d.size(); i-- > 0;) {
    int v = d[i] * 2 + carry;
    d[i] = static_cast<uint8_t>(v % 10);
    carry = v / 10;
  }
  if (carry) d.insert(d.begin(), static_cast<uint8_t>(carry));
}

u128 DigitsToU128(const std::vector<uint8_t>& d, size_t begin, size_t end) {
  u128 v = 0;
  for (size_t i = begin; i < end; ++i) v = v * 10 + d[i];
  return v;
}

constexpr u128 Pow10(int k) {
  u128 v = 1;
  for (int i = 0; i < k; ++i) v *= 10;
  return v;
}

// The nanos of num.denom * base^exp when num and denom together have at most 19 digits,
// computed in 128-bit integers; nullopt when it needs the digit-by-digit path below (a decimal
// exponent far from zero). Exactly what that path gives, including the rounding up of what
// lies beyond the nano and the range errors.
std::optional<StatusOr<u128>> SmallMagnitude(std::string_view num, std::string_view denom,
                                             const Suffix& suffix) {
  if (num.size() + denom.size() > 19) return std::nullopt;
  uint64_t d = 0;  // num.denom without its point: below 10^19, so it fits
  for (char c : num) d = d * 10 + static_cast<uint64_t>(c - '0');
  for (char c : denom) d = d * 10 + static_cast<uint64_t>(c - '0');
  if (d == 0) return std::nullopt;  // zero keeps the slow path's early answer
  // nanos = d * 2^exp2 * 10^shift, rounded up when shift is negative.
  int64_t shift = 9 - static_cast<int64_t>(denom.size());
  int exp2 = 0;
  if (suffix.base == 10) {
    if (suffix.exp > 28 || suffix.exp < -28) return std::nullopt;
    shift += suffix.exp;
  } else {
    exp2 = static_cast<int>(suffix.exp);  // 10 to 60
  }
  u128 mag = d;
  if (exp2 > 0) mag <<= exp2;  // below 2^64 * 2^60
  if (shift >= 0) {
    if (shift > 28) return StatusOr<u128>(TooLargeError());
    if (mag > kMaxNanos / Pow10(static_cast<int>(shift))) {
      return StatusOr<u128>(TooLargeError());
    }
    mag *= Pow10(static_cast<int>(shift));
  } else {
    // shift >= 9 - 19 - 28 = -38, and 10^38 fits in 128 bits.
    const u128 div = Pow10(static_cast<int>(-shift));
    mag = mag / div + (mag % div != 0 ? 1 : 0);
  }
  if (mag > kMaxNanos) return StatusOr<u128>(TooLargeError());
  return StatusOr<u128>(mag);
}

}  // namespace

StatusOr<Quantity> Quantity::Parse(std::string_view str) {
  const size_t n = str.size();
  if (n == 0) return FormatError();
  size_t pos = 0;
  bool negative = false;
  if (str[0] == '-' || str[0] == '+') {
    negative = str[0] == '-';
    pos = 1;
  }
  size_t start = pos;
  while (pos < n && IsDigit(str[pos])) ++pos;
  std::string_view num = str.substr(start, pos - start);
  std::string_view denom;
  if (pos < n && str[pos] == '.') {
    start = ++pos;
    while (pos < n && IsDigit(str[pos])) ++pos;
    denom = str.substr(start, pos - start);
  }
  // Kubernetes reads a lone sign or dot as zero; kvol treats a number without digits as garbage.
  if (num.empty() && denom.empty()) return FormatError();

  const size_t suffix_start = pos;
  static constexpr std::string_view kSuffixChars = "eEinumkKMGTP";
  while (pos < n && kSuffixChars.find(str[pos]) != std::string_view::npos) ++pos;
  if (pos < n && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < n && IsDigit(str[pos])) ++pos;
  if (pos != n) return FormatError();

  Suffix suffix;
  if (!InterpretSuffix(str.substr(suffix_start), &suffix)) return SuffixError();

  if (auto small = SmallMagnitude(num, denom, suffix)) {
    if (!small->ok()) return small->status();
    const i128 nanos = static_cast<i128>(**small);
    return Quantity(negative ? -nanos : nanos, suffix.format);
  }

  // Significant digits of num.denom, without leading zeros.
  std::vector<uint8_t> digits;
  digits.reserve(num.size() + denom.size());
  for (char c : num) {
    if (digits.empty() && c == '0') continue;
    digits.push_back(static_cast<uint8_t>(c - '0'));
  }
  for (char c : denom) {
    if (digits.empty() && c == '0') continue;
    digits.push_back(static_cast<uint8_t>(c - '0'));
  }
  if (digits.empty()) return Quantity(0, suffix.format);

  // value = digits * 10^-len(denom) * base^exp; nanos = value * 10^9, rounded up.
  int64_t shift = 9 - static_cast<int64_t>(denom.size());
  if (suffix.base == 10) {
    if (suffix.exp > 1'000'000) return TooLargeError();
    if (suffix.exp < -1'000'000) return Quantity(negative ? -1 : 1, suffix.format);
    shift += suffix.exp;
  } else {
    for (int64_t i = 0; i < suffix.exp; ++i) DoubleDigits(digits);
  }

  u128 mag;
  if (shift >= 0) {
    if (digits.size() + static_cast<size_t>(shift) > kMaxDigits) return TooLargeError();
    mag = DigitsToU128(digits, 0, digits.size());
    for (int64_t i = 0; i < shift; ++i) mag *= 10;
  } else {
    const size_t drop = static_cast<size_t>(-shift);
    const size_t keep = drop >= digits.size() ? 0 : digits.size() - drop;
    if (keep > kMaxDigits) return TooLargeError();
    mag = DigitsToU128(digits, 0, keep);
    bool inexact = false;
    for (size_t i = keep; i < digits.size() && !inexact; ++i) inexact = digits[i] != 0;
    if (inexact) ++mag;  // round up, away from zero, to the nearest nano
  }
  if (mag > kMaxNanos) return TooLargeError();
  i128 nanos = static_cast<i128>(mag);
  return Quantity(negative ? -nanos : nanos, suffix.format);
}

Quantity Quantity::MustParse(std::string_view s) {
  auto q = Parse(s);
  if (!q.ok()) std::abort();
  return *q;
}

Quantity Quantity::FromUnits(int64_t units, Format f) {
  return Quantity(static_cast<i128>(units) * static_cast<i128>(kNano), f);
}

Quantity Quantity::FromMilli(int64_t milli, Format f) {
  return Quantity(static_cast<i128>(milli) * 1'000'000, f);
}

std::string Quantity::ToString() const {
  if (nanos_ == 0) return "0";
  const bool negative = nanos_ < 0;
  u128 mag = negative ? static_cast<u128>(-nanos_) : static_cast<u128>(nanos_);
  std::string out = negative ? "-" : "";

  Format f = format_;
  // BinarySI only for whole numbers of at least 1024; anything else would round.
  if (f == Format::kBinarySI && (mag < 1024 * kNano || mag % kNano != 0)) f = Format::kDecimalSI;

  if (f == Format::kBinarySI) {
    static constexpr std::string_view kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    u128 units = mag / kNano;
    int e = 0;
    while (e < 6 && units % 1024 == 0) {
      units /= 1024;
      ++e;
    }
    out += U128ToString(units);
    out += kBinary[e];
    return out;
  }

  // Decimal: strip trailing zeros into the exponent, then lower it to a multiple of three.
  int exp = -9;
  while (mag % 10 == 0) {
    mag /= 10;
    ++exp;
  }
  int r = ((exp % 3) + 3) % 3;
  for (int i = 0; i < r; ++i) mag *= 10;
  exp -= r;
  out += U128ToString(mag);
  if (f == Format::kDecimalExponent) {
    if (exp != 0) out += "e" + std::to_string(exp);
    return out;
  }
  switch (exp) {
    case -9: out += "n"; break;
    case -6: out += "u"; break;
    case -3: out += "m"; break;
    case 0: break;
    case 3: out += "k"; break;
    case 6: out += "M"; break;
    case 9: out += "G"; break;
    case 12: out += "T"; break;
    case 15: out += "P"; break;
    case 18: out += "E"; break;
    default: out += "e" + std::to_string(exp); break;  // unreachable within the range
  }
  return out;
}

int64_t Quantity::Value() const {
  u128 mag = nanos_ < 0 ? static_cast<u128>(-nanos_) : static_cast<u128>(nanos_);
  u128 units = mag / kNano + (mag % kNano != 0 ? 1 : 0);
  int64_t v = static_cast<int64_t>(units);  // <= 2^63-1 by the range invariant
  return nanos_ < 0 ? -v : v;
}

int64_t Quantity::MilliValue() const {
  u128 mag = nanos_ < 0 ? static_cast<u128>(-nanos_) : static_cast<u128>(nanos_);
  u128 milli = mag / 1'000'000 + (mag % 1'000'000 != 0 ? 1 : 0);
  if (milli > kMaxUnits) milli = kMaxUnits;
  int64_t v = static_cast<int64_t>(milli);
  return nanos_ < 0 ? -v : v;
}

StatusOr<Quantity> Quantity::Add(const Quantity& other) const {
  i128 sum = nanos_ + other.nanos_;
  u128 mag = sum < 0 ? static_cast<u128>(-sum) : static_cast<u128>(sum);
  if (mag > kMaxNanos) return OutOfRangeError("quantity sum is out of range");
  return Quantity(sum, nanos_ == 0 ? other.format_ : format_);
}

StatusOr<Quantity> Quantity::Sub(const Quantity& other) const {
  return Add(Quantity(-other.nanos_, other.format_));
}

}  // namespace kvol::api
