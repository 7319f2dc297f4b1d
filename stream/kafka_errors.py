"""aiokafka's failures in our words: one line each, naming what failed, where, and the fix.

Knows the settings and aiokafka's error classes; imports neither :mod:`stream.errors` nor
:mod:`stream.kafka_clients` (both use it: :func:`stream.errors.describe` for any aiokafka
error, :func:`stream.kafka_clients.kafka_error` for a command's). Never names a password.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from stream.settings import Settings


def login_hint(settings: Settings) -> str:
    """What to check when a SASL broker refuses us ("" without SASL). Names the user
    and mechanism, never the password."""
    if not settings.security_protocol.startswith("SASL"):
        return ""
    return (
        f"if the broker refused the {settings.sasl_mechanism} login of user {settings.sasl_username!r}, "
        "check CG_SASL_USERNAME, CG_SASL_PASSWORD and CG_SASL_MECHANISM"
    )


#: aiokafka's words for a connection failure -> what it means for the user and the fix.
_CONNECTION_CAUSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("Connect call failed", "Connection refused", "Errno 111"),
     "nothing listens there (connection refused); start the broker (a local one: `checkpoint-guard kafka start`) "
     "or point CG_BROKER at it"),
    (("Name or service not known", "nodename nor servname", "Temporary failure in name resolution", "Errno -2",
      "Errno -3", "Errno -5"),
     "the host name does not resolve; check the host in CG_BROKER"),
    (("CERTIFICATE_VERIFY_FAILED",),
     "the broker's TLS certificate is not trusted; set CG_SSL_CAFILE to the CA that signed it"),
    (("WRONG_VERSION_NUMBER", "wrong version number", "record layer failure", "SSLError", "SSL:"),
     "the TLS handshake failed: that listener may not speak TLS; set CG_SECURITY_PROTOCOL to what the listener "
     "expects (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"),
    (("UnsupportedSaslMechanism", "UNSUPPORTED_SASL_MECHANISM"),
     "the broker does not offer that SASL mechanism; set CG_SASL_MECHANISM to one it enables (PLAIN, "
     "SCRAM-SHA-256, SCRAM-SHA-512)"),
)


def _connection_problem(settings: Settings, said: str) -> str:
    """What a failed connection means, from aiokafka's last logged error ``said``."""
    if "SaslAuthenticationFailed" in said or "Authentication failed" in said:
        return (f"the broker refused the {settings.sasl_mechanism} login of user {settings.sasl_username!r} "
                "(wrong password, unknown user or another mechanism); check CG_SASL_USERNAME, CG_SASL_PASSWORD "
                "and CG_SASL_MECHANISM")
    for needles, meaning in _CONNECTION_CAUSES:
        if any(n in said for n in needles):
            return meaning
    hint = login_hint(settings) or ("check that the broker is running and CG_BROKER (a broker that asks for "
                                    "a login also needs CG_SECURITY_PROTOCOL and the CG_SASL_* settings)")
    return f"no broker answered; {hint}"


def aiokafka_line(settings: Settings, exc: BaseException, doing: str = "cannot reach Kafka") -> str:
    """One line for an aiokafka failure: what, where, and the fix — in our words, never aiokafka's
    raw line (its last logged error, :data:`stream.logs.KAFKA_ERRORS`, only decides which of our
    lines it is)."""
    from aiokafka import errors as ke

    from stream.logs import KAFKA_ERRORS
    where = f"{doing} at {settings.bootstrap_servers}"
    user = f"user {settings.sasl_username!r}" if settings.security_protocol.startswith("SASL") else "this client"
    if isinstance(exc, ke.KafkaConnectionError):
        said = f"{KAFKA_ERRORS.last or ''} {str(exc).split('; if the broker refused', 1)[0]}"
        return f"{where}: {_connection_problem(settings, said)}"
    if isinstance(exc, (ke.SaslAuthenticationFailed, ke.AuthenticationFailedError)):
        return f"{where}: {_connection_problem(settings, 'SaslAuthenticationFailed')}"
    if isinstance(exc, ke.UnknownTopicOrPartitionError):
        return (f"{where}: a topic it needs does not exist; run `checkpoint-guard topics create` first "
                "(or check the CG_*_TOPIC settings)")
    if isinstance(exc, (ke.TopicAuthorizationFailedError, ke.GroupAuthorizationFailedError,
                        ke.ClusterAuthorizationFailedError, ke.TransactionalIdAuthorizationFailed)):
        what = type(exc).__name__.removesuffix("Error").replace("AuthorizationFailed", "")
        return (f"{where}: the broker's ACLs do not let {user} use that {what.lower() or 'resource'}; grant the "
                "ACLs listed in docs/OPERATIONS.md §9")
    if isinstance(exc, ke.KafkaTimeoutError):
        return f"{where}: the broker did not answer in time; check that it is healthy and reachable (CG_BROKER)"
    name = type(exc).__name__
    text = " ".join(str(exc).removeprefix(f"{name}: ").split())
    text = "" if text in (name, "") else f" ({text})"
    return f"{where}: the broker answered {name}{text}; check the broker's log and CG_BROKER"
