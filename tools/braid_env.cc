// braid-env: prints every environment variable Braid reads, with its default and meaning.
// `braid-env --markdown` prints the README's table.
#include <cstdio>
#include <cstring>

#include "api/variables.h"

int main(int argc, char** argv) {
  bool markdown = argc > 1 && !std::strcmp(argv[1], "--markdown");
  if (markdown) std::printf("| variable | default | what it does |\n|---|---|---|\n");
  for (const braid::env::Var* v : braid::allVariables()) {
    if (markdown)
      std::printf("| `%s` | %s | %s |\n", v->name, v->defaultValue ? v->defaultValue : "(unset)",
                  v->doc);
    else
      std::printf("%-24s %-12s %s\n", v->name, v->defaultValue ? v->defaultValue : "-", v->doc);
  }
  return 0;
}
