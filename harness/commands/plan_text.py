"""The text form of a plan (harness/commands/plan.py builds it; ``--json`` prints the same data)."""

from __future__ import annotations

import json


def _minutes(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 120 else f"{s // 60} min {s % 60:02d} s"


def _params(p: dict) -> str:
    return " ".join(f"{k}={json.dumps(v)}" for k, v in p.items())


def _shape_text(c: dict) -> str:
    parts = [f"{c['brokers']} broker{'s' if c['brokers'] != 1 else ''}"]
    roles = {}
    for n in c["nodes"]:
        if n["role"] != "broker":
            key = n.get("service") or n["role"]
            roles[key] = roles.get(key, 0) + 1
    parts += [f"{k} {v}" if k not in ("zookeeper", "controller") else
              f"{v} {'ZooKeeper' if k == 'zookeeper' else 'controller'}{'s' if v != 1 and k == 'controller' else ''}"
              for k, v in roles.items()]
    return " + ".join(parts)


def _commands(lines: list[str], label: str, items: list[dict], example: bool) -> None:
    for it in items:
        tag = " (e.g.)" if example else ""
        first, *rest = it["commands"]
        head = f"      {label} {it['node']}{tag}: "
        for i, cmd in enumerate([first, *rest]):
            text = cmd.replace("\n", "\n" + " " * 10)
            lines.append((head if i == 0 else " " * len(head)) + text)


def render(plan: dict) -> str:
    b, d = plan["broker"], plan["duration"]
    what = plan["plan"] + ("" if plan["plan"] == "certify" else " " + plan["target"])
    lines = [f"plan of `kafka-chaos {what}`: touches {plan['touched']}",
             f"broker        {b['image']}  ({b['image_note']})",
             f"distribution  {b['distribution']}: layout {b['layout']}, roles {', '.join(b['roles'])}, "
             f"controller model {b['controller_model']}; profile {b['profile']}"
             + ("" if plan.get("profile_given", True) else " (certify needs --profile; the default is shown)"),
             f"security      {', '.join(f'{k} {v}' for k, v in plan['security'].items() if v is not None)}",
             f"where         {plan['where']['text']}",
             f"seed          {plan['seed']}" + (f", repeat {plan['repeat']}" if plan.get("repeat", 1) > 1 else "")]
    if plan.get("broker_config"):
        lines.append(f"broker config {_params(plan['broker_config'])} (over each scenario's own)")
    if b["preflight"]:
        lines.append("preflight     a cluster of the distribution file's broker checks its contract first")
    if plan.get("would_stop"):
        lines.append(f"would stop    {plan['would_stop']}")
    if plan.get("owner_confirmation"):
        lines.append(f"owner         {plan['owner_confirmation']['text']}")
    for key in ("variant", "shard", "runs_dir", "out"):
        if plan.get(key):
            lines.append(f"{key.replace('_', ' '):13} {plan[key]}")
    shapes: dict[str, dict] = {}
    for s in plan["scenarios"]:
        shapes.setdefault(json.dumps(s["cluster"]["nodes"]), s["cluster"])
    letters = {k: chr(ord("A") + i) for i, k in enumerate(shapes)}
    lines.append("")
    lines.append("clusters (each run starts its own, named kc-<prefix><run>-*, and removes it after the run)"
                 if plan["where"]["kind"] == "containers" else "cluster (the nodes file's hosts)")
    for key, c in shapes.items():
        lines.append(f"  {letters[key]}: {_shape_text(c)}, network {c['network']}")
        for n in c["nodes"]:
            ctl = ", runs a controller" if n.get("runs_controller") else ""
            lines.append(f"     {n['alias']:14} {n['role']:10} {n['where']:34} {n['port']}{ctl}")
    lines.append("")
    lines.append(f"{len(plan['scenarios'])} scenario(s) would run"
                 + (f", {len(plan['not_applicable'])} do not apply" if plan["not_applicable"] else "") + ":")
    for i, s in enumerate(plan["scenarios"], 1):
        lines.append(f"[{i}] {s['label']}  (cluster {letters[json.dumps(s['cluster']['nodes'])]}, "
                     f"~{_minutes(s['estimate_s'])}: {s['estimate_basis']}; bound {s['max_duration_s']:g} s)")
        lines.append(f"    {s['description']}")
        if not s["faults"]:
            lines.append("    no fault: the run's load and checks only" if s["fault_source"] == "none" else "")
        for k, f in enumerate(s["faults"], 1):
            params = f" {_params(f['params'])}" if f["params"] else ""
            lines.append(f"    fault {k}: {f['fault']} {f['target']}{params} — {f['target_words']}")
            lines.append(f"      when: {f['when']}  [{f['source']}]")
            if f.get("note"):
                lines.append(f"      note: {f['note']}")
            c = f.get("commands")
            if c is None:
                continue
            if c.get("note") and not c["apply"]:
                lines.append(f"      {c['note']}")
                continue
            _commands(lines, "on", c["apply"], c["example"])
            _commands(lines, "heal", c["heal"], c["example"])
            if c.get("note"):
                lines.append(f"      ({c['note']})")
    if plan["not_applicable"]:
        lines.append("")
        lines.append("not applicable:")
        for s in plan["not_applicable"]:
            lines.append(f"  {s['name']}: {s['reason']}")
    if plan.get("capabilities"):
        lines.append("")
        lines.append("capabilities:")
        for c in plan["capabilities"]:
            lines.append(f"  {c['name']:20} " + (f"NOT-APPLICABLE: {c['not_applicable']}" if c["not_applicable"]
                                                 else ", ".join(c["scenarios"])))
    if plan.get("preflight_note"):
        lines.append(f"  ({plan['preflight_note']})")
    lines.append("")
    lines.append(f"expected duration: {d['runs']} run(s), ~{_minutes(d['serial_s'])} one at a time"
                 + (f", ~{_minutes(d['parallel_s'])} with --parallel {d['parallel']}" if d["parallel"] > 1 else "")
                 + (f" (including a ~{d['preflight_s']:g} s preflight)" if d["preflight_s"] else ""))
    lines.append(f"  estimates: {d['basis']}")
    lines.append("  (e.g.): the target is resolved when the fault is applied; the commands are shown for an example "
                 "state: the first voter (ZooKeeper mode: broker 1) is the controller, partition P is led by the "
                 "(P mod N)+1-th broker with every replica in the ISR")
    return "\n".join(lines)
