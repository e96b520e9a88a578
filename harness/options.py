"""Small command-line value parsers shared by several subcommands."""

from __future__ import annotations

from .errors import HarnessError


def config_pairs(pairs: list[str] | None, option: str = "--config") -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``; a pair without ``=`` or with an empty key is
    a usage error naming the option."""
    out: dict[str, str] = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep or not k.strip():
            raise HarnessError(f"{option} expects KEY=VALUE, got {p!r}")
        out[k.strip()] = v.strip()
    return out


def config_args(overrides: dict[str, str]) -> list[str]:
    """The ``--config KEY=VALUE`` arguments that give a child process the same overrides."""
    return [a for k, v in overrides.items() for a in ("--config", f"{k}={v}")]
