"""Fixtures for the report tests: one quiet local SparkSession per test module."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from reports.spark import build_session

    s = build_session("local[2]", app_name="reports-tests")
    yield s
    s.stop()
