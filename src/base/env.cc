#include "base/env.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "base/log.h"
#include "base/variables.h"

namespace braid::env {
namespace {

std::once_flag confOnce;
std::map<std::string, std::string>* confValues = nullptr;

void loadConfFile() {
  confValues = new std::map<std::string, std::string>();
  const char* path = std::getenv(kNcclConfFile.name);
  if (!path) return;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    (*confValues)[line.substr(0, eq)] = line.substr(eq + 1);
  }
}

}  // namespace

const char* get(const Var& var) {
  if (const char* v = std::getenv(var.name)) return v;
  std::call_once(confOnce, loadConfFile);
  auto it = confValues->find(var.name);
  if (it != confValues->end()) return it->second.c_str();
  return var.defaultValue;
}

bool isSet(const Var& var) { return std::getenv(var.name) != nullptr; }

int64_t getInt(const Var& var) {
  const char* v = get(var);
  const char* fallback = var.defaultValue ? var.defaultValue : "0";
  if (!v || !*v) return std::strtoll(fallback, nullptr, 0);
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 0);
  if (end == v || *end != '\0') {
    BRAID_WARN("%s=%s is not an integer; using the default %s", var.name, v, fallback);
    return std::strtoll(fallback, nullptr, 0);
  }
  return x;
}

}  // namespace braid::env
