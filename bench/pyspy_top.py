"""Top functions of a py-spy profile recorded with `--format raw` (collapsed stacks).

    .venv/bin/python bench/pyspy_top.py PROFILE.txt [--top 25] [--filter pyhudi/] [--measured-only]

Prints, as % of all samples: self time per function (the frame on top of the stack: where the CPU
was) and inclusive time per function (any frame of the stack; each function counted once per
sample), optionally only for frames whose file matches `--filter`. `bench/arrow_engine.py
--profile-dir DIR` writes one such file per pyhudi write.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

_FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _short(frame: str) -> str:
    """'write_table (/x/site-packages/pyarrow/parquet/core.py:1234)' -> 'write_table (pyarrow/parquet/core.py)'."""
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    for marker in ("site-packages/", "/work/main/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{m.group('fn')} ({path})"


def _setup(frames: list[str]) -> bool:
    """A sample of `_arrow_child.py` outside the measured call: loading the input, imports."""
    child = [f for f in frames if "_arrow_child.py" in f]
    return bool(child) and not any(f.startswith(("measure ", "_stream ")) for f in child)


def load(path: str, measured_only: bool = False) -> tuple[Counter[str], Counter[str], int]:
    """(self samples per function, inclusive samples per function, total samples); `measured_only` drops
    the samples of an `_arrow_child.py` process taken outside its measured call."""
    self_c: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_short(f) for f in stack.split(";") if f and not f.startswith(("thread (", "process "))]
        if not frames or (measured_only and _setup(frames)):
            continue
        total += n
        self_c[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    return self_c, incl, total


def callers(path: str, leaf: str, within: str = "pyhudi/", measured_only: bool = False) -> Counter[str]:
    """For samples whose top frame contains `leaf`: the nearest frame containing `within` (who called it)."""
    out: Counter[str] = Counter()
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [_short(f) for f in stack.split(";") if f and not f.startswith(("thread (", "process "))]
        if not frames or leaf not in frames[-1] or (measured_only and _setup(frames)):
            continue
        mine = [f for f in frames if within in f]
        out[mine[-1] if mine else "(none)"] += int(count)
    return out


def report(path: str, top: int = 25, pattern: str | None = None, measured_only: bool = False) -> str:
    self_c, incl, total = load(path, measured_only)
    keep = (lambda f: pattern in f) if pattern else (lambda f: True)
    lines = [f"{path}: {total} samples"]
    lines.append("self (where the CPU was):")
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in self_c.most_common() if keep(f)][:top]
    lines.append("inclusive:")
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in incl.most_common() if keep(f)][:top]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("profiles", nargs="+")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--filter", default=None, help="only frames whose text contains this (e.g. pyhudi/)")
    p.add_argument("--measured-only", action="store_true",
                   help="drop samples of bench/_arrow_child.py taken outside the measured call (input loading)")
    p.add_argument("--callers", default=None, metavar="LEAF",
                   help="instead: for samples whose top frame contains LEAF, the nearest pyhudi/ frame")
    args = p.parse_args()
    if args.callers:
        for f in args.profiles:
            c = callers(f, args.callers, "pyhudi/", args.measured_only)
            total = sum(c.values()) or 1
            print(f"{f}: {sum(c.values())} samples under {args.callers!r}")
            print("\n".join(f"  {100 * n / total:5.1f}%  {k}" for k, n in c.most_common(args.top)))
        return 0
    for f in args.profiles:
        print(report(f, args.top, args.filter, args.measured_only))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
