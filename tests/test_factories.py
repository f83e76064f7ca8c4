"""The test factories themselves."""

from __future__ import annotations

from tests.factories import TurnFactory


def test_one_turn_factory_keeps_the_factory_used(db):
    assert TurnFactory().index == 1
