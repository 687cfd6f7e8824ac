#!/usr/bin/env python3
"""Rewrites the environment table in README.md from `braid-env --markdown` (the one table in
src/base/env.cc). Usage: tools/readme_env.py [path/to/braid-env]"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
exe = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/release/tools/braid-env")
table = subprocess.run([exe, "--markdown"], check=True, capture_output=True, text=True).stdout
readme = root / "README.md"
lines = readme.read_text().splitlines(keepends=True)
start = next(i for i, l in enumerate(lines) if l.startswith("| variable | default |"))
end = start
while end < len(lines) and lines[end].startswith("|"):
    end += 1
readme.write_text("".join(lines[:start]) + table + "".join(lines[end:]))
