#!/usr/bin/env python3
"""The bottom layers of docs/architecture.md, checked in the includes: core/ includes only core/;
kernels/ only core/ and kernels/ (kernels know no models); compute/ only those and compute/ (the
compute interface knows a layer's sizes, not a model). Prints each include that breaks a rule
(file:line) and exits 1; exit 0 when all hold."""
import pathlib
import re
import sys

ALLOWED = {
    "core": {"core"},
    "kernels": {"core", "kernels"},
    "compute": {"core", "kernels", "compute"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main() -> int:
    src = pathlib.Path(sys.argv[1]) / "src"
    broken = []
    for folder, allowed in ALLOWED.items():
        files = sorted(p for p in (src / folder).rglob("*") if p.suffix in {".h", ".cpp", ".cu", ".cuh", ".inc"})
        if not files:
            broken.append(f"{src / folder}: no sources (moved? update tests/docs/layering.py)")
        for path in files:
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1) not in allowed:
                    broken.append(f"{path}:{n}: {folder}/ includes {m.group(1)}/ ({line.strip()}); "
                                  f"{folder}/ may include {', '.join(a + '/' for a in sorted(allowed))} only")
    for b in broken:
        print(b)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
