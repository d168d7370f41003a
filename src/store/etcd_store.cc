// etcd v3 store over gRPC.
#include "store/etcd_store.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "base/thread.h"
#include "store/proto/etcd.grpc.pb.h"

namespace kvol::store {
namespace {

namespace pb = etcdserverpb;
using namespace std::chrono_literals;

// The smallest key greater than every key with this prefix ("\0" meaning "to the end").
std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

Status FromGrpc(const grpc::Status& s, std::string_view what) {
  std::string msg = std::string(what) + ": " + s.error_message();
  if (s.error_message().find("required revision has been compacted") != std::string::npos) {
    return OutOfRangeError(std::string(kCompactedMessage));
  }
  switch (s.error_code()) {
    case grpc::StatusCode::OUT_OF_RANGE: return OutOfRangeError(msg);
    case grpc::StatusCode::NOT_FOUND: return NotFoundError(msg);
    case grpc::StatusCode::INVALID_ARGUMENT: return InvalidArgumentError(msg);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status(StatusCode::kDeadlineExceeded, msg);
    case grpc::StatusCode::CANCELLED: return Status(StatusCode::kCancelled, msg);
    default: return UnavailableError(msg);
  }
}

KeyValue FromPb(const pb::KeyValue& kv) {
  return KeyValue{kv.key(), MakeValue(kv.value()), kv.create_revision(), kv.mod_revision()};
}

class EtcdWatch final : public Watch {
 public:
  EtcdWatch(pb::Watch::Stub* stub, std::string prefix) : stub_(stub), prefix_(std::move(prefix)) {}

  ~EtcdWatch() override {
    Close();
    if (reader_.joinable()) reader_.join();
  }

  // Starts the stream and waits for etcd to accept (or refuse) the watch.
  Status Start(Revision after, int timeout_ms) {
    stream_ = stub_->Watch(&ctx_);
    pb::WatchRequest req;
    auto* create = req.mutable_create_request();
    create->set_key(prefix_);
    create->set_range_end(PrefixEnd(prefix_));
    create->set_start_revision(after > 0 ? after + 1 : 0);
    create->set_prev_kv(true);
    progress_ = after;
    {
      std::lock_guard w(write_mu_);
      if (!stream_->Write(req)) return UnavailableError("etcd watch: stream closed");
    }
    reader_ = std::thread([this] {
      SetThreadName("etcd-watch");
      ReadLoop();
    });
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return created_ || !error_.ok(); })) {
      return UnavailableError("etcd watch: no answer from etcd");
    }
    return error_;
  }

  StatusOr<std::vector<Event>> Next(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, timeout, [&] {
      return closed_ || !pending_.empty() || !error_.ok() || progress_ready_;
    });
    if (closed_) return Status(StatusCode::kCancelled, "watch closed");
    progress_ready_ = false;
    returned_progress_ = std::max(returned_progress_, progress_);
    if (!pending_.empty()) {
      std::vector<Event> out(std::make_move_iterator(pending_.begin()),
                             std::make_move_iterator(pending_.end()));
      pending_.clear();
      return out;
    }
    if (!error_.ok()) return error_;
    return std::vector<Event>{};
  }

  void Close() override {
    {
      std::lock_guard lock(mu_);
      if (closed_) return;
      closed_ = true;
      pending_.clear();
    }
    ctx_.TryCancel();
    cv_.notify_all();
  }

  Revision Progress() override {
    std::lock_guard lock(mu_);
    return returned_progress_;
  }

  void RequestProgress() override {
    pb::WatchRequest req;
    req.mutable_progress_request();
    std::lock_guard w(write_mu_);
    {
      std::lock_guard lock(mu_);
      if (closed_ || !error_.ok()) return;
    }
    stream_->Write(req);
  }

 private:
  void ReadLoop() {
    pb::WatchResponse resp;
    while (stream_->Read(&resp)) {
      std::lock_guard lock(mu_);
      if (resp.created()) {
        created_ = true;
        cv_.notify_all();
      }
      if (resp.canceled()) {
        error_ = resp.compact_revision() > 0
                     ? OutOfRangeError(std::string(kCompactedMessage))
                     : UnavailableError("etcd cancelled the watch: " + resp.cancel_reason());
        cv_.notify_all();
        break;
      }
      for (const auto& e : resp.events()) {
        pending_.push_back(Convert(e));
        progress_ = std::max(progress_, e.kv().mod_revision());
      }
      if (resp.events_size() > 0) cv_.notify_all();
      if (resp.events_size() == 0 && !resp.created() && !resp.canceled()) {
        // A progress notification: everything up to the header revision has been sent.
        progress_ = std::max(progress_, resp.header().revision());
        progress_ready_ = true;
        cv_.notify_all();
      }
      if (pending_.size() > 200'000) {
        pending_.clear();
        error_ = OutOfRangeError("watcher fell too far behind; list again");
        cv_.notify_all();
        break;
      }
    }
    grpc::Status s = stream_->Finish();
    std::lock_guard lock(mu_);
    if (error_.ok()) {
      error_ = s.ok() ? UnavailableError("etcd closed the watch") : FromGrpc(s, "etcd watch");
    }
    cv_.notify_all();
  }

  static Event Convert(const pb::Event& e) {
    Event ev;
    if (e.has_prev_kv()) ev.prev = FromPb(e.prev_kv());
    if (e.type() == pb::Event::DELETE) {
      ev.type = Event::Type::kDeleted;
      ev.kv = ev.prev ? *ev.prev : KeyValue{e.kv().key(), nullptr, 0, 0};
      ev.kv.mod_revision = e.kv().mod_revision();
    } else {
      ev.type = e.kv().version() == 1 ? Event::Type::kAdded : Event::Type::kModified;
      ev.kv = FromPb(e.kv());
    }
    return ev;
  }

  pb::Watch::Stub* stub_;
  std::string prefix_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<pb::WatchRequest, pb::WatchResponse>> stream_;
  std::thread reader_;

  std::mutex write_mu_;  // gRPC allows one writer at a time on a stream
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> pending_;
  Status error_;
  bool created_ = false;
  bool closed_ = false;
  Revision progress_ = 0;           // everything up to here has arrived from etcd
  Revision returned_progress_ = 0;  // ... and has been handed out by Next()
  bool progress_ready_ = false;
};

