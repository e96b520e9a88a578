"""Scenario families, one module each (the seed articles' situations); :mod:`suites.catalog` lists them all.

Each module (except ``common``) defines ``SCENARIOS: list[Scenario]``; :mod:`suites.catalog` finds
every module here by itself (listing order: ``FAMILY_ORDER`` there).
"""
