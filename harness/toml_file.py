"""``read_toml(path)``: the one read-and-parse of the harness's TOML input files (scenario, distribution and
nodes files), shared by their loaders and by ``kafka-chaos validate`` so that a file is read once and every
loader reports an unreadable file or a TOML syntax error the same way: :class:`TomlFileError` with the file,
the 1-based line (0 when unknown) and one line saying what is wrong (``cannot read: ...`` /
``not valid TOML: ...``)."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from harness.errors import HarnessError

_AT = re.compile(r"\s*\(at line (\d+), column \d+\)")


class TomlFileError(HarnessError):
    """A TOML file that cannot be read or parsed: ``path``, ``line`` (0 when unknown), ``what`` (one line)."""

    def __init__(self, path: str, line: int, what: str, missing: bool = False):
        self.path, self.line, self.what, self.missing = path, line, what, missing
        super().__init__(f"{path}:{line}: {what}" if line else f"{path}: {what}")


def read_toml(path: str | os.PathLike) -> tuple[str, dict]:
    """(source text, parsed document) of a UTF-8 TOML file; :class:`TomlFileError` when it cannot be read
    (``missing`` set when it does not exist) or is not valid TOML (``line`` of the syntax error)."""
    p = str(path)
    try:
        text = Path(p).read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise TomlFileError(p, 0, f"cannot read: {e.strerror}", missing=True) from None
    except (OSError, UnicodeDecodeError) as e:
        raise TomlFileError(p, 0, f"cannot read: {e.strerror if isinstance(e, OSError) else e}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _AT.search(str(e))
        raise TomlFileError(p, int(m.group(1)) if m else 0, "not valid TOML: " + _AT.sub("", str(e))) from None
