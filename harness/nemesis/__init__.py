"""The nemesis: faults with apply/heal, role targets resolved at fault time, ``heal_all``.

- :mod:`.catalog` — fault names, defaults and accepted parameters (pure; schedules validate with it).
- :mod:`.targets` — the target grammar (``controller``, ``leader(t,0)``, ``broker:2`` ...) and resolution.
- :mod:`.view` — the ``View`` protocol and ``ZkView`` (reads ZooKeeper directly).
- :mod:`.netrules` — iptables rules for network faults as pure data, run inside the containers.
- :mod:`.fault_base` — the ``Fault`` base class, its ``Context``, ``FaultError`` / ``FaultUnsupported``.
- :mod:`.faults` — one class per fault (process, ZooKeeper and controller, client); ``FAULT_CLASSES``.
- :mod:`.net_faults` — the network faults (iptables, tc).
- :mod:`.nemesis` — ``Nemesis`` (apply / heal / heal_all / residue) and ``nemesis_guard``.

See docs/faults.md.
"""

from harness.nemesis.catalog import CATALOG, LINKS, FaultSpecError, fault_info, validate_params
from harness.nemesis.fault_base import FaultError, FaultUnsupported
from harness.nemesis.nemesis import FaultSkipped, Nemesis, nemesis_guard
from harness.nemesis.targets import Target, TargetError, TargetUnresolved, parse_target
from harness.nemesis.view import View, ZkView

__all__ = ["CATALOG", "LINKS", "FaultSpecError", "fault_info", "validate_params", "Target", "TargetError",
           "TargetUnresolved", "parse_target", "View", "ZkView", "Nemesis", "nemesis_guard", "FaultError",
           "FaultSkipped", "FaultUnsupported"]

