#!/usr/bin/env python3
"""Runs a command and passes only when both its exit status and its output are as expected, so
a test judged by what it prints cannot pass on a crash after the matching line (ctest's
PASS_REGULAR_EXPRESSION alone ignores the exit status).

  expect_output.py --exit 0|nonzero|N --pattern REGEX -- command [args...]

REGEX is a Python regular expression searched in stdout and stderr together ('.' matches
newlines too). The command's output is echoed."""
import argparse
import re
import subprocess
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--exit", required=True, help="0, nonzero, or an exact status")
parser.add_argument("--pattern", required=True)
parser.add_argument("command", nargs=argparse.REMAINDER)
args = parser.parse_args()
command = args.command[1:] if args.command[:1] == ["--"] else args.command
if not command:
    parser.error("no command")

run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                     errors="replace")
sys.stdout.write(run.stdout)
status = run.returncode
failures = []
if args.exit == "nonzero":
    if status == 0:
        failures.append("exited 0, expected a failure status")
    elif status < 0:
        failures.append(f"killed by signal {-status}, expected a failure status")
elif status != int(args.exit):
    failures.append(f"exited {status}, expected {args.exit}")
if not re.search(args.pattern, run.stdout, re.DOTALL):
    failures.append(f"output does not match {args.pattern!r}")
for f in failures:
    print(f"expect_output: FAIL: {f}")
sys.exit(1 if failures else 0)
