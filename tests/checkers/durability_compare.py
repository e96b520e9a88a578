"""Compare the durability checker's whole output between two source trees, over many histories.

    python tests/checkers/durability_compare.py TREE OUT

runs ``check_durability`` from ``TREE`` (a checkout, e.g. ``git archive <commit> | tar -x -C /tmp/ref``)
over the histories below and writes one line per history, ``name<TAB>repr(result)`` (or the exception's
type and text), to OUT; run it for both trees and compare the two files (``cmp``): the repr keeps every
dict's order, so equal files mean the same verdicts, findings, text and order. The histories come from
this checkout: the 240 golden cases (durability_histories.py), 1,500 more seeded histories, 600 with
events dropped at random (2-30 %), 300 with one event's field removed or replaced (malformed), 400 with
odd offsets (negative, bool, float, far ahead) and 6 benchmark-shaped ones (benchmarks/durability_check.py,
with and without 1 % of the events dropped). Used for issue 22's restructurings of the scan.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import sys

HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _opts(seed: int) -> dict:
    o: dict = {"max_examples": 1000} if seed % 3 else {}
    if seed % 7 == 0:
        o["max_skip_scan"] = 1
    if seed % 5 == 0:
        o["availability_limit_s"] = 4.0
    return o


def _load(path: str, name: str):
    """A module of this checkout by its file (the tree under test may hold another copy)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def histories():
    h = _load("tests/checkers/durability_histories.py", "_durability_histories")
    cases, history = h.cases, h.history
    generate = _load("benchmarks/durability_check.py", "_durability_bench").generate
    yield from cases()
    for seed in range(240, 1740):
        evs, md = history(seed)
        yield f"s{seed}", evs, md, _opts(seed)
    for seed in range(600):
        evs, md = history(seed)
        rng = random.Random(10_000 + seed)
        rate = rng.choice((0.02, 0.05, 0.1, 0.3))
        yield f"drop{seed}", [e for e in evs if rng.random() >= rate], md, _opts(seed)
    for seed in range(300):
        evs, md = history(seed)
        rng = random.Random(20_000 + seed)
        evs = [dict(e) for e in evs]
        e = rng.choice(evs)
        k = rng.choice(sorted(e))
        if rng.random() < 0.5:
            del e[k]
        else:
            e[k] = rng.choice((None, -1, "x", 1.5, [], {}))
        yield f"mal{seed}", evs, md, _opts(seed)
    for seed in range(400):
        evs, md = history(seed)
        rng = random.Random(40_000 + seed)
        evs = [dict(e) for e in evs]
        rate = rng.choice((0.02, 0.1, 0.3))
        for e in evs:
            if e.get("type") == "client" and e.get("offset") is not None and rng.random() < rate:
                o = e["offset"]
                e["offset"] = rng.choice((bool(o % 2), float(o), -o - 1, o + 70_000, o + 65_536, o + 65_537, o + 3,
                                          o * 1000, 2 ** 40 + o, o - 1, 0, True, 1.0, 0.5))
        yield f"odd{seed}", evs, md, _opts(seed)
    for i, ops in enumerate((500, 3000, 20000)):
        evs, md = generate(ops)
        yield f"bench{ops}", evs, md, {}
        rng = random.Random(30_000 + i)
        yield f"benchdrop{ops}", [e for e in evs if rng.random() >= 0.01], md, {"max_examples": 1000}


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: durability_compare.py TREE OUT")
    tree, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    sys.path.insert(0, tree)            # the checker from TREE (the histories: this checkout's files)
    import harness.checkers.durability as d
    from harness.checkers import check_durability
    if not d.__file__.startswith(tree + os.sep):
        raise SystemExit(f"the checker came from {d.__file__}, not from {tree}")
    n = 0
    with open(out, "w") as f:
        for name, evs, md, o in histories():
            try:
                r = repr(check_durability(evs, md, o))
            except Exception as e:  # noqa: BLE001 - the exception is part of the output
                r = f"EXC {type(e).__name__}: {e}"
            f.write(f"{name}\t{r}\n")
            n += 1
    with open(out, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    print(f"{n} histories, sha256 {digest}")


if __name__ == "__main__":
    main()
