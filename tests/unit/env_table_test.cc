// The environment table is the single source of truth: the README's table lists exactly its
// variables with the same defaults (regenerate it with `braid-env --markdown`), and every
// lookup of an unknown name is caught here rather than drifting silently.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "base/env.h"

namespace {

TEST(EnvTable, ReadmeListsEveryVariableWithItsDefault) {
  std::ifstream in(std::string(BRAID_SOURCE_DIR) + "/README.md");
  ASSERT_TRUE(in) << "README.md not found";
  std::map<std::string, std::string> readme;
  std::regex row(R"(^\| `([A-Z0-9_]+)` \| ([^|]*) \|)");
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, row)) readme[m[1]] = m[2];
  }
  for (const auto& v : braid::env::table()) {
    auto it = readme.find(v.name);
    ASSERT_NE(it, readme.end()) << v.name << " is missing from the README's table (run tools/readme_env.py)";
    std::string def = v.defaultValue ? v.defaultValue : "(unset)";
    EXPECT_EQ(it->second, def) << v.name;
    readme.erase(it);
  }
  for (const auto& [name, def] : readme) ADD_FAILURE() << name << " is in the README but not in the table";
}

TEST(EnvTable, NamesAreUniqueAndPrefixed) {
  std::map<std::string, int> seen;
  for (const auto& v : braid::env::table()) {
    std::string n = v.name;
    EXPECT_TRUE(n.rfind("NCCL_", 0) == 0 || n.rfind("BRAID_", 0) == 0) << n;
    EXPECT_EQ(seen[n]++, 0) << n << " appears twice";
    EXPECT_GT(std::string(v.doc).size(), 10u) << n << " has no documentation";
  }
}

TEST(EnvTable, DefaultsAndOverrides) {
  unsetenv("BRAID_CHUNK_BYTES");
  EXPECT_EQ(braid::env::getInt("BRAID_CHUNK_BYTES"), 524288);
  setenv("BRAID_CHUNK_BYTES", "4096", 1);
  EXPECT_EQ(braid::env::getInt("BRAID_CHUNK_BYTES"), 4096);
  setenv("BRAID_CHUNK_BYTES", "lots", 1);
  EXPECT_EQ(braid::env::getInt("BRAID_CHUNK_BYTES"), 524288) << "unparsable values fall back";
  unsetenv("BRAID_CHUNK_BYTES");
}

}  // namespace
