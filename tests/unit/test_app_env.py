"""Only CG_* configures the worker: faust's own environment variables are ignored."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def test_fausts_environment_variables_do_not_override_our_settings() -> None:
    env = dict(os.environ, PROCESSING_GUARANTEE="exactly_once", BROKER_URL="kafka://evil:1",
               WEB_PORT="1234", WEB_BIND="0.0.0.0", BROKER_SESSION_TIMEOUT="99",
               CG_SESSION_TIMEOUT="12", CG_WEB_PORT="7001", CG_BROKER="kafka://127.0.0.1:9",
               CG_WEB_HOST="127.0.0.1")
    code = ("import stream.app as a; c = a.app.conf; "
            "print(c.processing_guarantee.value, [str(u) for u in c.broker], c.web_port, c.web_bind, "
            "c.broker_session_timeout, c.broker_heartbeat_interval)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["at_least_once", "['cgkafka://127.0.0.1:9']", "7001", "127.0.0.1",
                                  "12.0", "3.0"]


def test_a_bad_setting_is_one_clear_line_per_variable_even_for_help() -> None:
    env = dict(os.environ, CG_PARTITIONS="abc", CG_BATCH_MAX="0", CG_SASL_PASSWORD="s3cr3t-xyz")
    out = subprocess.run([sys.executable, "-m", "stream", "--help"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "checkpoint-guard: error: CG_PARTITIONS='abc': Input should be a valid integer, unable to parse string "
        "as an integer; set CG_PARTITIONS to a valid value (README, \"Settings\") or unset it",
        "checkpoint-guard: error: CG_BATCH_MAX='0': Input should be greater than or equal to 1; set CG_BATCH_MAX "
        "to a valid value (README, \"Settings\") or unset it",
    ]
    assert "s3cr3t-xyz" not in out.stdout + out.stderr
