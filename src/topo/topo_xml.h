// NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE: the host topology in NCCL's XML schema.
//
// The rule for a bad file: a file that cannot be read or is not well-formed XML is advisory
// (the caller warns and falls back to detection: NCCL's own files are hints, and a truncated
// one should not stop a job). A well-formed file that breaks the schema (a <gpu> outside a
// <pci>, a non-numeric speed, a root other than <system>) is a mistake someone will want to
// hear about, so it fails, naming the line and what was expected.
#pragma once

#include <string>

#include "base/status.h"
#include "topo/host_topology.h"
#include "topo/xml_source.h"

namespace braid::topo {

// On failure *advisory says which kind it was (true: unreadable or malformed).
Status parseTopoXml(const XmlSource& source, HostTopology* out, bool* advisory);
Status loadTopoFile(const std::string& path, HostTopology* out, bool* advisory);

// The tree as NCCL-schema XML: two-space indent, attributes in model order. load(dump(t))
// gives t back, so dump -> load -> dump is byte-identical.
std::string topoXml(const HostTopology& topo);
Status dumpTopoFile(const HostTopology& topo, const std::string& path);

}  // namespace braid::topo
