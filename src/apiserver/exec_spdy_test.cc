// The SPDY exec session against a client scripted frame by frame over a socket pair, with a
// process that echoes its stdin: the streams it waits for, what goes where, the outcome on the
// error stream, and the clients it gives up on.
#include "apiserver/exec_spdy.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <thread>

#include "base/spdy.h"

namespace kvol::apiserver {
namespace {

// One end of a socket pair.
class SocketConnection final : public UpgradedConnection {
 public:
  explicit SocketConnection(int fd) : fd_(fd) {}
  ~SocketConnection() override { close(fd_); }
  int fd() const override { return fd_; }
  bool Buffered() const override { return false; }
  bool ReadSome(std::string* out) override {
    char buf[64 << 10];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    out->assign(buf, static_cast<size_t>(n));
    return true;
  }
  bool Write(std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

 private:
  int fd_;
};

class UpgradingWriter final : public ResponseWriter {
 public:
  explicit UpgradingWriter(int fd) : fd_(fd) {}
  bool Send(int, std::string_view, std::string_view,
            const std::vector<std::pair<std::string, std::string>>&) override {
    return false;
  }
  bool StartStream(int, std::string_view) override { return false; }
  bool WriteChunk(std::string_view) override { return false; }
  void EndStream() override {}
  std::unique_ptr<UpgradedConnection> Upgrade(
      const std::vector<std::pair<std::string, std::string>>& headers) override {
    upgrade_headers = headers;
    return std::make_unique<SocketConnection>(fd_);
  }
  bool Stopping() const override { return false; }

  std::vector<std::pair<std::string, std::string>> upgrade_headers;

 private:
  int fd_;
};

// Echoes stdin to stdout; at the end of stdin writes `stderr` to stderr and exits with
// `exit_code`.
class EchoProcess final : public ExecProcess {
 public:
  EchoProcess(std::string stderr_text, int exit_code)
      : stderr_(std::move(stderr_text)), exit_code_(exit_code) {}
  ~EchoProcess() override { close(event_); }
  int fd() const override { return event_; }
  std::optional<int> Collect(std::vector<std::pair<int, std::string>>* out) override {
    uint64_t ignored;
    (void)!read(event_, &ignored, sizeof ignored);
    out->clear();
    if (!pending_.empty()) out->emplace_back(1, std::exchange(pending_, ""));
    if (!stdin_closed_) return std::nullopt;
    if (!stderr_.empty()) out->emplace_back(2, std::exchange(stderr_, ""));
    return exit_code_;
  }
  void WriteStdin(std::string_view data) override {
    pending_ += data;
    Wake();
  }
  void CloseStdin() override {
    stdin_closed_ = true;
    Wake();
  }
  void Resize(uint16_t cols, uint16_t rows) override { sizes.emplace_back(cols, rows); }
  void Kill() override { killed = true; }

  bool killed = false;
  std::vector<std::pair<uint16_t, uint16_t>> sizes;

