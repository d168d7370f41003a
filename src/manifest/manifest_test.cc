// Manifest reading: YAML 1.1 scalars as kubectl reads them, multiple documents, Lists, JSON
// streams, and errors with line and column instead of crashes.
#include "manifest/manifest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kvol::manifest {
namespace {

using api::Json;

Json One(const char* yaml) {
  ReadResult r = ParseText(yaml, "t.yaml");
  EXPECT_TRUE(r.errors.empty()) << (r.errors.empty() ? "" : r.errors[0].ToString());
  EXPECT_EQ(r.documents.size(), 1u);
  return r.documents.empty() ? Json() : r.documents[0].object;
}

ReadError OneError(std::string_view text) {
  ReadResult r = ParseText(text, "t.yaml");
  EXPECT_EQ(r.errors.size(), 1u) << text;
  return r.errors.empty() ? ReadError{} : r.errors[0];
}

TEST(ManifestTest, Yaml11Scalars) {
  Json j = One(R"(
octal: 0644
hex: 0x1F
decimal: 420
negative: -12
float: 1.1
exp: 1e3
bool_yes: yes
bool_on: On
bool_true: true
null_tilde: ~
null_word: null
empty:
quoted_number: "1.1"
quoted_bool: 'yes'
string: hello world
version_like: 1.1.1
time: 2022-02-18T13:51:25Z
big: 18446744073709551615
tagged: !!str 123
block: |
  color.good=purple
  color.bad=yellow
folded: >
  a
  b
)");
  EXPECT_EQ(j["octal"], 420);
  EXPECT_EQ(j["hex"], 31);
  EXPECT_EQ(j["decimal"], 420);
  EXPECT_EQ(j["negative"], -12);
  EXPECT_EQ(j["float"], 1.1);
  EXPECT_EQ(j["exp"], 1000.0);
  EXPECT_EQ(j["bool_yes"], true);
  EXPECT_EQ(j["bool_on"], true);
  EXPECT_EQ(j["bool_true"], true);
  EXPECT_TRUE(j["null_tilde"].is_null());
  EXPECT_TRUE(j["null_word"].is_null());
  EXPECT_TRUE(j.contains("empty") && j["empty"].is_null());
  EXPECT_EQ(j["quoted_number"], "1.1");
  EXPECT_EQ(j["quoted_bool"], "yes");
  EXPECT_EQ(j["string"], "hello world");
  EXPECT_EQ(j["version_like"], "1.1.1");
  EXPECT_EQ(j["time"], "2022-02-18T13:51:25Z");
  EXPECT_EQ(j["big"], 18446744073709551615ull);
  EXPECT_EQ(j["tagged"], "123");
  EXPECT_EQ(j["block"], "color.good=purple\ncolor.bad=yellow\n");
  EXPECT_EQ(j["folded"], "a b\n");
}

TEST(ManifestTest, NonStringKeysBecomeStrings) {
  Json j = One("1: a\ntrue: b\n");
  EXPECT_EQ(j, Json::parse(R"({"1": "a", "true": "b"})"));
  EXPECT_EQ(OneError("~: c\n").message, "a null mapping key is not supported");
}

TEST(ManifestTest, MergeKeys) {
  Json j = One(R"(
defaults: &defaults {accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}
small:
  <<: *defaults
  capacity: {storage: 2Gi}
two:
  <<: [{a: 1, b: 1}, {b: 2, c: 2}]
quoted:
  "<<": literal
)");
  EXPECT_EQ(j["small"],
            Json::parse(R"({"accessModes":["ReadWriteOnce"],"capacity":{"storage":"2Gi"}})"));
  EXPECT_EQ(j["two"], Json::parse(R"({"a":1,"b":1,"c":2})"));
  EXPECT_EQ(j["quoted"], Json::parse(R"({"<<":"literal"})"));
  EXPECT_EQ(OneError("a:\n  <<: 5\n").message, "a merge key \"<<\" needs a map or a list of maps");
}

TEST(ManifestTest, MultipleDocumentsAndLines) {
  ReadResult r = ParseText(R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
# only a comment
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: b
...
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
)",
                           "m.yaml");
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].ToString();
  ASSERT_EQ(r.documents.size(), 3u);
  EXPECT_EQ(r.documents[0].object["metadata"]["name"], "a");
  EXPECT_EQ(r.documents[0].line, 1);
  EXPECT_EQ(r.documents[1].object["metadata"]["name"], "b");
  EXPECT_EQ(r.documents[1].line, 7);  // the document starts at its "---"
  EXPECT_EQ(r.documents[2].object["metadata"]["name"], "c");
  EXPECT_EQ(r.documents[2].source, "m.yaml");
}

TEST(ManifestTest, ListsAreExpanded) {
  ReadResult r = ParseText(R"({"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "a"}},
      {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "b"}}]})",
                           "l.json");
  ASSERT_TRUE(r.errors.empty());
  ASSERT_EQ(r.documents.size(), 2u);
  EXPECT_EQ(r.documents[1].object["metadata"]["name"], "b");
  r = ParseText("kind: PersistentVolumeList\nitems:\n- {kind: PersistentVolume}\n", "l.yaml");
  ASSERT_EQ(r.documents.size(), 1u);
  EXPECT_EQ(r.documents[0].object["kind"], "PersistentVolume");
}

