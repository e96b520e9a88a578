"""The ZooKeeper-mode checker's per-write records: an observed partition state (:class:`Obs`) and the
context of a controller write (``writes._WriteCtx``).

They are slotted classes, not NamedTuples: the checker reads their fields dozens of times per
write, and a slot is read several times faster than a NamedTuple field (a descriptor call each).
:class:`Record` gives them what the NamedTuples had and the checker or its tests use: the positional
constructor, equality and hash by value, a readable repr and ``_replace``. On its hot path the
checker makes them with ``object.__new__`` and slot stores instead of the constructor.
"""

from __future__ import annotations

from operator import attrgetter

new_record = object.__new__     # an empty record, its slots set by the caller (the hot paths)


class Record:
    """A slotted record: fields are the subclass's ``__slots__``, in order."""

    __slots__ = ()
    _values: attrgetter

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._values = attrgetter(*cls.__slots__)

    def __init__(self, *values):
        if len(values) != len(self.__slots__):
            raise TypeError(f"{type(self).__name__} takes {len(self.__slots__)} values, got {len(values)}")
        for k, v in zip(self.__slots__, values):
            setattr(self, k, v)

    def __eq__(self, other) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values(self) == other._values(other)

    def __hash__(self) -> int:
        return hash(self._values(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"

    def _replace(self, **changes):
        out = new_record(type(self))
        for k in self.__slots__:
            setattr(out, k, changes.pop(k) if k in changes else getattr(self, k))
        if changes:
            raise ValueError(f"unknown field(s) {sorted(changes)}")
        return out


class Obs(Record):
    """One observed partition state (``isr_set``: its ISR as a frozenset, shared between equal ISRs)."""

    __slots__ = ("leader", "leader_epoch", "isr", "isr_set", "controller_epoch", "recovery", "version")
    leader: int
    leader_epoch: int
    isr: tuple
    isr_set: frozenset
    controller_epoch: int
    recovery: int
    version: int

    def to_dict(self) -> dict:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "controller_epoch": self.controller_epoch, "leader_recovery_state": self.recovery,
                "version": self.version}
