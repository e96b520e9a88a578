"""Pause the cyclic garbage collector while a decoder allocates many objects that form no cycles.

Decoding a metadata log makes millions of small dicts and lists that live on; each time enough are
made, CPython's collector walks all of them again (it cost more than the decoding itself). They hold
no reference cycles, so nothing is left for the collector to find; reference counting frees them.
The previous state is restored on exit (a pause inside a pause leaves the collector off).
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
            gc.enable()