TEST(ManifestTest, JsonStreams) {
  ReadResult r = ParseText("{\"a\": 1}\n{\"b\": 2}  {\"c\": [1, {\"d\": \"}\"}]}\n", "s.json");
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].ToString();
  ASSERT_EQ(r.documents.size(), 3u);
  EXPECT_EQ(r.documents[2].object["c"][1]["d"], "}");
  EXPECT_EQ(r.documents[1].line, 2);
  ReadError e = OneError("{\"a\": 1}\n{\"b\": [1,\n 2,,]}\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.source, "t.yaml");
  EXPECT_NE(e.message.find("syntax error"), std::string::npos) << e.message;
}

TEST(ManifestTest, YamlErrorsHaveLineAndColumn) {
  // A stray word in a block map (seed 002's trailing "EOF") is an error, as in kubectl.
  ReadError e = OneError("kind: Service\nspec:\n  type: NodePort\nEOF\n");
  EXPECT_EQ(e.ToString(), "t.yaml:4:1: could not find expected ':'");
  e = OneError("a: [1, 2\nb: 3\n");
  EXPECT_GE(e.line, 1);
  EXPECT_FALSE(e.message.empty());
  e = OneError("a: 1\na: 2\n");
  EXPECT_EQ(e.ToString(), "t.yaml:2:1: mapping key \"a\" already defined at line 1");
  e = OneError("a: .inf\n");
  EXPECT_EQ(e.message, "infinity is not a JSON value");
  e = OneError("a: *nope\n");
  EXPECT_EQ(e.line, 1);
  e = OneError("? [a, b]\n: c\n");
  EXPECT_EQ(e.message, "a map or list cannot be a mapping key");
  e = OneError("a: !!int abc\n");
  EXPECT_EQ(e.message, "cannot read \"abc\" as int");
}

TEST(ManifestTest, InvalidUtf8IsAnError) {
  ReadError e = OneError("a: 1\nlabels:\n  ap\xD9\xD9name: x\n");
  EXPECT_EQ(e.ToString(), "t.yaml:3:5: invalid UTF-8 byte 0xd9");
  e = OneError("{\"a\": \"\xFF\"}");
  EXPECT_NE(e.message.find("syntax error"), std::string::npos) << e.message;
}

TEST(ManifestTest, ControlCharactersAreAnError) {
  ReadError e = OneError(std::string_view("a: 1\nclaimName: x\nb: c\x11\x00Name\n", 29));
  EXPECT_EQ(e.ToString(), "t.yaml:3:5: control characters are not allowed");
  e = OneError("a: \x7f\n");
  EXPECT_EQ(e.message, "control characters are not allowed");
  ReadResult ok = ParseText("a: \"tab\there\"\r\nb: \xC2\xA0x\n", "t.yaml");
  EXPECT_TRUE(ok.errors.empty());
}

TEST(ManifestTest, OneBadDocumentDoesNotHideTheOthers) {
  ReadResult r = ParseText("a: 1\n---\nb: [\n---\nc: 3\n", "t.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_GE(r.errors[0].line, 3);
  ASSERT_EQ(r.documents.size(), 2u);
  EXPECT_EQ(r.documents[1].object["c"], 3);
}

TEST(ManifestTest, AliasesExpandWithinABudget) {
  Json j = One("base: &b {x: 1}\nother: *b\n");
  EXPECT_EQ(j["other"]["x"], 1);
  // "Billion laughs": nine levels of nine-fold aliases.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c) {
    std::string prev(1, c - 1);
    bomb += std::string(1, c) + ": &" + c + " [*" + prev + ", *" + prev + ", *" + prev + ", *" +
            prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n";
  }
  ReadError e = OneError(bomb.c_str());
  EXPECT_NE(e.message.find("too many values"), std::string::npos) << e.message;
}

TEST(ManifestTest, AnchorsAreChargedToTheBudget) {
  // Nested anchored maps: each level keeps a copy of everything below it.
  std::string doc = "a: ";
  const int levels = 250;
  for (int i = 0; i < levels; ++i) doc += "&a" + std::to_string(i) + " {k: ";
  doc += "[";
  for (int i = 0; i < 20000; ++i) doc += i ? ",1" : "1";
  doc += "]";
  for (int i = 0; i < levels; ++i) doc += "}";
  ReadError e = OneError(doc.c_str());
  EXPECT_NE(e.message.find("too many values"), std::string::npos) << e.message;
}

TEST(ManifestTest, DepthIsBounded) {
  std::string deep(10000, '[');
  ReadResult r = ParseText("a: " + deep, "t.yaml");
  EXPECT_EQ(r.documents.size(), 0u);
  EXPECT_EQ(r.errors.size(), 1u);
  std::string json = "{\"a\": " + std::string(1000, '[') + std::string(1000, ']') + "}";
  r = ParseText(json, "t.json");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].message.find("nesting deeper"), std::string::npos);
}

TEST(ManifestTest, ReadsFilesAndDirectories) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kvol-manifest-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "b.yaml") << "kind: B\n";
  std::ofstream(dir / "a.json") << "{\"kind\": \"A\"}";
  std::ofstream(dir / "c.txt") << "kind: C\n";
  ReadResult r = ReadPath(dir.string());
  ASSERT_EQ(r.documents.size(), 2u);
  EXPECT_EQ(r.documents[0].object["kind"], "A");
  EXPECT_EQ(r.documents[1].object["kind"], "B");
  ReadResult missing = ReadPath((dir / "nope.yaml").string());
  ASSERT_EQ(missing.errors.size(), 1u);
  EXPECT_NE(missing.errors[0].message.find("no such file"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kvol::manifest
