// The key tables (engine/model/keys.cpp) and the schemas `rsim schema` prints from them. The validation
// of every example file with a real JSON Schema validator is tests/schema_check.py.
#include <catch2/catch.hpp>
#include <sstream>

#include "app/cli.hpp"
#include "engine/model/keys.hpp"
#include "engine/scenario/schema.hpp"
#include "helpers.hpp"

using namespace rsim;
using namespace rsim::test;

TEST_CASE("every table key, with its description, is in the scenario schema", "[schema]") {
  std::string s = scenario_schema(builtin_ops(), {"intensity"});
  for (const auto& m : keys::all()) {
    CHECK(s.find("\"" + m.name + "\": {") != std::string::npos);
    for (const auto& k : m.keys) {
      INFO(m.name << "." << k.name);
      CHECK(!k.doc.empty());
      CHECK(s.find("\"description\": \"" + k.doc.substr(0, 20)) != std::string::npos);
    }
  }
  // every operator's attributes: conv2d's out_channels is required, kernel is not
  CHECK(s.find("\"enum\": [\"conv2d\"") != std::string::npos);
  CHECK(s.find("\"$schema\": \"https://json-schema.org/draft/2020-12/schema\"") != std::string::npos);
}

TEST_CASE("a loader reading a key its table lacks is a logic error, not a silent extra key", "[schema]") {
  Diags d;
  CNode n = parse_yaml("dtype: fp16\n", "t.yaml");
  MapReader m(n, keys::map("settings"), "settings", d);
  CHECK_THROWS_AS(m.get("colour"), std::logic_error);
  CHECK_THROWS_AS(keys::map("no such table"), std::logic_error);
}

TEST_CASE("the loader accepts exactly the table's keys: an unknown one lists them", "[schema][errors]") {
  std::string msg = error_of([] { parse_scenario("name: t\nplatforms: [rtx3080]\nnetworks: [{model: resnet18}]\nsettings: {dtpye: fp16}\n", "t.yaml"); });
  CHECK(msg ==
        "t.yaml:4:12: error: unknown key 'dtpye' in settings\n"
        "settings: {dtpye: fp16}\n"
        "           ^\n"
        "note: did you mean 'dtype'?\n");
}

TEST_CASE("rsim schema: scenario by default, platform on request, anything else a usage error", "[schema][cli]") {
  std::ostringstream o, e;
  CHECK(rsim_main({"schema"}, o, e) == 0);
  CHECK(o.str().find("\"title\": \"rsim scenario\"") != std::string::npos);
  std::ostringstream o2, e2;
  CHECK(rsim_main({"schema", "platform"}, o2, e2) == 0);
  CHECK(o2.str().find("\"$ref\": \"#/$defs/platform\"") != std::string::npos);
  std::ostringstream o3, e3;
  CHECK(rsim_main({"schema", "platfrom"}, o3, e3) == 2);
  CHECK(e3.str() == "rsim: error: unknown schema 'platfrom'\nrsim: note: did you mean 'platform'?\nrsim: note: see `rsim --help`\n");
}
