"""Clusters the harness starts: containers, nodes, the control plane and admin operations."""
