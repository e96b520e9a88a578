"""Fixtures of the protocol-client tests: scripted loopback servers, closed after each test."""

import pytest

from scripted_server import ScriptedServer


@pytest.fixture
def servers():
    """A list the test appends its :class:`ScriptedServer` s to; every one is closed afterwards."""
    made: list[ScriptedServer] = []
    yield made
    for s in made:
        s.close()
