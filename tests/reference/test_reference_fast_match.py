"""WriteJudge._explains (the checker's allocation-free hot path) answers exactly what scanning
WriteJudge._outcomes answers: every candidate write of every sampled (state, context, view)."""

from __future__ import annotations

import itertools
import random

from reference.checker import Checker
from reference.profiles import profile_for
from reference.writes import Obs, _WriteCtx

BROKERS = (1, 2, 3, 4)


def _subsets(xs):
    return [frozenset(c) for n in range(len(xs) + 1) for c in itertools.combinations(xs, n)]


def _ordered(rng, pool, lo=0):
    pool = list(pool)
    rng.shuffle(pool)
    return tuple(pool[: rng.randint(lo, len(pool))])


def test_explains_matches_outcomes():
    rng = random.Random(22)
    sets = _subsets(BROKERS)
    writes = [(nl, nisr, nrec) for nl in (-1,) + BROKERS for nisr in sets for nrec in (0, 1)]
    checkers = [Checker(profile_for(None, name, False), {}) for name in ("apache-zk-3.9", "apache-zk-2.8")]
    assert {c.rec_supported for c in checkers} == {True, False}
    for _ in range(1500):
        isr = _ordered(rng, BROKERS)
        if rng.random() < 0.05 and isr:
            isr = isr + isr[:1]                   # a malformed ISR with a repeated member
        prev = Obs(rng.choice((-1,) + BROKERS + isr + isr), 3, isr, frozenset(isr), 1, rng.choice((0, 1)), 7)
        rs = _ordered(rng, BROKERS, 1)
        trs = None if rng.random() < 0.5 else _ordered(rng, BROKERS, 1)
        c = _WriteCtx(rs, trs, rng.random() < 0.5, frozenset(_ordered(rng, BROKERS)) if rng.random() < 0.3
                      else frozenset(), rng.random() < 0.15, rng.random() < 0.3, rng.random() < 0.15,
                      False)   # failover_maybe: read by _check_controller_write only
        reg = rng.choice(sets)
        sd = rng.choice(sets) if rng.random() < 0.3 else frozenset()
        for chk in checkers:
            outs = chk._outcomes(prev, c, reg, sd)
            for any_rec in (False, True):
                for nl, nisr, nrec in writes:
                    want = any(o[0] == nl and o[1] == nisr and (any_rec or o[2] == nrec) for o in outs)
                    got = chk._explains(prev, c, reg, sd, nl, nisr, nrec, any_rec)
                    assert got == want, (prev, c, reg, sd, (nl, nisr, nrec), any_rec, outs)