class EtcdStore final : public Store {
 public:
  explicit EtcdStore(EtcdOptions opts) : opts_(std::move(opts)) {
    for (const auto& ep : opts_.endpoints) {
      // A range over a large prefix (a watch cache filling itself) easily exceeds gRPC's
      // default 4 MiB message limit; etcd itself sends up to 2 GiB.
      grpc::ChannelArguments args;
      args.SetMaxReceiveMessageSize(std::numeric_limits<int>::max());
      auto ch = grpc::CreateCustomChannel(ep, grpc::InsecureChannelCredentials(), args);
      kv_.push_back(pb::KV::NewStub(ch));
      watch_.push_back(pb::Watch::NewStub(ch));
    }
  }

  StatusOr<KeyValue> Get(std::string_view key, Revision revision) override {
    pb::RangeRequest req;
    req.set_key(std::string(key));
    req.set_revision(revision);
    pb::RangeResponse resp;
    KVOL_RETURN_IF_ERROR(Call("range", [&](pb::KV::Stub* s, grpc::ClientContext* c) {
      return s->Range(c, req, &resp);
    }));
    if (resp.kvs_size() == 0) return NotFoundError("key \"" + std::string(key) + "\" not found");
    return FromPb(resp.kvs(0));
  }

  StatusOr<RangeResult> Range(const RangeOptions& opts) override {
    pb::RangeRequest req;
    std::string start = opts.prefix;
    if (!opts.start_after.empty() && opts.start_after >= opts.prefix) {
      start = opts.start_after + '\0';
    }
    req.set_key(start);
    req.set_range_end(PrefixEnd(opts.prefix));
    req.set_limit(opts.limit);
    req.set_revision(opts.revision);
    pb::RangeResponse resp;
    KVOL_RETURN_IF_ERROR(Call("range", [&](pb::KV::Stub* s, grpc::ClientContext* c) {
      return s->Range(c, req, &resp);
    }));
    RangeResult r;
    r.revision = opts.revision > 0 ? opts.revision : resp.header().revision();
    r.more = resp.more();
    r.kvs.reserve(static_cast<size_t>(resp.kvs_size()));
    for (const auto& kv : resp.kvs()) r.kvs.push_back(FromPb(kv));
    return r;
  }

