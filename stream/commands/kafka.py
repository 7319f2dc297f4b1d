"""``python -m stream kafka start|stop|status`` — the project's own local Kafka broker.

Why a command: this machine (and CI) has Java and Maven but no Docker, and both the
tests and a local worker need a real broker (DESIGN.md §6). The work is done by
:mod:`stream.devtools.kafka_local`; this module only parses options, prints one line per
outcome and maps failures to one ``checkpoint-guard: error: ...`` line.
"""

from __future__ import annotations

from pathlib import Path

import click

from stream.commands._base import argument, command, fail, option
from stream.settings import get_settings


@command(
    argument("action", type=click.Choice(["start", "stop", "status"])),
    option(
        "--keep-data",
        is_flag=True,
        default=False,
        help="start: keep topics/offsets of the previous run in KAFKA_HOME/data "
        "(default: wipe them, new cluster).",
    ),
    option("--port", type=int, default=None, help="start: PLAINTEXT port [default: CG_KAFKA_PORT, 9092]."),
    option(
        "--controller-port",
        type=int,
        default=None,
        help="start: KRaft CONTROLLER port [default: CG_KAFKA_CONTROLLER_PORT, 9093].",
    ),
    option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Broker run dir (config, data, broker.log, pid) "
             "[default: CG_KAFKA_HOME, else <data>/kafka = ~/.local/share/checkpoint-guard/kafka].",
    ),
    option(
        "--sasl",
        is_flag=True,
        default=False,
        help="start: listen with SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) instead of "
        "PLAINTEXT, for the user CG_SASL_USERNAME / CG_SASL_PASSWORD (the one the clients log in as).",
    ),
    option(
        "--sasl-user",
        "sasl_user",
        multiple=True,
        metavar="NAME:PASSWORD",
        help="start: one more SASL user (repeatable; implies --sasl). The password is visible to "
        "local users in the process list: prefer --sasl with CG_SASL_PASSWORD for real secrets.",
    ),
    option(
        "--timeout",
        type=float,
        default=None,
        help="Seconds. start: wait this long for the broker to answer [90]; "
        "stop: wait this long for it to exit before SIGKILL [30].",
    ),
)
def kafka(
    action: str,
    keep_data: bool,
    port: int | None,
    controller_port: int | None,
    home: Path | None,
    sasl: bool,
    sasl_user: tuple[str, ...],
    timeout: float | None,
) -> int:
    """Start, stop or inspect the local single-node Kafka broker (KRaft).

    \b
    start   resolve Apache Kafka's jars from Maven Central (first time only,
            cached in CG_KAFKA_CACHE), format a fresh data dir, launch the broker
            in the background on 127.0.0.1 and wait until it answers a
            describe-cluster request. Prints the bootstrap address.
    stop    stop the broker started from the same home (SIGTERM, then SIGKILL);
            harmless when none is running.
    status  running or not, pid, bootstrap, ready. Exit code 0 = ready,
            1 = running but not answering, 3 = not running.

    \b
    Several brokers can run at once: give each its own --home and ports, e.g.
      python -m stream kafka start --home var/kafka2 --port 19092 --controller-port 19093
    and point the worker at it with CG_BROKER=kafka://127.0.0.1:19092.

    \b
    A broker that asks for a password (SASL_PLAINTEXT; PLAIN and SCRAM):
      CG_SASL_USERNAME=alice CG_SASL_PASSWORD=... python -m stream kafka start --sasl
    then run every command with CG_SECURITY_PROTOCOL=SASL_PLAINTEXT and the same
    CG_SASL_USERNAME / CG_SASL_PASSWORD (CG_SASL_MECHANISM: PLAIN, SCRAM-SHA-256 or
    SCRAM-SHA-512). The KRaft controller port stays PLAINTEXT on 127.0.0.1.
    Needs `java` (17+) on PATH, and `mvn` for the first start.
    """
    from stream.devtools import kafka_local

    settings = get_settings()
    update: dict = {}
    if home is not None:
        update["kafka_home"] = home
    if action != "start":
        given = [
            n
            for n, v in (
                ("--keep-data", keep_data), ("--port", port), ("--controller-port", controller_port),
                ("--sasl", sasl), ("--sasl-user", sasl_user),
            )
            if v
        ]
        if given:
            fail(f"{', '.join(given)} only applies to `kafka start`")
    if port is not None:
        update["kafka_port"] = port
    if controller_port is not None:
        update["kafka_controller_port"] = controller_port
    if update:
        settings = settings.model_copy(update=update)

    if action == "start":
        try:
            users: dict[str, str] = {}
            if sasl:
                users.update(kafka_local.sasl_users_from_settings(settings))
            for spec in sasl_user:
                name, sep, password = spec.partition(":")
                if not sep:
                    fail("--sasl-user wants NAME:PASSWORD (no ':' in the value)")
                users[name] = password
            info = kafka_local.start(settings, fresh=not keep_data, timeout=timeout or 90.0, sasl_users=users or None)
        except kafka_local.KafkaLocalError as exc:
            summary, _, tail = str(exc).partition("\n")
            if tail:
                print(tail, file=click.get_text_stream("stderr"))
            fail(summary)
        resolved = f"jars resolved in {info.resolve_seconds:.1f} s, " if info.resolve_seconds else ""
        listener = f"{info.security_protocol} " if info.security_protocol != "PLAINTEXT" else ""
        print(
            f"kafka {info.version} ready at {listener}{info.bootstrap} (pid {info.pid}; {resolved}"
            f"ready {info.ready_seconds:.1f} s after launch; home {info.kafka_home}; log {info.log_file})"
        )
        if settings.bootstrap_servers != info.bootstrap:
            print(f"the worker's CG_BROKER is {settings.broker}; use CG_BROKER={info.broker_url} for this broker")
        return 0
    if action == "stop":
        result = kafka_local.stop(settings, timeout=timeout or 30.0)
        print(result.message)
        return 0
    st = kafka_local.status(settings)
    print(st.detail)
    return 0 if st.ready else (1 if st.running else 3)
