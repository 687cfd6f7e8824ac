#include "base/env.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iterator>
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
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  parseConf(text, confValues);
}

}  // namespace

bool parseInt(const char* text, int64_t* out) {
  if (!text || !*text) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(text, &end, 0);
  if (end == text || *end != '\0' || errno == ERANGE) return false;
  *out = x;
  return true;
}

void parseConf(std::string_view text, std::map<std::string, std::string>* out) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    (*out)[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
}

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
  int64_t x = 0;
  if (!parseInt(v, &x)) {
    BRAID_WARN("%s=%s is not an integer in range; using the default %s", var.name, v, fallback);
    return std::strtoll(fallback, nullptr, 0);
  }
  return x;
}

}  // namespace braid::env