  StatusOr<Revision> Create(std::string_view key, Value value) override {
    pb::TxnRequest txn;
    auto* cmp = txn.add_compare();
    cmp->set_key(std::string(key));
    cmp->set_target(pb::Compare::CREATE);
    cmp->set_result(pb::Compare::EQUAL);
    cmp->set_create_revision(0);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(std::string(key));
    put->set_value(*value);
    pb::TxnResponse resp;
    KVOL_RETURN_IF_ERROR(Txn(txn, &resp));
    if (!resp.succeeded()) return AlreadyExistsError("key \"" + std::string(key) + "\" already exists");
    return resp.header().revision();
  }

  StatusOr<Revision> Update(std::string_view key, Value value, Revision expected) override {
    pb::TxnRequest txn;
    Guard(&txn, key, expected);
    auto* put = txn.add_success()->mutable_request_put();
    put->set_key(std::string(key));
    put->set_value(*value);
    txn.add_failure()->mutable_request_range()->set_key(std::string(key));
    pb::TxnResponse resp;
    KVOL_RETURN_IF_ERROR(Txn(txn, &resp));
    if (resp.succeeded()) return resp.header().revision();
    return Conflict(key, expected, resp);
  }

  StatusOr<Revision> Delete(std::string_view key, Revision expected) override {
    pb::TxnRequest txn;
    Guard(&txn, key, expected);
    txn.add_success()->mutable_request_delete_range()->set_key(std::string(key));
    txn.add_failure()->mutable_request_range()->set_key(std::string(key));
    pb::TxnResponse resp;
    KVOL_RETURN_IF_ERROR(Txn(txn, &resp));
    if (resp.succeeded()) return resp.header().revision();
    return Conflict(key, expected, resp);
  }

  StatusOr<WatchPtr> Watch(std::string_view prefix, Revision after) override {
    // etcd accepts a watch from a compacted revision and cancels it a moment later; checking
    // first makes "too old" an immediate answer, as from the other backends.
    if (after > 0) {
      auto readable = Readable(after);
      if (!readable.ok() && readable.status().code() != StatusCode::kOutOfRange) {
        return readable.status();
      }
      if (readable.ok() && !*readable) return OutOfRangeError(std::string(kCompactedMessage));
    }
    Status last = UnavailableError("no etcd endpoint");
    for (size_t i = 0; i < watch_.size(); ++i) {
      size_t idx = (current_.load() + i) % watch_.size();
      auto w = std::make_unique<EtcdWatch>(watch_[idx].get(), std::string(prefix));
      last = w->Start(after, opts_.request_timeout_ms);
      if (last.ok()) return WatchPtr(std::move(w));
      if (last.code() != StatusCode::kUnavailable) return last;
      current_ = (idx + 1) % watch_.size();
    }
    return last;
  }

  Status Compact(Revision revision) override {
    pb::CompactionRequest req;
    req.set_revision(revision);
    req.set_physical(true);
    pb::CompactionResponse resp;
    Status s = Call("compact", [&](pb::KV::Stub* st, grpc::ClientContext* c) {
      return st->Compact(c, req, &resp);
    });
    if (!s.ok() && s.message() == kCompactedMessage) return OkStatus();  // already compacted
    return s;
  }

  StatusOr<Revision> CurrentRevision() override {
    pb::RangeRequest req;
    req.set_key("/");
    req.set_count_only(true);
    pb::RangeResponse resp;
    KVOL_RETURN_IF_ERROR(Call("range", [&](pb::KV::Stub* s, grpc::ClientContext* c) {
      return s->Range(c, req, &resp);
    }));
    return resp.header().revision();
  }

  StatusOr<Revision> CompactedRevision() override { return ProbeCompacted(); }

