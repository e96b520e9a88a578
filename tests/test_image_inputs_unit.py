"""images.base_and_jars: the base image and the jars are made at the same time (harness/images.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from harness import images


def test_the_base_image_and_the_jars_are_made_at_the_same_time(monkeypatch):
    jars_started = threading.Event()

    def jars(version):
        jars_started.set()
        return Path(f"/cache/{version}/libs")

    def base():
        # sequential making would leave this waiting: the jars start only after the base returns
        assert jars_started.wait(10), "the jars were not being resolved while the base image was made"
        return "sha256:base"

    monkeypatch.setattr(images, "ensure_jars", jars)
    assert images.base_and_jars(base, "4.4.0") == ("sha256:base", Path("/cache/4.4.0/libs"))


def test_a_failure_is_raised_once_both_have_ended(monkeypatch):
    ended = []

    def jars(version):
        threading.Event().wait(0.2)
        ended.append("jars")
        return Path("/libs")

    def base():
        raise images.HarnessError("mmdebstrap failed: E: cannot reach the mirror")

    monkeypatch.setattr(images, "ensure_jars", jars)
    with pytest.raises(images.HarnessError, match="mmdebstrap failed"):
        images.base_and_jars(base, "4.4.0")
    assert ended == ["jars"]
