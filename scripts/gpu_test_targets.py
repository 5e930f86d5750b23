#!/usr/bin/env python3
"""Prints the test targets that carry the ctest label `gpu`: every plexus_add_test(NAME LABELS ...)
call under the given directory whose labels include gpu (scripts/pack-gpu.sh builds them)."""
import pathlib
import re
import sys

CALL = re.compile(r"plexus_add_test\(\s*([A-Za-z0-9_]+)(.*?)\)", re.S)
# Test executables declared by hand: gtest_discover_tests(NAME PROPERTIES LABELS gpu ...).
DISCOVER = re.compile(r"gtest_discover_tests\(\s*([A-Za-z0-9_]+)\s+PROPERTIES\s+LABELS\s+\"?gpu\b", re.S)
LABELS = re.compile(r"\bLABELS\b(.*?)(?:\bSOURCES\b|\bLIBS\b|$)", re.S)


def targets(root):
    found = []
    for path in sorted(pathlib.Path(root).rglob("CMakeLists.txt")):
        text = re.sub(r"#[^\n]*", "", path.read_text())
        for name, rest in CALL.findall(text):
            m = LABELS.search(rest)
            if m and "gpu" in m.group(1).split():
                found.append(name)
        found.extend(DISCOVER.findall(text))
    return found


if __name__ == "__main__":
    print(" ".join(targets(sys.argv[1] if len(sys.argv) > 1 else "tests")))