 private:
  template <class F>
  Status Call(std::string_view what, F&& rpc) {
    grpc::Status last;
    for (size_t i = 0; i < kv_.size(); ++i) {
      size_t idx = (current_.load() + i) % kv_.size();
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(opts_.request_timeout_ms));
      last = rpc(kv_[idx].get(), &ctx);
      if (last.ok()) return OkStatus();
      if (last.error_code() != grpc::StatusCode::UNAVAILABLE) return FromGrpc(last, what);
      current_ = (idx + 1) % kv_.size();
    }
    return FromGrpc(last, what);
  }

  Status Txn(const pb::TxnRequest& txn, pb::TxnResponse* resp) {
    return Call("txn", [&](pb::KV::Stub* s, grpc::ClientContext* c) { return s->Txn(c, txn, resp); });
  }

  // The key exists and, if `expected` is set, was last written at `expected`.
  static void Guard(pb::TxnRequest* txn, std::string_view key, Revision expected) {
    auto* cmp = txn->add_compare();
    cmp->set_key(std::string(key));
    if (expected != 0) {
      cmp->set_target(pb::Compare::MOD);
      cmp->set_result(pb::Compare::EQUAL);
      cmp->set_mod_revision(expected);
    } else {
      cmp->set_target(pb::Compare::CREATE);
      cmp->set_result(pb::Compare::GREATER);
      cmp->set_create_revision(0);
    }
  }

  static Status Conflict(std::string_view key, Revision expected, const pb::TxnResponse& resp) {
    if (resp.responses_size() == 0 || resp.responses(0).response_range().kvs_size() == 0) {
      return NotFoundError("key \"" + std::string(key) + "\" not found");
    }
    return AbortedError("key \"" + std::string(key) + "\" was modified: expected revision " +
                        std::to_string(expected) + ", found " +
                        std::to_string(resp.responses(0).response_range().kvs(0).mod_revision()));
  }

  // Whether revision `rev` can still be read (etcd refuses revisions before its compaction).
  StatusOr<bool> Readable(Revision rev) {
    pb::RangeRequest req;
    req.set_key("/");
    req.set_count_only(true);
    req.set_revision(rev);
    pb::RangeResponse resp;
    Status s = Call("range", [&](pb::KV::Stub* st, grpc::ClientContext* c) {
      return st->Range(c, req, &resp);
    });
    if (s.ok()) return true;
    if (s.message() == kCompactedMessage) return false;
    return s;
  }

  // etcd does not report its compacted revision; the oldest readable one is found by bisection.
  StatusOr<Revision> ProbeCompacted() {
    KVOL_ASSIGN_OR_RETURN(Revision hi, CurrentRevision());
    Revision lo = 1;
    while (lo < hi) {
      Revision mid = lo + (hi - lo) / 2;
      KVOL_ASSIGN_OR_RETURN(bool ok, Readable(mid));
      if (ok) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo <= 1 ? 0 : lo;
  }

  const EtcdOptions opts_;
  std::vector<std::unique_ptr<pb::KV::Stub>> kv_;
  std::vector<std::unique_ptr<pb::Watch::Stub>> watch_;
  std::atomic<size_t> current_{0};
};

}  // namespace

StatusOr<EtcdOptions> ParseEtcdUrl(std::string_view url) {
  constexpr std::string_view kScheme = "etcd://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError("store URL must look like etcd://host:port[,host:port...], got \"" +
                                std::string(url) + "\"");
  }
  EtcdOptions opts;
  std::string_view rest = url.substr(kScheme.size());
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view ep = rest.substr(0, comma);
    if (ep.empty() || ep.find(':') == std::string_view::npos) {
      return InvalidArgumentError("etcd endpoint must be host:port, got \"" + std::string(ep) + "\"");
    }
    opts.endpoints.emplace_back(ep);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  if (opts.endpoints.empty()) return InvalidArgumentError("no etcd endpoint in \"" + std::string(url) + "\"");
  return opts;
}

StatusOr<std::unique_ptr<Store>> OpenEtcdStore(const EtcdOptions& opts) {
  if (opts.endpoints.empty()) return InvalidArgumentError("no etcd endpoint");
  return std::unique_ptr<Store>(std::make_unique<EtcdStore>(opts));
}

}  // namespace kvol::store
