// The environment variables: every one a layer declares is in the list braid-env prints
// (api/variables.h), the README's table lists exactly those with the same defaults (regenerate it
// with tools/readme_env.py; a build without rdma-core's headers lacks the ib transport's), and
// nothing in src/ reads the environment around base/env.h.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "api/variables.h"
#include "base/env.h"
#include "core/variables.h"

namespace {

const std::regex kDeclared(R"re(const Var k\w+ = \{\s*"([A-Z0-9_]+)")re");

std::string readFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether a file of src/ is in this build: the ib transport (src/transport/ib/) needs rdma-core's
// headers, and a build without them has neither its code nor its variables, which the README
// (made from a full build) still lists.
bool builtHere(const std::filesystem::path& path) {
#if BRAID_HAVE_IBVERBS
  (void)path;
  return true;
#else
  return path.string().find("/src/transport/ib/") == std::string::npos;
#endif
}

// The variables declared in files of src/ this build leaves out.
std::set<std::string> leftOutVariables() {
  std::set<std::string> out;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(std::string(BRAID_SOURCE_DIR) + "/src")) {
    if (!e.is_regular_file() || builtHere(e.path())) continue;
    const std::string s = readFile(e.path());
    for (std::sregex_iterator it(s.begin(), s.end(), kDeclared), end; it != end; ++it)
      out.insert((*it)[1]);
  }
  return out;
}

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
  for (const braid::env::Var* v : braid::allVariables()) {
    auto it = readme.find(v->name);
    ASSERT_NE(it, readme.end()) << v->name
                                << " is missing from the README's table (run tools/readme_env.py)";
    std::string def = v->defaultValue ? v->defaultValue : "(unset)";
    EXPECT_EQ(it->second, def) << v->name;
    readme.erase(it);
  }
  const std::set<std::string> leftOut = leftOutVariables();
  for (const auto& [name, def] : readme)
    if (!leftOut.count(name)) ADD_FAILURE() << name << " is in the README but not in the table";
}

TEST(EnvTable, NamesAreUniqueAndPrefixed) {
  std::map<std::string, int> seen;
  for (const braid::env::Var* v : braid::allVariables()) {
    std::string n = v->name;
    EXPECT_TRUE(n.rfind("NCCL_", 0) == 0 || n.rfind("BRAID_", 0) == 0) << n;
    EXPECT_EQ(seen[n]++, 0) << n << " appears twice";
    EXPECT_GT(std::string(v->doc).size(), 10u) << n << " has no documentation";
  }
}

// Every variable src/ declares (`const Var kName = {"NAME", ...`) is in the list, so none is
// missing from braid-env and the README; and no code reads a variable with getenv itself.
TEST(EnvTable, EveryDeclaredVariableIsListedAndReadThroughEnv) {
  std::map<std::string, int> listed;
  for (const braid::env::Var* v : braid::allVariables()) listed[v->name] = 1;
  const std::regex direct(R"re(getenv\("(NCCL|BRAID)_)re");
  size_t found = 0;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(std::string(BRAID_SOURCE_DIR) + "/src")) {
    if (!e.is_regular_file()) continue;
    const std::string s = readFile(e.path());
    EXPECT_FALSE(std::regex_search(s, direct))
        << e.path().string()
        << " reads an NCCL_ or BRAID_ variable with getenv: declare an env::Var";
    if (!builtHere(e.path())) continue;
    for (std::sregex_iterator it(s.begin(), s.end(), kDeclared), end; it != end; ++it) {
      ++found;
      EXPECT_TRUE(listed.count((*it)[1]))
          << (*it)[1] << " (" << e.path().string() << ") is in no layer's list of variables";
    }
  }
  EXPECT_EQ(found, listed.size());
}

TEST(EnvTable, DefaultsAndOverrides) {
  unsetenv("BRAID_CHUNK_BYTES");
  EXPECT_EQ(braid::env::getInt(braid::env::kBraidChunkBytes), 524288);
  setenv("BRAID_CHUNK_BYTES", "4096", 1);
  EXPECT_EQ(braid::env::getInt(braid::env::kBraidChunkBytes), 4096);
  setenv("BRAID_CHUNK_BYTES", "lots", 1);
  EXPECT_EQ(braid::env::getInt(braid::env::kBraidChunkBytes), 524288)
      << "unparsable values fall back";
  unsetenv("BRAID_CHUNK_BYTES");
}

}  // namespace
