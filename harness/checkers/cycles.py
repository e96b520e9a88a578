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

from collections import deque
from typing import Sequence


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
