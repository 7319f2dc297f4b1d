"""One SASL_PLAINTEXT broker shared by the SASL and secrets tests (started on first use).

A separate broker from the session's PLAINTEXT one (conftest.py), on its own free
ports and temp home, started by :func:`stream.devtools.kafka_local.start` with ``sasl_users``:
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 for :data:`USERS`. It is started once per test
session (a module-level cache: a session fixture imported by two modules would start
two) and stopped at the end of the session, or by the kernel with pytest
(``die_with_parent``).
"""

from __future__ import annotations

import functools
import secrets
import tempfile
from pathlib import Path
from typing import Any

import pytest

from stream.devtools import kafka_local
from stream.settings import Settings
from tests.integration.harness import worker_env

#: Distinctive passwords: the secrets tests grep every output for them.
ALICE_PASSWORD = f"alice-Pw-{secrets.token_hex(6)}"
ADMIN_PASSWORD = f"admin-Pw-{secrets.token_hex(6)}"
USERS = {"alice": ALICE_PASSWORD, "admin": ADMIN_PASSWORD}

_broker: dict[str, Any] = {}


def sasl_broker(request: pytest.FixtureRequest) -> kafka_local.BrokerInfo:
    """The shared SASL broker (started on first call; stopped at session end)."""
    if "info" in _broker:
        return _broker["info"]
    if "error" in _broker:
        pytest.fail(_broker["error"], pytrace=False)
    home = Path(tempfile.mkdtemp(prefix="cg-sasl-broker-"))
    problem = None
    for _ in range(3):
        port, cport = kafka_local.free_ports(2)
        settings = Settings(kafka_home=home, kafka_port=port, kafka_controller_port=cport)
        try:
            info = kafka_local.start(settings, fresh=True, timeout=150, die_with_parent=True, sasl_users=USERS)
        except kafka_local.PortInUseError as exc:
            problem = str(exc)
            continue
        except kafka_local.KafkaLocalError as exc:
            problem = str(exc)
            break
        request.config.add_cleanup(functools.partial(kafka_local.stop, settings, timeout=15))
        _broker.update(info=info, settings=settings)
        return info
    _broker["error"] = f"could not start the SASL test broker: {problem}"
    pytest.fail(_broker["error"], pytrace=False)


def sasl_env(bootstrap: str, tmp_path: Path, *, mechanism: str = "PLAIN", user: str = "alice",
             password: str | None = None, **extra: Any) -> dict[str, str]:
    """:func:`harness.worker_env` plus the SASL client settings."""
    return worker_env(
        bootstrap, tmp_path, CG_SECURITY_PROTOCOL="SASL_PLAINTEXT", CG_SASL_MECHANISM=mechanism,
        CG_SASL_USERNAME=user, CG_SASL_PASSWORD=USERS[user] if password is None else password, **extra,
    )


def settings_of(env: dict[str, str]) -> Settings:
    """The Settings a subprocess with ``env`` would read (for in-test clients)."""
    names = {f"CG_{name.upper()}": name for name in Settings.model_fields}
    return Settings(**{names[k]: v for k, v in env.items() if k in names})
