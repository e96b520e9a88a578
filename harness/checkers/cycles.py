"""Cycle search over dependency graphs of transactions (Elle style), pure and allocation-light.

A graph is ``succ``: a list indexed by node (``0 .. n-1``) of successor lists (or ``None`` for a
node without successors); duplicates in a successor list are harmless. The transaction checker
(``txn.py``) builds one graph per edge selection (e.g. ``wr`` + ``process`` edges only, or every
edge kind) and asks here for the strongly connected components and a shortest cycle in each.

- :func:`strongly_connected` — Tarjan's algorithm, iterative (no recursion limit), returning the
  non-trivial components only (two or more nodes; self-loops are the caller's business).
- :func:`shortest_cycle` — breadth-first search inside one component: the shortest cycle through
  a start node; tried from several start nodes, the shortest found is kept.
- :func:`find_cycles` — both together: one shortest-found cycle per component.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Sequence

from harness.checkers.common import pos as _pos
from harness.checkers.txn_history import COMMITTED


def strongly_connected(n: int, succ: Sequence) -> list[list[int]]:
    """Components of two or more nodes, each a list of nodes, by iterative Tarjan."""
    index = [-1] * n
    low = [0] * n
    onstack = bytearray(n)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        if not succ[root]:
            index[root] = counter  # no successor: a trivial component, never on the stack
            counter += 1
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        onstack[root] = 1
        call = [(root, iter(succ[root]))]
        while call:
            v, it = call[-1]
            descended = False
            for w in it:
                iw = index[w]
                if iw < 0:
                    if not succ[w]:
                        index[w] = counter
                        counter += 1
                        continue
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    onstack[w] = 1
                    call.append((w, iter(succ[w])))
                    descended = True
                    break
                if onstack[w] and iw < low[v]:
                    low[v] = iw
            if descended:
                continue
            call.pop()
            lv = low[v]
            if call:
                u = call[-1][0]
                if lv < low[u]:
                    low[u] = lv
            if lv == index[v]:
                w = stack.pop()
                onstack[w] = 0
                if w == v:
                    continue  # a single node
                comp = [w]
                while w != v:
                    w = stack.pop()
                    onstack[w] = 0
                    comp.append(w)
                out.append(comp)
    return out


def shortest_cycle(succ: Sequence, members: set | frozenset, start: int) -> list[int] | None:
    """The shortest cycle through ``start`` using only nodes in ``members``, as a node list
    ``[start, ..., last]`` (the edge ``last -> start`` closes it); ``None`` if there is none."""
    parent = {start: -1}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in succ[v] or ():
            if w == start:
                path = [v]
                while parent[path[-1]] != -1:
                    path.append(parent[path[-1]])
                path.reverse()
                return path
            if w in members and w not in parent:
                parent[w] = v
                queue.append(w)
    return None


def find_cycles(n: int, succ: Sequence, *, tries: int = 8, limit: int | None = None) -> tuple[int, list[list[int]]]:
    """``(components, cycles)``: the number of non-trivial strongly connected components and,
    for the first ``limit`` of them (all when ``None``), the shortest cycle found by breadth-first
    search from up to ``tries`` of its nodes (every node of components no larger than ``tries``)."""
    comps = strongly_connected(n, succ)
    comps.sort(key=len)  # the smallest components give the most readable examples
    cycles = []
    for comp in comps if limit is None else comps[:limit]:
        members = frozenset(comp)
        best = None
        for start in sorted(comp)[:tries]:
            c = shortest_cycle(succ, members, start)
            if c is not None and (best is None or len(c) < len(best)):
                best = c
                if len(best) == 2:
                    break
        if best is not None:
            cycles.append(best)
    return len(comps), cycles


class DependencyGraph:
    """Dependencies between transactions ``0 .. n-1`` by kind: ``ww`` (log order in a partition),
    ``wr`` (a transaction read another's write) and ``process`` (one producer's transactions in
    order). Two graphs are kept: every kind (``full``), and ``wr`` + ``process`` only (``wrp``): a
    cycle in the latter contradicts commit order (G1c); cycles that need ``ww`` edges (G0, G1c-ww)
    are normal where writes are not isolated, as in Kafka."""

    def __init__(self, n: int):
        self.n = n
        self.full: list = [None] * n
        self.wrp: list = [None] * n
        self.wr: dict = {}  # (a, b) -> what b read of a's
        self.proc_next: dict = {}  # a -> [b, ...]
        self.counts = {"ww": 0, "wr": 0, "process": 0}

    @staticmethod
    def _add(g: list, a: int, b: int) -> None:
        s = g[a]
        if s is None:
            g[a] = [b]
        else:
            s.append(b)

    def add_ww(self, a: int, b: int) -> None:
        self._add(self.full, a, b)
        self.counts["ww"] += 1

    def add_wr(self, a: int, b: int, info) -> None:
        if (a, b) in self.wr:
            return
        self.wr[(a, b)] = info
        self._add(self.full, a, b)
        self._add(self.wrp, a, b)
        self.counts["wr"] += 1

    def add_process(self, a: int, b: int) -> None:
        self.proc_next.setdefault(a, []).append(b)
        self._add(self.full, a, b)
        self._add(self.wrp, a, b)
        self.counts["process"] += 1

    def kind(self, a: int, b: int) -> str:
        if (a, b) in self.wr:
            return "wr"
        if b in self.proc_next.get(a, ()):
            return "process"
        return "ww"

    def search(self, *, tries: int = 8, limit: int = 1000) -> dict:
        """``{"hard": (components, cycles), "soft": (components, cycles), "largest": int}``: cycles
        of wr + process edges, and of the full graph in components holding no such cycle."""
        n_hard, hard = find_cycles(self.n, self.wrp, tries=tries, limit=limit) if self.counts["wr"] else (0, [])
        hard_members: set = set()
        if n_hard:
            for comp in strongly_connected(self.n, self.wrp):
                hard_members.update(comp)
        comps = [c for c in strongly_connected(self.n, self.full) if not hard_members.intersection(c)]
        comps.sort(key=len)
        soft = []
        for comp in comps[:limit]:
            members = frozenset(comp)
            best = None
            for start in sorted(comp)[:tries]:
                c = shortest_cycle(self.full, members, start)
                if c is not None and (best is None or len(c) < len(best)):
                    best = c
                    if len(c) == 2:
                        break
            if best is not None:
                soft.append(best)
        return {"hard": (n_hard, hard), "soft": (len(comps), soft),
                "largest": max((len(c) for c in comps), default=0)}


class GraphChecks:
    """The dependency-graph checks of the transaction checker (mixed into ``txn._Judge``, which
    provides ``h`` (the history), ``visible``, ``opts``, ``txn()``, ``unclean()`` and ``verdict()``):
    ``log_view`` (ww edges, int-nonmonotonic-send, G0-realtime, visible offsets) and ``cycles``
    (G1c, ww-cycles)."""

    def log_view(self) -> tuple[dict, dict]:
        """One pass over every partition's acknowledged sends in offset order: the ww edges of the
        dependency graph, int-nonmonotonic-send, G0-realtime, and the visible offsets per partition."""
        h = self.h
        visible, t_inv, t_done = self.visible, h.t_inv, h.t_done
        g = self.graph = DependencyGraph(len(h.t_inv))
        add_ww = g.add_ww
        self.vis_offsets: dict = {}
        send_f, rt_f, rt_a = [], [], []
        for tp, (offs, txns, js) in self.h.plog.items():
            order = sorted(range(len(offs)), key=offs.__getitem__)
            vis = []
            prev = -1  # last visible transaction in log order
            last_j: dict = {}  # txn -> (send index, offset) of its last send seen in this partition
            best_inv, best_i, best_off = -math.inf, -1, None
            for x in order:
                i = txns[x]
                off = offs[x]
                if visible[i]:
                    vis.append(off)
                    if i != prev:
                        if prev >= 0:
                            add_ww(prev, i)
                        prev = i
                j = js[x]
                lj = last_j.get(i)
                if lj is not None and lj[0] > j:
                    send_f.append({"writer": self.txn(i), **_pos(tp, off), "send_index": j,
                                   "later_send_index": lj[0], "later_send_offset": lj[1]})
                last_j[i] = (j, off)
                if t_done[i] < best_inv and best_i != i:
                    d = {**_pos(tp, off), "writer": self.txn(i), "completed_t": t_done[i], "earlier_offset": best_off,
                         "earlier_writer": self.txn(best_i), "earlier_invoked_t": best_inv}
                    why = self.unclean(tp)
                    if why:
                        d["allowed_by"] = why
                    (rt_a if why else rt_f).append(d)
                if t_inv[i] > best_inv:
                    best_inv, best_i, best_off = t_inv[i], i, off
            self.vis_offsets[tp] = vis
        for value, (tp, off, _proc) in h.read_at.items() if self.extra_visible else ():
            i = h.writer.get(value)
            if i is None or i < 0 or value not in h.wpos:
                self.vis_offsets.setdefault(tp, []).append(off)
        if self.extra_visible:
            for vis in self.vis_offsets.values():
                vis.sort()
        return (self.verdict(send_f, [], "sends of one transaction to a partition at offsets not increasing in "
                             "send order (int-nonmonotonic-send)"),
                self.verdict(rt_f, rt_a, "writes placed in a partition before the write of a transaction that "
                             "began only after they had completed (G0-realtime)"))

    # -- dependency cycles -----------------------------------------------------------------------
    def cycles(self) -> tuple[dict, dict]:
        h = self.h
        g = self.graph  # ww edges come from log_view
        visible, writer = self.visible, h.writer
        self_reads = []
        for r, reads in enumerate(h.reads):
            for tp, off, value in reads or ():
                i = writer.get(value)
                if i is None or i < 0 or not visible[i]:
                    continue
                if i == r:
                    self_reads.append({"anomaly": "precommitted-read", "length": 1, "steps": [
                        {"txn": self.txn(r), "then": {"kind": "wr", "value": value, **_pos(tp, off)}}]})
                else:
                    g.add_wr(i, r, (tp, off, value))
        by_proc: dict = {}
        for i in range(len(visible)):
            if visible[i]:
                by_proc.setdefault(h.proc[i], []).append(i)
        t_inv, t_done, status = h.t_inv, h.t_done, h.status
        for lst in by_proc.values():  # process order: after the last transaction that committed first
            lst.sort(key=t_inv.__getitem__)
            last_ok = -1
            for i in lst:
                if last_ok >= 0 and t_done[last_ok] <= t_inv[i]:
                    g.add_process(last_ok, i)
                if status[i] == COMMITTED:
                    last_ok = i
        found = g.search(tries=int(self.opts["cycle_tries"]), limit=int(self.opts["max_cycle_components"]))
        n_hard, hard = found["hard"]
        fail = self_reads + [self.describe(c) for c in hard]
        g1c = self.verdict(fail, [], "cycles of write-read and process-order dependencies (G1c): commit order "
                           "contradicts itself", components=n_hard + len(self_reads), edges=dict(g.counts))
        n_soft, soft = found["soft"]
        soft = [self.describe(c) for c in soft]
        extra = {"components": n_soft, "largest_component": found["largest"], "by_anomaly": {}}
        for d in soft:
            extra["by_anomaly"][d["anomaly"]] = extra["by_anomaly"].get(d["anomaly"], 0) + 1
        if not n_soft:
            v, why = "PASS", "no cycle through write-write dependencies"
        elif self.opts["isolated_writes"]:
            v, why = "FAIL", (f"{n_soft} dependency cycles through write-write edges (G0 / G1c-ww), and the option "
                            "isolated_writes says transactions must not interleave")
        else:
            v, why = "ALLOWED", (f"{n_soft} dependency cycles through write-write edges (G0 / G1c-ww): Kafka orders a "
                               "partition by append, not by commit, so concurrent transactions interleave")
        ww = {"verdict": v, "count": n_soft, "reason": why, "examples": soft[: self.k], **extra}
        return g1c, ww

    def label(self, a: int, b: int) -> dict:
        """Why the edge ``a -> b`` exists: the read, the process order or the partition order."""
        kind = self.graph.kind(a, b)
        if kind == "wr":
            tp, off, value = self.graph.wr[(a, b)]
            return {"kind": "wr", "value": value, **_pos(tp, off)}
        if kind == "process":
            return {"kind": "process", "process": self.h.proc[a]}
        wpos = self.h.wpos
        mine: dict = {}
        for v in self.h.writes[a]:
            p = wpos.get(v)
            if p is not None:
                mine.setdefault(p[0], []).append((p[1], v))
        for v in self.h.writes[b]:
            p = wpos.get(v)
            before = [x for x in mine.get(p[0], ()) if x[0] < p[1]] if p is not None else []
            if before:
                o, va = max(before)
                return {"kind": "ww", "topic": p[0][0], "partition": p[0][1], "offset": o, "value": va,
                        "next_offset": p[1], "next_value": v}
        return {"kind": "ww"}

    def describe(self, cycle: list) -> dict:
        steps = [{"txn": self.txn(a), "then": self.label(a, cycle[(j + 1) % len(cycle)])} for j, a in enumerate(cycle)]
        kinds = {s["then"]["kind"] for s in steps}
        if kinds == {"ww"}:
            name = "G0"
        elif "ww" in kinds:
            name = "G1c-ww"
        else:
            name = "G1c-process" if "process" in kinds else "G1c"
        return {"anomaly": name, "length": len(cycle), "steps": steps}

