"""Scenarios: the Python API, scenario files and their schema, steps, fault schedules."""
