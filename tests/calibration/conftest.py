"""The calibration protocol's state for a test module, built once per module through the services
(tests/scenarios.py): three reviewers and two experts; the module's ``CLOSED_ROUNDS`` calibration rounds coded,
decided by the gold panel, closed, each with its metric run computed; the next round open and coded, its gold not
yet decided. Each test gets it afresh, and what a test changes is rolled back (see ``shared_state``)."""

from __future__ import annotations

import pytest

from tests import scenarios


@pytest.fixture(scope="module")
def protocol_study_id(request, shared_state):
    closed_rounds = request.module.CLOSED_ROUNDS
    with shared_state():
        protocol = scenarios.protocol_study()
        for number in range(1, closed_rounds + 1):
            scenarios.calibration_round_done(protocol, number)
        open_round = scenarios.calibration_round_open(protocol, closed_rounds + 1)
        scenarios.calibration_round_code(protocol, open_round)
        yield protocol.study.pk


@pytest.fixture
def protocol(db, protocol_study_id) -> scenarios.Protocol:
    return scenarios.Protocol.load(protocol_study_id)
