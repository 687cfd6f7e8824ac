#include "core/plan/call_selection.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "base/strfmt.h"

namespace braid {
namespace {

// NCCL's algorithm names. ring and tree are Braid's too; the others need hardware Braid does
// not drive (in-network reduction, NVLink SHARP) or are NCCL's own kernels, so a selection of
// only those allows nothing here.
constexpr std::string_view kNcclOnly[] = {"collnetdirect", "collnetchain", "collnet",
                                          "nvls",          "nvlstree",     "pat"};

bool braidName(std::string_view name) {
  for (const algos::Algorithm* a : algos::algorithms())
    if (a->name() == name) return true;
  return false;
}

std::string braidNames() {
  std::vector<std::string_view> names;
  for (const algos::Algorithm* a : algos::algorithms()) names.push_back(a->name());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  std::string out;
  for (std::string_view n : names)
    out += strfmt("%s%.*s", out.empty() ? "" : ", ", static_cast<int>(n.size()), n.data());
  return out;
}

// Every name the spec lists, lower case: the part of each ';' segment after its "coll:" and
// '^', split at ','. The syntax itself is AlgoFilter's to check.
std::vector<std::string> listedNames(std::string_view spec) {
  std::vector<std::string> out;
  std::string name;
  bool inName = true;
  auto flush = [&] {
    if (!name.empty()) out.push_back(name);
    name.clear();
  };
  for (char c : spec) {
    if (c == ';') {
      flush();
      inName = true;
    } else if (c == ':') {
      name.clear();  // what came before was the collective
    } else if (c == ',') {
      flush();
    } else if (c != ' ' && c != '^' && inName) {
      name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  flush();
  return out;
}

}  // namespace

Status CallSelections::intern(std::string_view spec, bool force, CallSelection** out) {
  for (auto& s : all_)
    if (s->spec == spec && s->force == force) {
      *out = s.get();
      return Status::Ok();
    }
  if (all_.size() >= kMax)
    return invalidArgument(
        "config->algSelection \"%.*s\": this communicator has seen %zu different selections, "
        "the most Braid keeps (pass the same few)",
        static_cast<int>(spec.size()), spec.data(), kMax);
  auto s = std::make_unique<CallSelection>();
  s->spec = spec;
  s->force = force;
  if (Status st = algos::AlgoFilter::parse(spec, &s->filter); !st.ok())
    return invalidArgument("config->algSelection \"%.*s\": %s", static_cast<int>(spec.size()),
                           spec.data(), st.message().c_str());
  for (const std::string& name : listedNames(spec)) {
    const bool nccl =
        std::find(std::begin(kNcclOnly), std::end(kNcclOnly), name) != std::end(kNcclOnly);
    if (!nccl && !braidName(name))
      return invalidArgument(
          "config->algSelection \"%.*s\": no algorithm is called \"%s\" (Braid's: %s; NCCL's "
          "ring and tree are Braid's too, its others select nothing here)",
          static_cast<int>(spec.size()), spec.data(), name.c_str(), braidNames().c_str());
  }
  *out = s.get();
  all_.push_back(std::move(s));
  return Status::Ok();
}

size_t CallSelections::steps() const {
  size_t n = 0;
  for (const auto& s : all_) n += s->schedules.steps();
  return n;
}

void CallSelections::clearSchedules() {
  for (auto& s : all_) s->schedules.clear();
}

Status chooseSelected(const algos::CollArgs& args, const CallSelection& selection,
                      algos::Choice* out, bool* chosen) {
  *chosen = false;
  std::vector<const algos::Algorithm*> allowed;
  std::string implementing;
  for (const algos::Algorithm* a : algos::algorithms()) {
    if (a->compressed() != (args.codec != nullptr) || !a->supports(args)) continue;
    implementing += strfmt("%s%.*s", implementing.empty() ? "" : ", ",
                           static_cast<int>(a->name().size()), a->name().data());
    if (selection.filter.allows(args.coll, a->name())) allowed.push_back(a);
  }
  if (allowed.empty()) {
    if (!selection.force) return Status::Ok();
    return invalidArgument(
        "config->algSelection \"%s\" allows none of the algorithms that implement %s here "
        "(%s); set forceAlgSelection to 0 to let Braid choose instead",
        selection.spec.c_str(), algos::collectiveName(args.coll), implementing.c_str());
  }
  BRAID_TRY(algos::chooseAlgorithm(args, algos::AlgoFilter{}, "", allowed, out));
  out->reason = strfmt("algSelection \"%s\": %s", selection.spec.c_str(), out->reason.c_str());
  *chosen = true;
  return Status::Ok();
}

}  // namespace braid
