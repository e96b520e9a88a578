"""Spark-aggregated reports across run records (issue 7).

Entry point: :func:`reports.job.main`, called by ``kafka-chaos report RUNS_PATH -o OUT``.
See ``docs/reports.md`` for the tables, the HTML report and the gate thresholds.
"""
