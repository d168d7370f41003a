// An optional value kept on the heap, for the members of large API structs that are rarely set
// (the CSI and FlexVolume sources, a claim's selector and data sources): an object pays a pointer
// for each, not the member's size.
// Used like std::optional; copies are deep, and the codec treats it as std::optional.
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace kvol::api {

template <class T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(std::nullopt_t) {}                                 // NOLINT: like std::optional
  Boxed(const T& v) : p_(std::make_unique<T>(v)) {}        // NOLINT
  Boxed(T&& v) : p_(std::make_unique<T>(std::move(v))) {}  // NOLINT
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(std::nullopt_t) {
    p_.reset();
    return *this;
  }

  bool has_value() const { return p_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  template <class... Args>
  T& emplace(Args&&... args) {
    p_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *p_;
  }
  void reset() { p_.reset(); }

  T& operator*() { return *p_; }
  const T& operator*() const { return *p_; }
  T* operator->() { return p_.get(); }
  const T* operator->() const { return p_.get(); }

  bool operator==(const Boxed& o) const {
    return has_value() == o.has_value() && (!p_ || *p_ == *o.p_);
  }

 private:
  std::unique_ptr<T> p_;
};

}  // namespace kvol::api
