"""Scenario suites: the catalog of scenarios (``catalog.py``) and the pytest entry points."""
