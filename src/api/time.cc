// RFC 3339 parsing and formatting without the C library's time zone machinery.
#include "api/time.h"

#include <cstdio>

namespace kvol::api {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t yy = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = yy + (*m <= 2);
}

bool ReadDigits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

bool IsLeap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

}  // namespace

StatusOr<Time> Time::Parse(std::string_view s) {
  auto bad = [&] {
    return InvalidArgumentError("parsing time \"" + std::string(s) +
                                "\": not an RFC 3339 time (2006-01-02T15:04:05Z07:00)");
  };
  int year, mon, day, hour, min, sec;
  if (!ReadDigits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' ||
      !ReadDigits(s, 5, 2, &mon) || s[7] != '-' || !ReadDigits(s, 8, 2, &day) ||
      (s[10] != 'T' && s[10] != 't') || !ReadDigits(s, 11, 2, &hour) || s[13] != ':' ||
      !ReadDigits(s, 14, 2, &min) || s[16] != ':' || !ReadDigits(s, 17, 2, &sec)) {
    return bad();
  }
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (mon < 1 || mon > 12 || day < 1 ||
      day > kDays[mon - 1] + (mon == 2 && IsLeap(year) ? 1 : 0) || hour > 23 || min > 59 ||
      sec > 59) {
    return bad();
  }
  size_t pos = 19;
  int64_t frac_nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    int64_t scale = 100'000'000;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      frac_nanos += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return bad();
  }
  int64_t offset = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!ReadDigits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !ReadDigits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return bad();
    }
    offset = (oh * 3600 + om * 60) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return bad();
  }
  if (pos != s.size()) return bad();
  int64_t secs = DaysFromCivil(year, static_cast<unsigned>(mon), static_cast<unsigned>(day)) *
                     86400 +
                 hour * 3600 + min * 60 + sec - offset;
  return Time(secs, static_cast<int32_t>(frac_nanos));
}

namespace {

// Writes `v` as exactly `width` decimal digits, zero-padded.
char* Digits(char* p, unsigned v, int width) {
  for (int i = width - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
  return p + width;
}

void AppendFormatted(const Time& t, bool micro, std::string& out) {
  int64_t secs = t.unix_seconds();
  int64_t sub = t.nanos();
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  const auto hour = static_cast<unsigned>(rem / 3600);
  const auto min = static_cast<unsigned>(rem / 60 % 60);
  const auto sec = static_cast<unsigned>(rem % 60);
  char buf[64];
  if (y < 0 || y > 9999) {
    int n = std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02u:%02u:%02u",
                          static_cast<long long>(y), m, d, hour, min, sec);
    out.append(buf, static_cast<size_t>(n));
    if (micro) {
      char frac[16];
      Digits(frac, static_cast<unsigned>(sub / 1000), 6);
      out += '.';
      out.append(frac, 6);
    }
    out += 'Z';
    return;
  }
  // "YYYY-MM-DDTHH:MM:SS[.ffffff]Z", written digit by digit: this runs for every timestamp
  // the API encodes.
  char* p = Digits(buf, static_cast<unsigned>(y), 4);
  *p++ = '-';
  p = Digits(p, m, 2);
  *p++ = '-';
  p = Digits(p, d, 2);
  *p++ = 'T';
  p = Digits(p, hour, 2);
  *p++ = ':';
  p = Digits(p, min, 2);
  *p++ = ':';
  p = Digits(p, sec, 2);
  if (micro) {
    *p++ = '.';
    p = Digits(p, static_cast<unsigned>(sub / 1000), 6);
  }
  *p++ = 'Z';
  out.append(buf, p);
}

}  // namespace

std::string Time::ToString() const {
  std::string out;
  AppendFormatted(*this, false, out);
  return out;
}
std::string Time::ToMicroString() const {
  std::string out;
  AppendFormatted(*this, true, out);
  return out;
}
void Time::AppendTo(std::string& out, bool micro) const { AppendFormatted(*this, micro, out); }

}  // namespace kvol::api
