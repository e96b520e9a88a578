"""The faults a scenario states, read without running it (``run --plan``, harness/commands/plan.py).

Three kinds of scenario, three sources:

- a seeded fault mix (``Scenario.fault_mix``): the schedule :func:`harness.scenario.schedule.generate_schedule`
  derives from the run's seed, exactly as the run will (see :func:`stated_faults`);
- a scenario file's ``[[steps]]``: the steps as the file gives them (``script.plan_steps``, set by
  :func:`harness.scenario.steps.make_script`), each with its ``at`` / ``after`` and ``duration``;
- a Python script (``suites/scenarios/``): its source, read with :mod:`ast`. Every ``ctx.fault(KIND,
  TARGET, **PARAMS)`` call is found in source order, also inside the module's helper functions the
  script calls with ``ctx`` (two levels deep). Names are looked up in the function's closure, its
  defaults and its module, and arguments passed to a helper are bound to its parameters, so
  ``_leader_fault("kill")`` yields the fault ``kill``. What only the running script knows (a target
  built from the cluster's state, ``f"broker:{old}"``) is kept as its text, ``broker:{old}``, with the
  assignment that sets it when the script has one (``old = at_fault["leader"]``); a call in a loop or
  under a condition says so. Nothing is executed and nothing is imported.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass, field

_PLAIN = (str, int, float, bool, type(None))
MAX_DEPTH = 2


@dataclass
class StatedFault:
    """One fault as a scenario states it. ``target``/``kind``: resolved text, or the script's own
    text where only the run knows the value (``resolved`` False). ``at``/``duration``: seconds after
    the fault phase starts / until its heal (None: when the script gets there / the script heals it)."""
    kind: str
    target: str
    params: dict = field(default_factory=dict)
    resolved: bool = True              # kind, target and params known before the run
    at: float | None = None
    after: str | None = None           # a scenario file's step id this one counts from
    duration: float | None = None
    repeated: bool = False             # in a loop or a comprehension: once per element
    conditional: bool = False          # under an if/else: maybe not on every cluster
    source: str = ""                   # where the plan found it: schedule, step N, file.py:LINE
    note: str = ""                     # e.g. how the script chooses the target


def stated_faults(scenario, seed: int = 0, roles=None) -> tuple[str, list[StatedFault]]:
    """``(how, faults)``: ``how`` is ``schedule`` (a generated fault mix), ``steps`` (a scenario file)
    or ``script`` (Python: faults in source order), ``none`` when the scenario states no fault."""
    if scenario.fault_mix is not None and (scenario.script is None or not getattr(scenario.script, "plan_steps", None)):
        from harness.scenario.schedule import generate_schedule
        sched = generate_schedule(seed, scenario.fault_mix, roles)
        return "schedule", [StatedFault(i.fault, i.target, dict(i.params), at=i.at, duration=i.duration,
                                        source=f"schedule item {n}") for n, i in enumerate(sched.items)]
    steps = getattr(scenario.script, "plan_steps", None)
    if steps is not None:
        out = [StatedFault(s["fault"], s["target"], dict(s.get("params") or {}), at=s["at"], after=s.get("after"),
                           duration=s.get("duration"), source=f"steps[{s['index']}]")
               for s in steps if "fault" in s]
        return ("steps" if out else "none"), out
    if scenario.script is None:
        return "none", []
    out = _from_function(scenario.script, {}, 0)
    return ("script" if out else "none"), out


# -- Python scripts --------------------------------------------------------------------------------
class _Unknown:
    """A value only the running script knows: its source text."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text


def _env(fn) -> dict:
    env = dict(getattr(fn, "__globals__", {}))
    try:
        for name, p in inspect.signature(fn).parameters.items():
            if p.default is not inspect.Parameter.empty:
                env[name] = p.default
    except (TypeError, ValueError):
        pass
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            env[name] = cell.cell_contents
        except ValueError:        # an empty cell
            pass
    return env


def _plain(v) -> bool:
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x) for k, x in v.items())
    return isinstance(v, _PLAIN)


