"""Pause the cyclic garbage collector while a decoder allocates many objects that form no cycles.

Decoding a metadata log makes millions of small dicts and lists that live on; each time enough are
made, CPython's collector walks all of them again (it cost more than the decoding itself). They hold
no reference cycles, so nothing is left for the collector to find; reference counting frees them.
The previous state is restored on exit (a pause inside a pause leaves the collector off).

On exit the objects are moved to the oldest generation without a walk (``gc.freeze`` then
``gc.unfreeze``: O(1) list moves that also reset the young generation's count), so the collector's
first young collection does not walk them all anyway; they are long-lived data. Skipped when the
program froze objects itself (``gc.get_freeze_count()``), which ``unfreeze`` would undo.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()
