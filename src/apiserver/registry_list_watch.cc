// Registry<T>'s lists and watches: consistent lists (from the watch cache, paged with
// continue tokens) and watches that resume from a resourceVersion.
#include "api/node_selector.h"
#include "apiserver/registry.h"
#include "apiserver/registry_internal.h"

namespace kvol::apiserver {

using namespace std::chrono_literals;
using registry_internal::IndexObject;
using registry_internal::ParseRevision;

namespace {

constexpr auto kFreshnessTimeout = 5s;

struct ContinueToken {
  store::Revision rev = 0;
  std::string start;  // the last key returned
};

std::string EncodeContinue(const ContinueToken& t) {
  api::Json j = {{"v", "meta.k8s.io/v1"}, {"rv", t.rev}, {"start", t.start}};
  std::string raw = api::DumpJson(j);
  // base64url without padding, as Kubernetes' tokens look.
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (unsigned char c : raw) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) {
      out += kAlphabet[(buf >> (bits - 6)) & 63];
      bits -= 6;
    }
  }
  if (bits > 0) out += kAlphabet[(buf << (6 - bits)) & 63];
  return out;
}

std::optional<ContinueToken> DecodeContinue(std::string_view s) {
  std::string raw;
  uint32_t buf = 0;
  int bits = 0;
  for (char c : s) {
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '-' || c == '+')
      v = 62;
    else if (c == '_' || c == '/')
      v = 63;
    else if (c == '=')
      break;
    else
      return std::nullopt;
    buf = (buf << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      raw += static_cast<char>((buf >> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  auto j = api::ParseJson(raw);
  if (!j.ok() || !j->is_object() || !(*j)["rv"].is_number_integer() || !(*j)["start"].is_string()) {
    return std::nullopt;
  }
  return ContinueToken{(*j)["rv"].get<int64_t>(), (*j)["start"].get<std::string>()};
}

template <class T>
std::vector<std::string_view> SupportedFields() {
  std::vector<std::string_view> f = {"metadata.name", "metadata.namespace"};
  for (auto x : api::KindInfoOf<T>().selectable_fields) f.push_back(x);
  return f;
}

// Events of a cache watch (or, for revisions older than the cache, of a store watch) as the
// API sends them.
class CacheEventStream final : public EventStream {
 public:
  explicit CacheEventStream(std::unique_ptr<CacheWatch> w) : w_(std::move(w)) {}
  StatusOr<std::vector<WatchEvent>> Next(std::chrono::milliseconds timeout) override {
    auto evs = w_->Next(timeout);
    if (!evs.ok()) return evs.status();
    std::vector<WatchEvent> out;
    out.reserve(evs->size());
    for (auto& e : *evs) {
      WatchEvent we;
      we.type = e.type == CacheEvent::Type::kAdded      ? WatchEvent::Type::kAdded
                : e.type == CacheEvent::Type::kModified ? WatchEvent::Type::kModified
                                                        : WatchEvent::Type::kDeleted;
      we.object.json = e.object->json;
      we.object.rev = e.rev;
      out.push_back(std::move(we));
    }
    return out;
  }
  void Close() override { w_->Close(); }
  store::Revision Progress() const override { return w_->Progress(); }
  bool Notifies() const override { return true; }
  void SetNotify(std::function<void()> fn) override { w_->SetNotify(std::move(fn)); }

 private:
  std::unique_ptr<CacheWatch> w_;
};

template <class T>
class StoreEventStream final : public EventStream {
 public:
  StoreEventStream(store::WatchPtr w, Filter f) : w_(std::move(w)), f_(std::move(f)) {}
  StatusOr<std::vector<WatchEvent>> Next(std::chrono::milliseconds timeout) override {
    auto evs = w_->Next(timeout);
    if (!evs.ok()) return evs.status();
    std::vector<WatchEvent> out;
    for (auto& e : *evs) {
      auto now = IndexObject<T>(e.kv);
      std::optional<StatusOr<CachedObject>> before;
      if (e.prev) before = IndexObject<T>(*e.prev);
      const bool match_now = now.ok() && f_.Matches(*now);
      const bool match_before = before && before->ok() && f_.Matches(**before);
      WatchEvent we;
      we.object.json = e.kv.value;
      we.object.rev = e.revision();
      if (e.type == store::Event::Type::kDeleted) {
        if (!match_now) continue;
        we.type = WatchEvent::Type::kDeleted;
      } else if (match_now && !match_before) {
        we.type = WatchEvent::Type::kAdded;
      } else if (match_now) {
        we.type = WatchEvent::Type::kModified;
      } else if (match_before) {
        we.type = WatchEvent::Type::kDeleted;
      } else {
        continue;
      }
      out.push_back(std::move(we));
    }
    return out;
  }
  void Close() override { w_->Close(); }
  store::Revision Progress() const override { return w_->Progress(); }

 private:
  store::WatchPtr w_;
  Filter f_;
};

}  // namespace

template <class T>
ApiOr<Filter> Registry<T>::MakeFilter(std::string_view ns, const ListOptions& opts) {
  Filter f;
  f.ns = info().namespaced ? std::string(ns) : std::string();
  auto ls = api::labels::Parse(opts.label_selector);
  if (!ls.ok()) {
    return BadRequest("unable to parse requirement: " + ls.status().message());
  }
  f.labels = *std::move(ls);
  auto fs = api::fields::Parse(opts.field_selector);
  if (!fs.ok()) return BadRequest(fs.status().message());
  if (Status s = fs->CheckSupported(SupportedFields<T>()); !s.ok()) return BadRequest(s.message());
  f.fields = *std::move(fs);
  return f;
}

template <class T>
ApiOr<ListOut> Registry<T>::ListStored(std::string_view ns, const ListOptions& opts) {
  const auto& k = info();
  auto filter = MakeFilter(ns, opts);
  if (!filter.ok()) return filter.error();
  ListOut out;
  const bool exact = opts.resource_version_match == "Exact";
  std::optional<ContinueToken> cont;
  if (!opts.continue_token.empty()) {
    cont = DecodeContinue(opts.continue_token);
    if (!cont) return BadRequest("continue key is not valid: the token does not decode");
  }
  std::optional<store::Revision> rv;
  if (!opts.resource_version.empty()) {
    rv = ParseRevision(opts.resource_version);
    if (!rv) {
      return BadRequest("invalid resource version \"" + opts.resource_version + "\"");
    }
  }
  if (opts.limit > 0 || cont || (exact && rv && *rv > 0)) {
    // Pages come from the store at one revision, so they form a consistent list.
    store::RangeOptions ro;
    ro.prefix = StoragePrefix(k, filter->ns);
    ro.revision = cont ? cont->rev : (exact && rv ? *rv : 0);
    ro.start_after = cont ? cont->start : "";
    const int64_t want = opts.limit > 0 ? opts.limit : 0;
    while (true) {
      ro.limit = want > 0 ? std::max<int64_t>(want - static_cast<int64_t>(out.items.size()), 1) : 0;
      auto r = store_.Range(ro);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kOutOfRange && cont) {
          return Gone(
              "The provided continue parameter is too old to display a consistent list "
              "result. You can start a new list without the continue parameter.");
        }
        if (r.status().code() == StatusCode::kOutOfRange) {
          return Gone("too old resource version: " + opts.resource_version);
        }
        return FromStatus(r.status());
      }
      out.rev = r->revision;
      ro.revision = r->revision;
      for (const auto& kv : r->kvs) {
        auto obj = IndexObject<T>(kv);
        if (obj.ok() && filter->Matches(*obj)) out.items.push_back({kv.value, kv.mod_revision});
      }
      if (!r->more) break;
      ro.start_after = r->kvs.back().key;
      if (want > 0 && static_cast<int64_t>(out.items.size()) >= want) {
        out.continue_token = EncodeContinue({r->revision, ro.start_after});
        break;
      }
    }
    return out;
  }
  // Everything else is served from the watch cache, fresh up to the requested revision.
  store::Revision min_rev = 0;
  if (!rv) {
    auto cur = store_.CurrentRevision();
    if (!cur.ok()) return FromStatus(cur.status());
    min_rev = *cur;
  } else {
    min_rev = *rv;
  }
  store::Revision at = 0;
  auto items =
      cache_->List(*filter, min_rev,
                   std::chrono::duration_cast<std::chrono::milliseconds>(kFreshnessTimeout), &at);
  if (!items.ok()) return Timeout(items.status().message());
  out.rev = at;
  out.items.reserve(items->size());
  for (const auto& c : *items) out.items.push_back({c->json, c->rev});
  return out;
}

