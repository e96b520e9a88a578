"""The ZooKeeper-mode checker's whole output on many mutated histories, compared between two source
trees (e.g. a baseline checkout and this one), for speed work that must not change a result.

Usage: ``python -m tests.reference.compare_trees BASE_TREE [NEW_TREE] [--extra N]``.

The histories are made once, here (this tree's generators): the 72 golden cases of
``checker_histories.py``, ``N`` more of its mutations at larger sizes with random kinds and profiles,
and ``N // 2`` corrupted and time-stretched ones like ``hash_seed_case.py`` (P1 findings due at one
event). Each tree checks every history in a child process (``PYTHONHASHSEED=0``, that tree first on
``sys.path``) and writes its outcomes: verdict, every divergence and violation in order with its text,
stats. Exit 0 and ``identical on N histories`` when they are equal, else the first differences.
"""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def histories(extra: int) -> list[tuple]:
    """(name, events, metadata, profile) for every history compared."""
    from tests.reference.render import metadata_for
    from reference.state import ModelConfig
    from tests.reference import checker_histories as ch
    from tests.reference import hash_seed_case as hs
    out = list(ch.cases())
    all_kinds = ("perturb", "drop", "dup", "gap", "faults", "jumps", "stall", "zk_time")
    for i in range(extra):
        rng = random.Random(1000 + i)
        version = rng.choice(((3, 9), (2, 8), (3, 1)))
        base = ch.generate(rng.choice((3000, 6000)), 50 + i, version, deletes=rng.random() < 0.3)
        md = metadata_for(ModelConfig(version=version), f"apache-zk-{version[0]}.{version[1]}")
        if rng.random() < 0.3:
            md["broker_config"]["unclean.leader.election.enable"] = "true"
        kinds = tuple(k for k in all_kinds if rng.random() < 0.4)
        profile = rng.choice((md["profile"], md["profile"], "compatible"))
        out.append((f"x{i}-{'+'.join(kinds) or 'clean'}-{profile}", ch.mutate(base, rng, kinds), md, profile))
    for seed in range(1, extra // 2 + 1):
        ev, md = hs.mutated(6000, seed)
        out.append((f"stretched-{seed}", ev, md, "apache-zk-3.9"))
    return out


def _outcome(res) -> tuple:
    return (res.verdict, [d.to_dict() for d in res.divergences],
            [d.to_dict() for d in res.invariant_violations], sorted(res.stats.items(), key=str))


def _child(tree: str, src: str, dst: str) -> None:
    sys.path.insert(0, tree)
    from reference import check_conformance
    import reference.checker
    assert reference.checker.__file__.startswith(os.path.abspath(tree)), reference.checker.__file__
    with open(src, "rb") as f:
        cases = pickle.load(f)
    out = {name: _outcome(check_conformance(ev, md, profile)) for name, ev, md, profile in cases}
    with open(dst, "wb") as f:
        pickle.dump(out, f)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        _child(*argv[1:4])
        return 0
    extra = 40
    if "--extra" in argv:
        i = argv.index("--extra")
        extra = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if not 1 <= len(argv) <= 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    base, new = os.path.abspath(argv[0]), os.path.abspath(argv[1] if len(argv) > 1 else ROOT)
    cases = histories(extra)
    results = []
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "cases.pickle")
        with open(src, "wb") as f:
            pickle.dump(cases, f)
        for n, tree in enumerate((base, new)):
            dst = os.path.join(d, f"out{n}.pickle")
            subprocess.run([sys.executable, os.path.abspath(__file__), "--child", tree, src, dst], check=True,
                           env={**os.environ, "PYTHONHASHSEED": "0"}, cwd=d)
            with open(dst, "rb") as f:
                results.append(pickle.load(f))
    a, b = results
    bad = [name for name, *_ in cases if a[name] != b[name]]
    findings = sum(len(o[1]) + len(o[2]) for o in a.values())
    fails = sum(o[0] == "FAIL" for o in a.values())
    for name in bad[:5]:
        print(f"DIFFERENT {name}:\n  base {repr(a[name])[:600]}\n  new  {repr(b[name])[:600]}")
    if bad:
        print(f"{len(bad)} of {len(cases)} histories differ")
        return 1
    print(f"identical on {len(cases)} histories ({fails} FAIL, {findings} divergences and violations)")
    return 0


if __name__ == "__main__":
    if "--child" not in sys.argv:
        sys.path.insert(0, ROOT)
    sys.exit(main(sys.argv[1:]))
