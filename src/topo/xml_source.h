// An XML file held in memory with what error messages need: its path and the text, so that
// pugixml's byte offsets become line numbers. Both XML formats Braid reads (NCCL_TOPO_FILE and
// the cluster map) report errors as "path:line: what was found; what was expected".
#pragma once

#include <pugixml.hpp>

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace braid::topo {

class XmlSource {
 public:
  // Reads `path`. A file that cannot be read is a systemError naming it.
  static Status read(const std::string& path, XmlSource* out);
  // Text that did not come from a file (tests, tools); `name` stands in for the path.
  static XmlSource fromText(std::string name, std::string text);

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }

  // 1-based line of a byte offset into the text.
  int lineOf(ptrdiff_t offset) const;
  // Line of a parsed node (pugixml keeps offsets into the buffer it parsed); 0 when unknown.
  int lineOf(const pugi::xml_node& node) const;

  // Parses into `doc`. Malformed XML is an invalidUsage naming the line and what pugixml wanted.
  Status parse(pugi::xml_document* doc) const;

  // Line of one of a node's attributes (an element may span lines); the node's line when the
  // attribute cannot be found in its start tag.
  int lineOf(const pugi::xml_node& node, const char* attribute) const;

  // "path:line: message", as an invalidUsage Status; with `attribute`, the line is that
  // attribute's.
  Status error(const pugi::xml_node& node, const std::string& message,
               const char* attribute = nullptr) const;
  std::string where(const pugi::xml_node& node) const;

 private:
  std::string path_;
  std::string text_;
};

// Attribute values both formats check. Each returns false when `text` is not entirely one.
bool parseInt(std::string_view text, long long* out);
bool parseFloat(std::string_view text, double* out);
bool isHex(std::string_view text);  // 0x optional: "0x15b3", "15b3"

}  // namespace braid::topo
