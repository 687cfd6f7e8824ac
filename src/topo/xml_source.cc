#include "topo/xml_source.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace braid::topo {

Status XmlSource::read(const std::string& path, XmlSource* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return systemError("%s: cannot open (%s)", path.c_str(), std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  *out = fromText(path, text.str());
  return Status::Ok();
}

XmlSource XmlSource::fromText(std::string name, std::string text) {
  XmlSource s;
  s.path_ = std::move(name);
  s.text_ = std::move(text);
  return s;
}

int XmlSource::lineOf(ptrdiff_t offset) const {
  if (offset < 0) return 0;
  auto end = text_.begin() + std::min<ptrdiff_t>(offset, static_cast<ptrdiff_t>(text_.size()));
  return 1 + static_cast<int>(std::count(text_.begin(), end, '\n'));
}

int XmlSource::lineOf(const pugi::xml_node& node) const {
  ptrdiff_t offset = node.offset_debug();
  return offset < 0 ? 0 : lineOf(offset);
}

int XmlSource::lineOf(const pugi::xml_node& node, const char* attribute) const {
  ptrdiff_t start = node.offset_debug();
  if (start < 0) return 0;
  size_t end = text_.find('>', static_cast<size_t>(start));
  std::string_view tag(text_.data() + start, (end == std::string::npos ? text_.size() : end) -
                                                 static_cast<size_t>(start));
  const std::string_view name(attribute);
  // The attribute's name preceded by whitespace and followed by optional spaces and '='.
  for (size_t at = tag.find(name); at != std::string_view::npos; at = tag.find(name, at + 1)) {
    size_t after = at + name.size();
    while (after < tag.size() && std::isspace(static_cast<unsigned char>(tag[after]))) ++after;
    if (at > 0 && std::isspace(static_cast<unsigned char>(tag[at - 1])) && after < tag.size() &&
        tag[after] == '=')
      return lineOf(start + static_cast<ptrdiff_t>(at));
  }
  return lineOf(start);
}

Status XmlSource::parse(pugi::xml_document* doc) const {
  // parse_default keeps no comments or declarations, which neither format gives meaning to.
  pugi::xml_parse_result result = doc->load_buffer(text_.data(), text_.size(), pugi::parse_default);
  if (!result)
    return invalidUsage("%s:%d: malformed XML (%s); expected a well-formed XML document",
                        path_.c_str(), lineOf(result.offset), result.description());
  if (!doc->document_element())
    return invalidUsage("%s:%d: no XML element; expected a well-formed XML document", path_.c_str(),
                        lineOf(static_cast<ptrdiff_t>(text_.size())));
  return Status::Ok();
}

std::string XmlSource::where(const pugi::xml_node& node) const {
  return strfmt("%s:%d", path_.c_str(), lineOf(node));
}

Status XmlSource::error(const pugi::xml_node& node, const std::string& message,
                        const char* attribute) const {
  int line = attribute ? lineOf(node, attribute) : lineOf(node);
  return invalidUsage("%s:%d: %s", path_.c_str(), line, message.c_str());
}

bool parseInt(std::string_view text, long long* out) {
  std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

bool parseFloat(std::string_view text, double* out) {
  std::string s(text);
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno || *end || v != v) return false;  // v != v: NaN is not a measurement
  *out = v;
  return true;
}

bool isHex(std::string_view text) {
  if (text.starts_with("0x") || text.starts_with("0X")) text.remove_prefix(2);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c));
  });
}

}  // namespace braid::topo
