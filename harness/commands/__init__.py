"""The CLI's commands besides run's core (harness/runner.py) and certify (harness/certify/)."""