def _value(node: ast.AST, env: dict):
    """The value of an expression when it is known without running (a literal, a name bound to plain
    data, an f-string of known parts), else :class:`_Unknown` with its text (f-strings: the known
    parts filled in)."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, ast.Name) and node.id in env and _plain(env[node.id]) and not isinstance(env[node.id], _Unknown):
        return env[node.id]
    if isinstance(node, ast.Name) and isinstance(env.get(node.id), _Unknown):
        return env[node.id]
    if isinstance(node, ast.JoinedStr):
        parts, known = [], True
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            inner = _value(v.value, env)
            if isinstance(inner, _Unknown) or not _plain(inner):
                known = False
                parts.append("{" + str(inner) + "}")
            else:
                parts.append(str(inner))
        return "".join(parts) if known else _Unknown("".join(parts))
    return _Unknown(ast.unparse(node))


def _assignments(tree: ast.AST) -> dict[str, str]:
    """``name -> "name = <expr>"`` for the simple assignments of a function (the last one wins)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = f"{node.targets[0].id} = {ast.unparse(node.value)}"
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            out[node.target.id] = f"for {node.target.id} in {ast.unparse(node.iter)}"
        elif isinstance(node, ast.comprehension) and isinstance(node.target, ast.Name):
            out[node.target.id] = f"for {node.target.id} in {ast.unparse(node.iter)}"
    return out


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def _context(node: ast.AST, parents: dict, top: ast.AST) -> tuple[bool, bool]:
    """(in a loop or comprehension, under a condition) between ``node`` and the function ``top``."""
    loop = cond = False
    p = parents.get(node)
    while p is not None and p is not top:
        if isinstance(p, (ast.For, ast.While, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loop = True
        if isinstance(p, (ast.If, ast.IfExp)):
            cond = True
        p = parents.get(p)
    return loop, cond


def _source(fn) -> tuple[ast.AST, str, int] | None:
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn) or "?"
    except (OSError, TypeError):
        return None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    return tree, path.rsplit("/", 1)[-1], first


def _bind(callee, call: ast.Call, env: dict) -> dict:
    """The callee's parameters bound to the call's arguments (known values, or the caller's text)."""
    try:
        params = list(inspect.signature(callee).parameters.values())
    except (TypeError, ValueError):
        return {}
    out: dict = {}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for p, a in zip(positional, call.args):
        out[p.name] = _value(a, env)
    names = {p.name for p in params}
    extra = {}
    for k in call.keywords:
        if k.arg is None:
            continue
        v = _value(k.value, env)
        if k.arg in names:
            out[k.arg] = v
        else:
            extra[k.arg] = v
    var_kw = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    if var_kw:
        out[var_kw] = extra if all(not isinstance(v, _Unknown) for v in extra.values()) else _Unknown(
            ", ".join(f"{k}={v}" for k, v in extra.items()))
    return out


def _from_function(fn, bound: dict, depth: int, outer: tuple[bool, bool] = (False, False)) -> list[StatedFault]:
    src = _source(fn)
    if src is None:
        return []
    tree, path, first = src
    env = _env(fn)
    env.update(bound)
    top = tree.body[0] if tree.body else tree
    parents = _parents(tree)
    assigned = _assignments(tree)
    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    out: list[StatedFault] = []
    for call in calls:
        loop, cond = _context(call, parents, top)
        loop, cond = loop or outer[0], cond or outer[1]
        f = call.func
        if isinstance(f, ast.Attribute) and f.attr == "fault" and isinstance(f.value, ast.Name) and f.value.id == "ctx":
            out.append(_fault_call(call, env, assigned, loop, cond, f"{path}:{first + call.lineno - 1}"))
        elif isinstance(f, ast.Name) and depth < MAX_DEPTH and inspect.isfunction(env.get(f.id)) \
                and any(isinstance(a, ast.Name) and a.id == "ctx" for a in call.args):
            out.extend(_from_function(env[f.id], _bind(env[f.id], call, env), depth + 1, (loop, cond)))
    return out


def _fault_call(call: ast.Call, env: dict, assigned: dict, loop: bool, cond: bool, where: str) -> StatedFault:
    kind = _value(call.args[0], env) if call.args else _Unknown("?")
    target = _value(call.args[1], env) if len(call.args) > 1 else None
    params: dict = {}
    unknown_params = []
    for k in call.keywords:
        v = _value(k.value, env)
        if k.arg is None:                  # **params
            if isinstance(v, dict):
                params.update(v)
            elif not (isinstance(v, _Unknown) and not v.text) and v != {}:
                unknown_params.append(f"**{v}")
        elif isinstance(v, _Unknown):
            unknown_params.append(f"{k.arg}={v}")
        else:
            params[k.arg] = v
    resolved = not isinstance(kind, _Unknown) and not isinstance(target, _Unknown) and not unknown_params
    target_text = "(the fault's default target)" if target is None else str(target)
    notes = []
    if isinstance(target, _Unknown):
        names = [n for piece in re.findall(r"\{([^{}]*)\}", target.text) or [target.text]
                 for n in _names(piece)]
        how = "; ".join(assigned[n] for n in dict.fromkeys(names) if n in assigned)
        notes.append("target chosen by the script at run time" + (f" ({how})" if how else ""))
    if unknown_params:
        notes.append("params set by the script: " + ", ".join(unknown_params))
    return StatedFault(str(kind), target_text, params, resolved=resolved, repeated=loop, conditional=cond,
                       source=where, note="; ".join(notes))


def _names(text: str) -> list[str]:
    """The names an expression's text uses ([] when it does not parse)."""
    try:
        return [n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)]
    except SyntaxError:
        return []
