#!/usr/bin/env python3
"""Fetches NVIDIA's NCCL from PyPI's nvidia-nccl-cu12 wheel: its headers and libnccl.so.2, the
reference the abi tests build a 2.32 client against (tests/abi/CMakeLists.txt runs this at
configure time). Only the standard library: the wheel's address comes from PyPI's simple index, its
SHA-256 must match the pinned one, and only nvidia/nccl/include/ and lib/libnccl.so.2 are
extracted into DEST. A DEST that already holds them is left alone.

    fetch_nccl_wheel.py --version 2.32.3 --sha256 <hex> --dest DIR

Exit 0: DEST/include/nccl.h and DEST/lib/libnccl.so.2 exist. Exit 77 with one line on stderr
when PyPI cannot be reached (the tests then skip, saying so); 1 on anything else.
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile

PACKAGE = "nvidia-nccl-cu12"
PLATFORM_TAG = "manylinux_2_27_x86_64"  # the x86-64 wheel; these machines are x86-64
UNREACHABLE = 77


def wheel_url(version):
    # PyPI's simple index in its JSON form (PEP 691), which mirrors serve too.
    request = urllib.request.Request(f"https://pypi.org/simple/{PACKAGE}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        index = json.load(r)
    name = f"nvidia_nccl_cu12-{version}-py3-none-{PLATFORM_TAG}.whl"
    for f in index["files"]:
        if f["filename"] == name:
            return f["url"], name
    raise SystemExit(f"fetch_nccl_wheel: PyPI lists no {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", required=True)
    ap.add_argument("--sha256", required=True)
    ap.add_argument("--dest", required=True)
    args = ap.parse_args()
    header = os.path.join(args.dest, "include", "nccl.h")
    library = os.path.join(args.dest, "lib", "libnccl.so.2")
    if os.path.exists(header) and os.path.exists(library):
        return 0
    try:
        url, name = wheel_url(args.version)
        with tempfile.TemporaryDirectory() as tmp:
            wheel = os.path.join(tmp, name)
            digest = hashlib.sha256()
            with urllib.request.urlopen(url, timeout=600) as r, open(wheel, "wb") as out:
                while chunk := r.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != args.sha256:
                print(f"fetch_nccl_wheel: {name} has SHA-256 {digest.hexdigest()}, "
                      f"want {args.sha256}", file=sys.stderr)
                return 1
            staging = args.dest + ".partial"
            shutil.rmtree(staging, ignore_errors=True)
            with zipfile.ZipFile(wheel) as z:
                for member in z.namelist():
                    rel = None
                    if member.startswith("nvidia/nccl/include/") and not member.endswith("/"):
                        rel = member[len("nvidia/nccl/"):]
                    elif member == "nvidia/nccl/lib/libnccl.so.2":
                        rel = "lib/libnccl.so.2"
                    if rel is None:
                        continue
                    target = os.path.join(staging, rel)
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with z.open(member) as src, open(target, "wb") as dst:
                        shutil.copyfileobj(src, dst)
            shutil.rmtree(args.dest, ignore_errors=True)
            os.rename(staging, args.dest)
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        print(f"fetch_nccl_wheel: PyPI cannot be reached ({e})", file=sys.stderr)
        return UNREACHABLE
    return 0


if __name__ == "__main__":
    sys.exit(main())
