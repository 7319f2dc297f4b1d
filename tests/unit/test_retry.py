"""The backoff schedule shared by the worker's state-log calls and the model judge."""

from __future__ import annotations

import itertools

import pytest

from stream.retry import backoff

pytestmark = pytest.mark.unit


def test_doubles_from_the_first_wait_up_to_the_cap_and_never_ends():
    assert list(itertools.islice(backoff(0.2, 5.0), 8)) == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2, 5.0, 5.0, 5.0])


def test_a_first_wait_over_the_cap_is_the_cap_and_zero_stays_zero():
    assert list(itertools.islice(backoff(9.0, 5.0), 2)) == [5.0, 5.0]
    assert list(itertools.islice(backoff(0.0, 60.0), 3)) == [0.0, 0.0, 0.0]
