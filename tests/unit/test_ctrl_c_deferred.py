"""A Ctrl-C while the demo or the local broker starts a child is raised after the child is
known (stream.devtools.ctrl_c_deferred), so whoever stops it can (tests/integration/test_errors.py)."""

from __future__ import annotations

import os
import signal

import pytest

from stream.devtools import ctrl_c_deferred

pytestmark = pytest.mark.unit


def test_a_ctrl_c_inside_the_block_is_raised_after_it_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGINT)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with ctrl_c_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the block ran to its end")
    assert done == ["the block ran to its end"]
    assert signal.getsignal(signal.SIGINT) is before


def test_without_a_ctrl_c_nothing_is_raised():
    with ctrl_c_deferred():
        pass
