// The layers of src/ as src/layers.txt orders them: a file may include its own layer and the
// layers listed before it, never a later one. The build enforces it too (each layer compiles
// against an include root that holds only the layers it may see); this test names the file and
// line of any include that breaks the order, including in code this build does not compile
// (CUDA sources on a machine without nvcc, say).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kSrc = fs::path(BRAID_SOURCE_DIR) / "src";

std::vector<std::string> readLayers() {
  std::ifstream in(kSrc / "layers.txt");
  std::vector<std::string> layers;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') layers.push_back(line);
  return layers;
}

bool isSource(const fs::path& p) {
  static const std::vector<std::string> kExt = {".h", ".cc", ".cu", ".cuh", ".in"};
  for (const auto& e : kExt)
    if (p.extension() == e) return true;
  return false;
}

// The layer a path under src/ belongs to: its first component.
std::string layerOf(const fs::path& relative) { return relative.begin()->string(); }

TEST(Layering, LayersTableNamesEveryFolderOfSrcOnce) {
  const auto layers = readLayers();
  ASSERT_GE(layers.size(), 2u) << "src/layers.txt not found or empty";
  std::map<std::string, int> seen;
  for (const auto& l : layers) {
    EXPECT_EQ(seen[l]++, 0) << l << " is listed twice in src/layers.txt";
    EXPECT_TRUE(fs::is_directory(kSrc / l))
        << "src/layers.txt names " << l << ", which is not a folder of src/";
  }
  for (const auto& entry : fs::directory_iterator(kSrc))
    if (entry.is_directory())
      EXPECT_TRUE(seen.count(entry.path().filename().string()))
          << "src/" << entry.path().filename().string()
          << " is in no layer: add it to src/layers.txt";
}

TEST(Layering, NoFileIncludesAHigherLayer) {
  const auto layers = readLayers();
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < layers.size(); ++i) rank[layers[i]] = i;
  const std::regex include(R"(^\s*#\s*include\s*"([^"]+)\")");
  size_t files = 0, includes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSrc)) {
    if (!entry.is_regular_file() || !isSource(entry.path())) continue;
    const fs::path rel = fs::relative(entry.path(), kSrc);
    if (rel.begin() == rel.end() || std::next(rel.begin()) == rel.end()) continue;  // src/ itself
    const std::string own = layerOf(rel);
    ASSERT_TRUE(rank.count(own)) << "src/" << rel.string() << " lies in no layer";
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      ++includes;
      // An include names a layer by its first component ("core/comm/comm.h"); one relative to
      // the including file ("ring.h", "../x.h") is resolved from the file's folder.
      fs::path target = m[1].str();
      std::string layer = layerOf(target);
      if (!rank.count(layer)) {
        const fs::path beside = fs::weakly_canonical(entry.path().parent_path() / target);
        if (!fs::exists(beside)) continue;  // a system or include/ header (nccl.h, braid/...)
        const fs::path besideRel = fs::relative(beside, fs::weakly_canonical(kSrc));
        if (besideRel.empty() || *besideRel.begin() == "..") continue;
        layer = layerOf(besideRel);
      }
      EXPECT_LE(rank[layer], rank[own])
          << "src/" << rel.string() << ":" << n << ": the " << own << " layer includes \""
          << m[1].str() << "\" of the higher " << layer << " layer (order: src/layers.txt)";
    }
  }
  EXPECT_GT(files, 100u);
  EXPECT_GT(includes, 300u);
}

}  // namespace
