// Label selectors (string and structured forms) and field selectors.
#include "api/labels.h"

#include <gtest/gtest.h>

#include "api/fields.h"
#include "api/scheme.h"

namespace kvol::api {
namespace {

StringMap L(std::initializer_list<std::pair<const std::string, std::string>> kv) { return kv; }

TEST(LabelSelectorTest, ParseAndMatch) {
  struct Case {
    const char* selector;
    StringMap labels;
    bool matches;
  };
  const Case kCases[] = {
      {"", L({}), true},
      {"", L({{"a", "b"}}), true},
      {"app=nginx", L({{"app", "nginx"}}), true},
      {"app=nginx", L({{"app", "apache"}}), false},
      {"app=nginx", L({}), false},
      {"app==nginx", L({{"app", "nginx"}}), true},
      {"tier!=db", L({{"tier", "web"}}), true},
      {"tier!=db", L({{"tier", "db"}}), false},
      {"tier!=db", L({}), true},  // != matches when the key is absent
      {"env in (a,b)", L({{"env", "b"}}), true},
      {"env in (a,b)", L({{"env", "c"}}), false},
      {"env in (a,b)", L({}), false},
      {"env notin (a,b)", L({{"env", "c"}}), true},
      {"env notin (a,b)", L({}), true},
      {"env notin (a,b)", L({{"env", "a"}}), false},
      {"legacy", L({{"legacy", ""}}), true},
      {"legacy", L({}), false},
      {"!legacy", L({}), true},
      {"!legacy", L({{"legacy", "x"}}), false},
      {"app=nginx,tier!=db,env in (a,b),!legacy",
       L({{"app", "nginx"}, {"tier", "web"}, {"env", "a"}}), true},
      {"app=nginx,tier!=db,env in (a,b),!legacy",
       L({{"app", "nginx"}, {"tier", "web"}, {"env", "a"}, {"legacy", "1"}}), false},
      {"x>2", L({{"x", "3"}}), true},
      {"x>2", L({{"x", "2"}}), false},
      {"x<8", L({{"x", "-1"}}), true},
      {"x>1", L({{"x", "v2"}}), false},  // a non-integer label never compares
      {"x>1", L({}), false},
      {"x=", L({{"x", ""}}), true},
      {"x=", L({}), false},
      {"x in ()", L({{"x", ""}}), true},
      {"x notin ()", L({{"y", ""}}), true},
      {"a in (x,in,notin)", L({{"a", "notin"}}), true},
      {"notin=in", L({{"notin", "in"}}), true},
      {"  app = nginx , tier != db  ", L({{"app", "nginx"}, {"tier", "x"}}), true},
      {"x=a,x=b", L({{"x", "a"}}), false},
      {"example.com/key=v", L({{"example.com/key", "v"}}), true},
  };
  for (const auto& c : kCases) {
    auto sel = labels::Parse(c.selector);
    ASSERT_TRUE(sel.ok()) << c.selector << ": " << sel.status().message();
    EXPECT_EQ(sel->Matches(c.labels), c.matches) << c.selector;
  }
}

TEST(LabelSelectorTest, CanonicalString) {
  struct Case {
    const char* in;
    const char* out;
  };
  const Case kCases[] = {
      {"x in (abc,def),y notin (jkl),z", "x in (abc,def),y notin (jkl),z"},
      {"z,y notin (jkl),x in (def,abc)", "x in (abc,def),y notin (jkl),z"},
      {"x notin (abc,def),y!=jkl,!z", "x notin (abc,def),y!=jkl,!z"},
      {"x=abc,y==jkl,z!=a,z", "x=abc,y==jkl,z!=a,z"},
      {"x>2,y<8,z", "x>2,y<8,z"},
      {"x= ,z= ", "x=,z="},
      {"x in (b,a,b)", "x in (a,b)"},
      {"x in (,a)", "x in (,a)"},
      {"x in (a,,)", "x in (,a)"},
      {"x in (,,)", "x in ()"},
      {"z notin ()", "z notin ()"},
      {"", ""},
  };
  for (const auto& c : kCases) {
    auto sel = labels::Parse(c.in);
    ASSERT_TRUE(sel.ok()) << c.in << ": " << sel.status().message();
    EXPECT_EQ(sel->ToString(), c.out) << c.in;
  }
}

TEST(LabelSelectorTest, ParseErrors) {
  struct Case {
    const char* in;
    const char* message;
  };
  const Case kCases[] = {
      {"=a", "found '=', expected: !, identifier, or 'end of string'"},
      {"(", "found '(', expected: !, identifier, or 'end of string'"},
      {",x,y", "found ',', expected: !, identifier, or 'end of string'"},
      {"a=b c", "found 'c', expected: ',' or 'end of string'"},
      {"x==a==b", "found '==', expected: ',' or 'end of string'"},
      {"!x=a", "found '=', expected: ',' or 'end of string'"},
      {"a=b,", "found '', expected: identifier after ','"},
      {"x,,y", "found ',', expected: identifier after ','"},
      {"!!", "unable to parse requirement: found '!', expected: identifier"},
      {"!", "unable to parse requirement: found '', expected: identifier"},
      {"a=!", "unable to parse requirement: found '!', expected: identifier"},
      {"a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
      {"x nott in (y)",
       "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt"},
      {"a in a", "unable to parse requirement: found 'a' expected: '('"},
      {"a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"},
      {"a in (a a)", "unable to parse requirement: found 'a', expected: ',' or ')'"},
      {"a in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"},
      {"x<a",
       "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, "
       "the value must be an integer"},
      {"app:=x",
       "unable to parse requirement: <nil>: Invalid value: \"app:\": name part must consist of "
       "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
       "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
      {"good-key=zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
       "unable to parse requirement: values[0][good-key]: Invalid value: "
       "\"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\": must be no more "
       "than 63 characters"},
  };
  for (const auto& c : kCases) {
    auto sel = labels::Parse(c.in);
    ASSERT_FALSE(sel.ok()) << c.in << " parsed as " << sel->ToString();
    EXPECT_EQ(sel.status().message(), c.message) << c.in;
  }
}

TEST(LabelSelectorTest, LongSelectorsParseInLinearithmicTime) {
  // Keys in descending order once made parsing quadratic.
  std::string s;
  for (int i = 200000; i > 0; --i) {
    if (!s.empty()) s += ',';
    s += "k" + std::to_string(i);
  }
  auto sel = labels::Parse(s);
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->requirements().size(), 200000u);
  EXPECT_EQ(sel->requirements().front().key, "k1");
}

TEST(LabelSelectorTest, StructuredForm) {
  // A nil selector matches nothing; an empty one matches everything.
  auto nothing = labels::FromLabelSelector(nullptr);
  ASSERT_TRUE(nothing.ok());
  EXPECT_FALSE(nothing->Matches(L({})));
  LabelSelector empty;
  auto everything = labels::FromLabelSelector(&empty);
  ASSERT_TRUE(everything.ok());
  EXPECT_TRUE(everything->Matches(L({{"a", "b"}})));
  EXPECT_TRUE(everything->MatchesEverything());

  LabelSelector ls;
  ls.match_labels = {{"app", "nfs"}};
  ls.match_expressions = {{"tier", "In", {"web", "api"}},
                          {"legacy", "DoesNotExist", {}},
                          {"zone", "NotIn", {"b"}},
                          {"owner", "Exists", {}}};
  auto sel = labels::FromLabelSelector(&ls);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_EQ(sel->ToString(), "app=nfs,!legacy,owner,tier in (api,web),zone notin (b)");
  EXPECT_TRUE(sel->Matches(L({{"app", "nfs"}, {"tier", "web"}, {"owner", "me"}})));
  EXPECT_FALSE(sel->Matches(L({{"app", "nfs"}, {"tier", "db"}, {"owner", "me"}})));
  EXPECT_FALSE(sel->Matches(L({{"app", "nfs"}, {"tier", "web"}})));
  EXPECT_FALSE(sel->Matches(L({{"app", "nfs"}, {"tier", "web"}, {"owner", "me"}, {"zone", "b"}})));

  LabelSelector bad_op;
  bad_op.match_expressions = {{"k", "Gt", {"1"}}};
  EXPECT_EQ(labels::FromLabelSelector(&bad_op).status().message(),
            "\"Gt\" is not a valid label selector operator");
  LabelSelector no_values;
  no_values.match_expressions = {{"k", "In", {}}};
  EXPECT_EQ(labels::FromLabelSelector(&no_values).status().message(),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't "
            "be empty");
  LabelSelector values_on_exists;
  values_on_exists.match_expressions = {{"k", "Exists", {"a"}}};
  EXPECT_EQ(labels::FromLabelSelector(&values_on_exists).status().message(),
            "values: Invalid value: []string{\"a\"}: values set must be empty for exists and does "
            "not exist");
}

TEST(FieldSelectorTest, ParseAndMatch) {
  auto sel = fields::Parse("spec.nodeName=node1,status.phase!=Failed");
  ASSERT_TRUE(sel.ok());
  EXPECT_TRUE(sel->Matches({{"spec.nodeName", "node1"}, {"status.phase", "Running"}}));
  EXPECT_FALSE(sel->Matches({{"spec.nodeName", "node1"}, {"status.phase", "Failed"}}));
  EXPECT_FALSE(sel->Matches({{"spec.nodeName", "node2"}}));
  EXPECT_EQ(sel->ToString(), "spec.nodeName=node1,status.phase!=Failed");

  // A missing field reads as "": "spec.nodeName=" selects unscheduled pods.
  EXPECT_TRUE(fields::Parse("spec.nodeName=")->Matches({}));
  EXPECT_TRUE(fields::Parse("")->Empty());
  EXPECT_TRUE(fields::Parse("a=b,")->Matches({{"a", "b"}}));
  EXPECT_EQ(fields::Parse("x=a,a=x")->ToString(), "a=x,x=a");
  EXPECT_EQ(fields::Parse("metadata.name==x")->ToString(), "metadata.name=x");
  // Escapes.
  auto esc = fields::Parse(R"(k=\,,k2=a\=b\\)");
  ASSERT_TRUE(esc.ok());
  EXPECT_TRUE(esc->Matches({{"k", ","}, {"k2", "a=b\\"}}));
  EXPECT_EQ(esc->ToString(), R"(k2=a\=b\\,k=\,)");  // terms sorted as strings
}

TEST(FieldSelectorTest, Errors) {
  EXPECT_EQ(fields::Parse("x").status().message(), "invalid selector: 'x'; can't understand 'x'");
  EXPECT_EQ(fields::Parse("x=a,b").status().message(),
            "invalid selector: 'x=a,b'; can't understand 'b'");
  EXPECT_EQ(fields::Parse("x=a||y=b").status().message(),
            "invalid field selector: unescaped character in value: 61");
  EXPECT_EQ(fields::Parse(R"(x=\a)").status().message(),
            "invalid field selector: invalid escape sequence: \\a");
  auto sel = fields::Parse("spec.host=x");
  ASSERT_TRUE(sel.ok());
  EXPECT_EQ(sel->CheckSupported({"metadata.name"}).message(),
            "field label not supported: spec.host");
}

TEST(FieldSelectorTest, SelectableFieldsOfPods) {
  Pod pod;
  pod.metadata.name = "p";
  pod.metadata.namespace_ = "default";
  pod.spec.node_name = "node1";
  pod.status.phase = "Running";
  auto sel = fields::Parse("metadata.namespace=default,spec.nodeName=node1,status.phase=Running");
  ASSERT_TRUE(sel.ok());
  std::vector<std::string_view> supported = {"metadata.name", "metadata.namespace"};
  for (auto f : KindInfoOf<Pod>().selectable_fields) supported.push_back(f);
  EXPECT_TRUE(sel->CheckSupported(supported).ok());
  EXPECT_TRUE(sel->Matches(SelectableFields(pod)));
  pod.spec.node_name = "node2";
  EXPECT_FALSE(sel->Matches(SelectableFields(pod)));
  PersistentVolume pv;
  pv.metadata.name = "pv1";
  EXPECT_TRUE(fields::Parse("metadata.name=pv1")->Matches(SelectableFields(pv)));
}

}  // namespace
}  // namespace kvol::api
