"""Security settings reach every Kafka client, and secrets stay secret.

Two places turn :class:`Settings` into broker credentials: :func:`stream.kafka_clients.
client_kwargs` (every command's aiokafka clients) and :func:`stream.app.
faust_broker_credentials` (the worker's faust clients). They must agree, and no other
module may build an aiokafka client by itself (it would silently connect without them).
The commands run live against a SASL broker in tests/integration/test_sasl.py.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from stream import kafka_clients
from stream.app import faust_broker_credentials
from stream.kafka_clients import client_kwargs
from stream.settings import Settings

pytestmark = pytest.mark.unit

STREAM = Path(kafka_clients.__file__).resolve().parent
SECRET = "Sup3r-s3cret-for-the-test"
CLIENT_CLASSES = {"AIOKafkaProducer", "AIOKafkaConsumer", "AIOKafkaAdminClient", "AIOKafkaClient"}
#: The only modules that build aiokafka clients: the one factory, and the local broker's
#: readiness probe (which takes explicit auth kwargs, see kafka_local.describe_cluster).
ALLOWED = {"kafka_clients.py", "kafka_local.py"}


def sasl(mechanism: str = "PLAIN", protocol: str = "SASL_PLAINTEXT") -> Settings:
    return Settings(broker="kafka://h1:1;h2:2", security_protocol=protocol, sasl_mechanism=mechanism,
                    sasl_username="alice", sasl_password=SECRET)


def test_plaintext_clients_get_no_credentials():
    assert client_kwargs(Settings(broker="kafka://h:1")) == {"bootstrap_servers": "h:1",
                                                             "security_protocol": "PLAINTEXT"}
    assert faust_broker_credentials(Settings()) is None


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_settings_reach_the_aiokafka_clients_and_faust_the_same_way(mechanism):
    s = sasl(mechanism)
    kw = client_kwargs(s)
    assert kw == {"bootstrap_servers": "h1:1,h2:2", "security_protocol": "SASL_PLAINTEXT",
                  "sasl_mechanism": mechanism, "sasl_plain_username": "alice", "sasl_plain_password": SECRET}
    faust_kw = dict(credentials_to_aiokafka_auth(faust_broker_credentials(s)))
    assert faust_kw.pop("ssl_context") is None
    assert faust_kw == {k: v for k, v in kw.items() if k != "bootstrap_servers"}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_ssl_gets_a_tls_context_on_both_paths(mechanism):
    s = sasl(mechanism, "SASL_SSL")
    kw = client_kwargs(s)
    faust_kw = dict(credentials_to_aiokafka_auth(faust_broker_credentials(s)))
    assert kw["security_protocol"] == faust_kw["security_protocol"] == "SASL_SSL"
    assert kw["ssl_context"] is not None and faust_kw["ssl_context"] is not None
    assert (faust_kw["sasl_mechanism"], faust_kw["sasl_plain_password"]) == (mechanism, SECRET)


def test_ssl_gets_a_tls_context_and_no_sasl():
    s = Settings(security_protocol="SSL")
    kw = client_kwargs(s)
    assert kw["security_protocol"] == "SSL" and "sasl_mechanism" not in kw and kw["ssl_context"] is not None
    assert dict(credentials_to_aiokafka_auth(faust_broker_credentials(s)))["security_protocol"] == "SSL"


def test_the_factory_clients_carry_the_sasl_settings():
    async def build():
        s = sasl("SCRAM-SHA-256")
        clients = [kafka_clients.producer(s), kafka_clients.consumer(s, "t"), kafka_clients.admin(s)]
        inner = [clients[0].client, clients[1]._client, clients[2]._client]
        out = [(i._security_protocol, i._sasl_mechanism, i._sasl_plain_username, i._sasl_plain_password)
               for i in inner]
        for c in clients[:2]:
            await c.stop()
        return out

    for got in asyncio.run(build()):
        assert got == ("SASL_PLAINTEXT", "SCRAM-SHA-256", "alice", SECRET)


def _client_constructions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in CLIENT_CLASSES:
                found.append(f"{path.relative_to(STREAM.parent)}:{node.lineno} {name}(...)")
    return found


def test_no_command_builds_an_aiokafka_client_without_the_security_settings():
    """Every command (topics, ingest, replay --from-kafka, export, explain, tail, remediate, demo)
    gets its clients from stream.kafka_clients."""
    stray = [hit for path in sorted(STREAM.rglob("*.py")) if path.name not in ALLOWED
             for hit in _client_constructions(path)]
    assert stray == []


def test_the_commands_do_use_the_factory():
    users = {p.name for p in STREAM.rglob("*.py") if "kafka_clients" in p.read_text()}
    assert {"topics.py", "tail.py", "forensics.py", "service.py", "ingest.py", "runtime.py", "demo.py"} <= users


@pytest.mark.parametrize("render", [repr, str, lambda s: s.model_dump_json(), lambda s: str(s.model_dump())])
def test_settings_never_show_a_secret(render):
    s = Settings(sasl_username="alice", sasl_password=SECRET, ssl_password=SECRET + "-ssl")
    text = render(s)
    assert SECRET not in text and "alice" in text


def test_faust_credentials_never_show_the_password():
    assert SECRET not in repr(faust_broker_credentials(sasl()))


def test_a_sasl_login_error_names_user_and_mechanism_never_the_password():
    hint = kafka_clients.login_hint(sasl("SCRAM-SHA-512"))
    assert "SCRAM-SHA-512 login of user 'alice'" in hint and SECRET not in hint
    assert kafka_clients.login_hint(Settings()) == ""


# --------------------------------------------------------------------------- the local SASL broker


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_a_sasl_broker_listens_only_with_sasl_and_offers_plain_and_scram(tmp_path):
    from stream.devtools import kafka_local

    s = Settings(kafka_port=1111, kafka_controller_port=2222)
    props = _props(kafka_local.render_server_properties(s, tmp_path, sasl_users={"alice": SECRET},
                                                        internal_password="internal-pw"))
    assert props["listeners"] == "SASL_PLAINTEXT://127.0.0.1:1111,CONTROLLER://127.0.0.1:2222"
    assert props["advertised.listeners"] == "SASL_PLAINTEXT://127.0.0.1:1111"
    assert props["listener.security.protocol.map"] == "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert props["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert props["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert props["sasl.mechanism.inter.broker.protocol"] == "PLAIN"
    jaas = props["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert f'user_alice="{SECRET}"' in jaas and 'username="cg-broker" password="internal-pw"' in jaas
    assert props["listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"].endswith("ScramLoginModule required;")
    assert "PLAINTEXT://" not in props["listeners"].replace("SASL_PLAINTEXT://", "")


@pytest.mark.parametrize(("name", "password", "message"), [
    ("alice", "has space", "the password of SASL user 'alice' is not allowed"),
    ("alice", 'quo"te', "the password of SASL user 'alice' is not allowed"),
    ("alice", "", "the password of SASL user 'alice' is not allowed"),
    ("al ice", "fine", "SASL user name 'al ice' is not allowed"),
    ("cg-broker", "fine", "SASL user name 'cg-broker' is not allowed"),
])
def test_sasl_users_the_config_syntax_cannot_carry_are_refused_without_echoing_the_password(name, password, message):
    from stream.devtools import kafka_local

    with pytest.raises(kafka_local.KafkaLocalError) as info:
        kafka_local.check_sasl_users({name: password})
    assert str(info.value).startswith(message)
    assert not password or password not in str(info.value)


def test_the_sasl_broker_user_comes_from_the_client_settings():
    from stream.devtools import kafka_local

    assert kafka_local.sasl_users_from_settings(sasl()) == {"alice": SECRET}
    with pytest.raises(kafka_local.KafkaLocalError, match="CG_SASL_USERNAME and CG_SASL_PASSWORD"):
        kafka_local.sasl_users_from_settings(Settings())