template <class T>
ApiOr<std::unique_ptr<EventStream>> Registry<T>::WatchStored(std::string_view ns,
                                                             const ListOptions& opts) {
  const auto& k = info();
  auto filter = MakeFilter(ns, opts);
  if (!filter.ok()) return filter.error();
  store::Revision after = 0;
  if (!opts.resource_version.empty()) {
    auto rv = ParseRevision(opts.resource_version);
    if (!rv) return BadRequest("invalid resource version \"" + opts.resource_version + "\"");
    after = *rv;
  }
  auto w = cache_->Watch(*filter, after);
  if (w.ok())
    return std::unique_ptr<EventStream>(std::make_unique<CacheEventStream>(std::move(*w)));
  if (w.status().code() != StatusCode::kOutOfRange) return FromStatus(w.status());
  // Older than the cache (e.g. from before a restart): the store may still have the history.
  auto sw = store_.Watch(StoragePrefix(k, filter->ns), after);
  if (sw.ok()) {
    return std::unique_ptr<EventStream>(
        std::make_unique<StoreEventStream<T>>(std::move(*sw), std::move(*filter)));
  }
  if (sw.status().code() == StatusCode::kOutOfRange) {
    return Gone("too old resource version: " + std::to_string(after) + " (" +
                std::to_string(cache_->revision()) + ")");
  }
  return FromStatus(sw.status());
}

#define KVOL_INSTANTIATE(T)                                                               \
  template ApiOr<Filter> Registry<T>::MakeFilter(std::string_view, const ListOptions&);   \
  template ApiOr<ListOut> Registry<T>::ListStored(std::string_view, const ListOptions&);  \
  template ApiOr<std::unique_ptr<EventStream>> Registry<T>::WatchStored(std::string_view, \
                                                                        const ListOptions&);
KVOL_REGISTRY_KINDS(KVOL_INSTANTIATE)
#undef KVOL_INSTANTIATE

}  // namespace kvol::apiserver