 private:
  void Wake() {
    const uint64_t one = 1;
    (void)!write(event_, &one, sizeof one);
  }
  int event_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  std::string pending_;
  std::string stderr_;
  int exit_code_;
  bool stdin_closed_ = false;
};

// What the client got back, by the streamtype it opened each stream with.
struct Received {
  int replies = 0;
  std::map<std::string, std::string> data;
  std::map<std::string, bool> fin;
  int pings = 0;
};

struct SessionRow {
  const char* name;
  bool stdin = false;
  bool tty = false;
  // The streams the client opens, in order (ids 1, 3, 5, ...).
  std::vector<std::string> open;
  // Sent after the streams, in this order: raw bytes, or {streamtype, data, fin}.
  struct Send {
    std::string stream;  // "" for raw bytes
    std::string data;
    bool fin = false;
  };
  std::vector<Send> then;
  std::string stderr_text;
  int exit_code = 0;
  // Expectations.
  bool killed = false;
  std::map<std::string, std::string> data;  // by stream type; "error" is searched, not equal
  std::vector<std::pair<uint16_t, uint16_t>> sizes;
  int pings = 0;
};

constexpr char kPing[] = "\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01";  // PING id 1

TEST(ExecSpdyTest, ASessionAsKubeletServesIt) {
  const SessionRow rows[] = {
      {.name = "stdin to stdout, its end to the process, exit 0",
       .stdin = true,
       .open = {"error", "stdin", "stdout", "stderr"},
       .then = {{.stream = "stdin", .data = "hello "},
                {.stream = "stdin", .data = "world", .fin = true}},
       .data = {{"stdout", "hello world"}, {"stderr", ""}, {"error", "\"status\":\"Success\""}}},
      {.name = "stderr and a non-zero exit code",
       .stdin = true,
       .open = {"error", "stdin", "stdout", "stderr"},
       .then = {{.stream = "stdin", .fin = true}},
       .stderr_text = "oops",
       .exit_code = 3,
       .data = {{"stdout", ""}, {"stderr", "oops"}, {"error", "exit code 3"}}},
      {.name = "a terminal: no stderr stream, sizes from resize lines however framed",
       .stdin = true,
       .tty = true,
       .open = {"error", "stdin", "stdout", "resize"},
       .then = {{.stream = "resize", .data = "{\"Width\":100,"},
                {.stream = "resize", .data = "\"Height\":30}\n{\"Width\":\"x\"}\n"},
                {.stream = "resize", .data = "{\"Width\":90,\"Height\":20}\n"},
                {.stream = "stdin", .data = "x", .fin = true}},
       .stderr_text = "not sent",
       .data = {{"stdout", "x"}, {"error", "Success"}},
       .sizes = {{100, 30}, {90, 20}}},
      {.name = "a ping is answered",
       .stdin = true,
       .open = {"error", "stdin", "stdout", "stderr"},
       .then = {{.data = std::string(kPing, 12)}, {.stream = "stdin", .fin = true}},
       .data = {{"error", "Success"}},
       .pings = 1},
      {.name = "a client that does not open the streams it asked for",
       .stdin = true,
       .open = {"error", "stdout", "stderr"},
       .killed = true},
      {.name = "a client that sends what is not SPDY/3",
       .open = {"error"},
       .then = {{.data = std::string("\x80\x02\x00\x01\x00\x00\x00\x00", 8)}},
       .killed = true},
      {.name = "a client that leaves (GOAWAY) before the process ends",
       .stdin = true,
       .open = {"error", "stdin", "stdout", "stderr"},
       .then = {{.data =
                     std::string("\x80\x03\x00\x07\x00\x00\x00\x08", 8) + std::string(8, '\0')}},
       .killed = true},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.name);
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    const int client = fds[0];
    UpgradingWriter w(fds[1]);
    EchoProcess proc(row.stderr_text, row.exit_code);
    ExecRequest er;
    er.options.command = {"cat"};
    er.options.stdin = row.stdin;
    er.options.tty = row.tty;
    std::thread server([&] { ServeExecSpdy(w, er, proc, std::chrono::milliseconds(300)); });

    spdy::Writer writer;
    std::map<std::string, uint32_t> ids;
    std::map<uint32_t, std::string> types;
    std::string out;
    uint32_t next = 1;
    for (const auto& type : row.open) {
      ids[type] = next;
      types[next] = type;
      out += writer.SynStream(next, {{"streamtype", type}});
      next += 2;
    }
    for (const auto& s : row.then) {
      out += s.stream.empty() ? s.data : spdy::Writer::Data(ids.at(s.stream), s.data, s.fin);
    }
    ASSERT_EQ(send(client, out.data(), out.size(), MSG_NOSIGNAL), static_cast<ssize_t>(out.size()));

    // Read until the error stream ends or the server closes the connection.
    Received got;
    spdy::Reader reader;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!got.fin["error"] && std::chrono::steady_clock::now() < deadline) {
      pollfd p{client, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[64 << 10];
      const ssize_t n = recv(client, buf, sizeof buf, 0);
      if (n <= 0) break;
      reader.Feed(std::string_view(buf, static_cast<size_t>(n)));
      while (true) {
        auto f = reader.Next();
        ASSERT_TRUE(f.ok()) << f.status().message();
        if (!*f) break;
        if ((*f)->type == spdy::Type::kSynReply) ++got.replies;
        if ((*f)->type == spdy::Type::kPing) ++got.pings;
        if ((*f)->type == spdy::Type::kData) {
          const std::string& type = types[(*f)->stream];
          got.data[type] += (*f)->payload;
          if ((*f)->flags & spdy::kFlagFin) got.fin[type] = true;
        }
      }
    }
    close(client);
    server.join();

    EXPECT_EQ(w.upgrade_headers, (std::vector<std::pair<std::string, std::string>>{
                                     {"Connection", "Upgrade"},
                                     {"Upgrade", "SPDY/3.1"},
                                     {"X-Stream-Protocol-Version", "v4.channel.k8s.io"}}));
    EXPECT_EQ(proc.killed, row.killed);
    EXPECT_EQ(proc.sizes, row.sizes);
    EXPECT_EQ(got.pings, row.pings);
    if (row.killed) {
      EXPECT_FALSE(got.fin["error"]) << "no outcome for a session given up on";
      continue;
    }
    EXPECT_EQ(got.replies, static_cast<int>(row.open.size())) << "every stream is answered";
    for (const auto& [type, want] : row.data) {
      SCOPED_TRACE(type);
      EXPECT_TRUE(got.fin[type]) << "the stream is closed at the end";
      if (type == "error") {
        EXPECT_NE(got.data[type].find(want), std::string::npos) << got.data[type];
      } else {
        EXPECT_EQ(got.data[type], want);
      }
    }
  }
}

}  // namespace
}  // namespace kvol::apiserver
