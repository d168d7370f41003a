// Resource quantities ("5Gi", "100m", "1e3") read and written exactly as Kubernetes does:
// the same grammar, the same rounding (up, to the nearest nano), the same canonical strings.
// Values are exact integers of nano-units in 128 bits; the range is that of Kubernetes' int64
// fast path, |value| <= 2^63-1 units, and anything larger is an error rather than a silent cap.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kvol::api {

class Quantity {
 public:
  // How the quantity prints, chosen by the suffix it was written with.
  enum class Format : uint8_t {
    kDecimalSI,        // "", k, M, G, T, P, E and n, u, m
    kBinarySI,         // Ki, Mi, Gi, Ti, Pi, Ei
    kDecimalExponent,  // e3, E-6
  };

  Quantity() = default;  // zero, DecimalSI

  // Parses a quantity. Errors (InvalidArgument) carry Kubernetes' messages:
  // "quantities must match the regular expression '...'", "unable to parse quantity's suffix",
  // and kvol's own for values beyond the supported range.
  static StatusOr<Quantity> Parse(std::string_view s);
  // Parses or aborts; for constants in code and tests.
  static Quantity MustParse(std::string_view s);

  static Quantity FromUnits(int64_t units, Format f = Format::kDecimalSI);
  static Quantity FromMilli(int64_t milli, Format f = Format::kDecimalSI);

  // The canonical string Kubernetes writes and kubectl shows: "1536Mi" for "1.5Gi", "1k" for
  // "1000", "500m" for "0.5", "0" for zero.
  std::string ToString() const;

  Format format() const { return format_; }
  bool IsZero() const { return nanos_ == 0; }
  int Sign() const { return nanos_ > 0 ? 1 : nanos_ < 0 ? -1 : 0; }

  // The value in whole units / milli-units, rounded away from zero (as Kubernetes' Value()).
  int64_t Value() const;
  int64_t MilliValue() const;

  // Sum and difference; the result keeps this quantity's format (or the other's if this is zero).
  // OutOfRange if the result leaves the supported range.
  StatusOr<Quantity> Add(const Quantity& other) const;
  StatusOr<Quantity> Sub(const Quantity& other) const;

  // Ordering and equality by value only: "1Gi" == "1024Mi".
  friend std::strong_ordering operator<=>(const Quantity& a, const Quantity& b) {
    return a.nanos_ <=> b.nanos_;
  }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }

 private:
  Quantity(__int128 nanos, Format f) : nanos_(nanos), format_(f) {}

  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
};

// The regular expression Kubernetes quotes in its parse errors.
inline constexpr std::string_view kQuantityRegex = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

}  // namespace kvol::api
