"""faust-streaming hosts the worker here: :class:`FaustHost`, and every private faust name.

:class:`FaustHost` implements :class:`stream.worker.host.Host` (group membership, the
input stream, assignment callbacks, timers, web routes, start-up, the CLI) on faust
0.15.3; nothing else imports faust or mode. It changes three things of faust's (and
aiokafka's lz4 level, :func:`set_lz4_level`), each pinned by ``tests/unit/test_compat.py``:

* **Delivery** (:class:`InlineConsumer`, transport ``cgkafka://``): a fetch's records of
  the agent's topics go to its queue as one list when nothing can block (faust awaits
  four tasks per record and builds a Message and an Event each: half a no-op agent's
  cost); ``fetch_max_wait_ms`` (hard-coded 1500 ms) becomes ``CG_FETCH_MAX_WAIT_MS``.
* **Commits**: faust's own offset commits are disabled; the durability object commits
  through :meth:`FaustHost.commit_offsets`.
* **Batches** (:class:`BatchStream`): ``take_events`` yields lists of input records read
  from the agent's queue, not faust's per-event iterator.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn, cast

import aiohttp
import click
import faust
from faust import web as faust_web
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP

from stream.settings import Settings
from stream.worker.host import Handler, Host, Request, Response

#: The broker URL scheme of :class:`Transport` (registered in pyproject.toml).
SCHEME = "cgkafka"
#: Seconds a thread may hold the GIL while another waits (CPython's default: 0.005).
GIL_SWITCH_INTERVAL = 0.0005


def set_lz4_level(level: int) -> None:
    """Compress this process's lz4 record batches at ``level`` (``CG_PRODUCER_LZ4_LEVEL``).

    aiokafka 0.14 has no setting for it: both its record batch builders (the C one and the
    Python one) call their module's ``lz4_encode``, whose default is 9 (LZ4HC), at every batch.
    """
    from aiokafka import codec
    from aiokafka.record import default_records

    encode = functools.partial(codec.lz4_encode, level=level)
    for module in {default_records.__name__, default_records.DefaultRecordBatchBuilder.__module__}:
        sys.modules[module].lz4_encode = encode  # type: ignore[attr-defined]


def broker_url(bootstrap: str) -> str:
    """``kafka://h:p;h:p`` (or ``h:p``) -> the same servers with our transport's scheme."""
    return ";".join(f"{SCHEME}://{part.split('://', 1)[-1]}" for part in bootstrap.replace(",", ";").split(";"))


class InlineConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    """faust's aiokafka consumer thread with ``fetch_max_wait_ms`` from the settings."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        app = self.consumer.app
        if isinstance(app, GuardApp):  # read by AIOKafkaConsumer.start() for its Fetcher
            consumer._fetch_max_wait_ms = int(app.host.settings.fetch_max_wait_ms)
        return consumer


class InlineConsumer(faust_aiokafka.Consumer):
    """faust's aiokafka Consumer: batch delivery, no commits of its own (module doc)."""

    #: The agent's input queue and topics (set when the agent starts): their records go
    #: straight to the queue, a fetch at a time.
    inline_queue: Any = None
    inline_topics: frozenset[str] = frozenset()

    def _new_consumer_thread(self) -> InlineConsumerThread:
        # faust's consumer runs in a thread of its own: each fetch it hands over waited for the
        # GIL while the agent's thread applied a batch, up to the interpreter's switch interval
        # (5 ms) at every step of the fetch; a shorter interval cut the latency bench's p99.
        sys.setswitchinterval(GIL_SWITCH_INTERVAL)
        return InlineConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        return False  # the durability object commits (FaustHost.commit_offsets)

    async def force_commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        return False

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - run by the worker
        # faust.transport.consumer.Consumer._drain_messages (0.15.3), rebuilt around
        # _wait_next_records: a fetch's records of the agent's topics go to its queue as
        # one list (no per-record Message, Event, decode, task); any other record takes
        # the stock path (callback under wait_first). No acks, gaps or commits: the
        # durability object owns offsets and reads back what a rebalance dropped.
        callback = self.callback
        to_message = self._to_message
        consumer_should_stop = self._stopped.is_set
        fetcher_should_stop = fetcher._stopped.is_set
        read_offset = self._read_offset
        buffered = self._buffered_partitions
        app = self.app
        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                records, active = await self._wait_next_records(1.0)
                await self.sleep(0)
                if not records or self.should_stop:
                    continue
                if not self.flow_active:  # a rebalance began: back to the committed offsets, as faust does
                    await self.perform_seek()
                    continue
                # Records fetched across a generation change are delivered all the same
                # (faust drops them): the runtime skips what the state covers or does not
                # own, and a record dropped here would be lost until a later one came.
                queue, fast = self.inline_queue, self.inline_topics
                for tp, recs in records.items():
                    if not recs or (active is not None and tp not in active and tp not in buffered):
                        continue
                    r_offset = read_offset[tp]
                    if r_offset is not None and recs[0].offset < r_offset:
                        recs = [r for r in recs if r.offset >= r_offset]
                        if not recs:
                            continue
                    if queue is not None and tp.topic in fast:
                        if (queue.qsize() < queue.maxsize and not self.suspend_flow.is_set()
                                and app.flow_control.is_active()):
                            queue.put_nowait(recs)
                        else:
                            await self.wait_first(queue.put(recs), self.suspend_flow.wait())
                    else:
                        for record in recs:
                            await self.wait_first(callback(to_message(tp, record)), self.suspend_flow.wait())
                    read_offset[tp] = recs[-1].offset
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                return
            raise
        except asyncio.CancelledError:
            if self.transport.app.should_stop:
                return
            raise


class Transport(faust_aiokafka.Transport):
    """faust's aiokafka transport with :class:`InlineConsumer`."""

    Consumer = InlineConsumer


class BatchStream(faust.Stream[Any]):
    """A Stream whose ``take_events`` yields lists of input records (``topic``,
    ``partition``, ``offset``, ``key``, ``value``) read from the agent's queue: the
    fetches :class:`InlineConsumer` put there, and any faust Event (its message)."""

    async def take_events(self, max_: int, within: Any) -> AsyncGenerator[Sequence[Any], None]:
        await self.maybe_start()
        channel = cast(Any, self.channel).__aiter__()  # a topic registers with the conductor here
        queue = channel.queue
        consumer = self.app.consumer
        if isinstance(consumer, InlineConsumer):
            consumer.inline_queue = queue
            consumer.inline_topics = frozenset(getattr(channel, "topics", ()) or ())
        wait = float(within) if within else 0.0
        get, get_nowait, empty = queue.get, queue.get_nowait, queue.empty
        clock = asyncio.get_running_loop().time
        while not self.should_stop:
            batch: list[Any] = []
            try:
                _add(batch, await get())
                deadline = clock() + wait  # CG_BATCH_WITHIN bounds the whole batch, not each wait
                while len(batch) < max_:
                    if empty():
                        left = deadline - clock()
                        if left <= 0:
                            break
                        try:  # a little longer for a fuller batch
                            _add(batch, await asyncio.wait_for(get(), left))
                        except TimeoutError:
                            break
                        continue
                    _add(batch, get_nowait())
            except StopAsyncIteration:  # faust stops the actor (Actor.cancel throws it in)
                if batch:
                    yield batch
                return
            yield batch


def _add(batch: list[Any], item: Any) -> None:
    if isinstance(item, list):
        batch.extend(item)
    else:  # a faust Event from the stock path
        batch.append(item.message)


def broker_credentials(settings: Settings) -> Any:
    """faust credentials for the configured SSL/SASL settings (None = PLAINTEXT)."""
    proto = settings.security_protocol
    if proto == "PLAINTEXT":
        return None
    context = None
    if proto in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(
            purpose=ssl.Purpose.SERVER_AUTH,
            cafile=str(settings.ssl_cafile) if settings.ssl_cafile else None,
        )
        if settings.ssl_certfile:
            context.load_cert_chain(
                str(settings.ssl_certfile),
                keyfile=str(settings.ssl_keyfile) if settings.ssl_keyfile else None,
                password=settings.ssl_password.get_secret_value() if settings.ssl_password else None,
            )
    if proto == "SSL":
        return faust.SSLCredentials(context)
    password = settings.sasl_password.get_secret_value() if settings.sasl_password else ""
    return faust.SASLCredentials(username=settings.sasl_username or "", password=password, ssl_context=context,
                                 mechanism=settings.sasl_mechanism)


class GuardApp(faust.App):
    """faust's App, knowing the :class:`FaustHost` that built it (read by :class:`GuardWorker`
    and :class:`InlineConsumerThread`)."""

    host: FaustHost


class GuardWorker(faust.Worker):
    """faust's worker (the app's ``Worker``): the host's checks before anything starts,
    its start-up callbacks on first start, the root logger without faust's spinner."""

    def __init__(self, app: GuardApp, *services: Any, **kwargs: Any) -> None:
        for check in app.host.checks:
            check(app.host)
        super().__init__(app, *services, **kwargs)

    async def on_first_start(self) -> None:
        for start in cast(GuardApp, self.app).host.starts:
            await start()
        await super().on_first_start()

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        """Keep the root logger at the chosen level (``-l``), without faust's spinner.

        At ``-l warn`` and above faust adds a terminal spinner handler and lowers the
        root logger to DEBUG, so every debug call of faust and aiokafka builds a log
        record that the handler then discards (8% of the worker's CPU in a profile).
        """
        self.spinner = None
        super().on_setup_root_logger(logger, level)
        if cast(GuardApp, self.app).host.settings.log_format == "json":
            from stream.logs import use_json

            use_json(logger)


class FaustHost(Host):
    """The worker's :class:`~stream.worker.host.Host` on faust (module docstring): one
    faust app, ``app``, whose one agent ``validate`` reads both input topics."""

    def __init__(self, settings: Settings) -> None:
        s = self.settings = settings
        set_lz4_level(s.producer_lz4_level)
        self.checks: list[Callable[[Host], None]] = []
        self.starts: list[Callable[[], Awaitable[None]]] = []
        # faust's default canonical_url is http://<web_host>:<web_port>; other workers
        # forward node-status requests there (stream.worker.web), so it can be overridden.
        advertised: dict[str, Any] = {"canonical_url": s.web_canonical_url} if s.web_canonical_url else {}
        self.app = app = GuardApp(
            s.app_id,
            # faust would also read its own environment variables (PROCESSING_GUARANTEE,
            # BROKER_URL, WEB_PORT, ...) and silently override these settings.
            env={},
            broker=broker_url(s.broker),
            broker_credentials=broker_credentials(s),
            broker_session_timeout=s.session_timeout,
            broker_heartbeat_interval=min(3.0, s.session_timeout / 3),
            datadir=str(s.data_dir),
            topic_partitions=s.partitions,
            topic_replication_factor=s.replication_factor,
            topic_allow_declare=s.create_topics,  # false: no CreateTopics (faust's leader topic must exist)
            processing_guarantee="at_least_once",
            consumer_auto_offset_reset="earliest",
            web_host=s.web_host,
            web_port=s.web_port,
            web_bind=s.web_host,
            **advertised,
            autodiscover=False,
            Worker="stream.worker.compat:GuardWorker",
            Stream="stream.worker.compat:BatchStream",
            key_serializer="raw",
            value_serializer="raw",
        )
        app.host = self

    # --- group membership
    def generation(self) -> int:
        return int(self.app.consumer_generation_id)

    @property
    def rebalancing(self) -> bool:
        return bool(self.app.rebalancing)

    @property
    def url(self) -> str:
        return str(self.app.conf.canonical_url)

    def owner_url(self, topic: str, partition: int) -> str | None:
        # faust's assignor metadata: every member's canonical URL and its topic partitions
        for url, topics in self.app.router.external_topics_metadata().items():
            if partition in topics.get(topic, ()):
                return url
        return None

    def highwater(self, topic: str, partition: int) -> int | None:
        try:
            return self.app.consumer.highwater(TP(topic, partition))
        except Exception:  # not assigned / not fetched yet
            return None

    async def commit_offsets(self, offsets: Mapping[tuple[str, int], int]) -> None:
        # through the group member (faust's consumer thread's aiokafka consumer)
        thread = self.app.consumer._thread  # type: ignore[attr-defined]  # faust's ConsumerT declares no _thread
        consumer = thread._ensure_consumer()
        from aiokafka.structs import OffsetAndMetadata, TopicPartition

        assigned = consumer.assignment()
        ours = {TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in offsets.items()
                if TopicPartition(t, p) in assigned}
        if ours:
            await thread.call_thread(consumer.commit, ours)

    # --- the input stream and the callbacks
    def consume(self, handle: Callable[[Sequence[Any]], Awaitable[None]],
                on_end: Callable[[BaseException], None]) -> None:
        s, app = self.settings, self.app
        inputs = app.topic(*s.input_topics, key_serializer="raw", value_serializer="raw", partitions=s.partitions)

        @app.agent(inputs, name="validate")
        async def validate(stream: faust.StreamT[Any]) -> None:
            """Validate every checkpoint on arrival and whenever the store changes under it.

            The loop ends only when the app stops; ended otherwise (faust cancelled the
            actor, the stream failed) ``on_end`` is told (the worker exits 70 rather than
            live on consuming nothing; a restart re-processes from the last commit)."""
            try:
                async for events in stream.take_events(s.batch_max, within=s.batch_within):  # type: ignore[attr-defined]  # a BatchStream (faust's StreamT does not know it)
                    await handle(events)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                on_end(RuntimeError(f"the agent's stream failed: {exc!r}"))
                return
            if not app.should_stop or app.crashed:
                on_end(RuntimeError("the agent stopped while the worker was running"))

    def on_assigned(self, callback: Callable[[Iterable[Any]], Awaitable[None]]) -> None:
        @self.app.on_partitions_assigned.connect  # type: ignore[arg-type]  # faust's signal stubs want a sync receiver
        async def assigned(sender: Any, assigned: Any = None, **kwargs: Any) -> None:
            await callback(assigned or ())

    def on_revoked(self, callback: Callable[[Iterable[Any]], Awaitable[None]]) -> None:
        @self.app.on_partitions_revoked.connect  # type: ignore[arg-type]  # faust's signal stubs want a sync receiver
        async def revoked(sender: Any, revoked: Any = None, **kwargs: Any) -> None:
            await callback(revoked or ())

    def every(self, seconds: float, callback: Callable[[], Awaitable[None]]) -> None:
        @self.app.timer(interval=seconds)  # type: ignore[untyped-decorator]  # faust's timer is untyped
        async def tick() -> None:
            await callback()

    # --- start-up and stop
    def before_start(self, check: Callable[[Host], None]) -> None:
        self.checks.append(check)

    def on_start(self, callback: Callable[[], Awaitable[None]]) -> None:
        self.starts.append(callback)

    def on_stop(self, callback: Callable[[], Awaitable[None]]) -> None:
        @self.app.on_before_shutdown.connect  # type: ignore[arg-type]  # faust's signal stubs want a sync receiver
        async def stop(sender: Any, **kwargs: Any) -> None:
            await callback()

    def web_address(self) -> tuple[str, int] | None:
        conf = self.app.conf
        return (conf.web_bind, conf.web_port) if conf.web_enabled else None

    # --- web
    def route(self, path: str, handler: Handler) -> None:
        class View(faust_web.View):
            async def get(self, request: faust_web.Request, **params: Any) -> faust_web.Response:
                resp = await handler(Request(params, request.headers, request.raw_path))  # type: ignore[attr-defined]  # aiohttp's Request, typed by faust as its own
                return self.bytes(resp.body, status=resp.status, headers={"Content-Type": resp.content_type})

        self.app.page(path)(View)

    async def http_get(self, url: str, headers: Mapping[str, str], timeout: float) -> Response:
        from yarl import URL

        try:
            async with self.app.http_client.get(URL(url, encoded=True), headers=dict(headers),
                                                timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                body = await resp.read()
                return Response(resp.status, body, resp.headers.get("Content-Type", "application/json"))
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc

    # --- the CLI
    def main(self, argv: list[str], *, quiet: bool = False) -> NoReturn:
        """faust's CLI on this app with ``argv`` (faust's ``App.main`` without discovery:
        autodiscover is off, the app imports its modules)."""
        from faust.cli.faust import cli as faust_cli

        from stream.commands._base import PROG

        app = self.app
        app.finalize()
        app.worker_init()
        app.worker_init_post_autodiscover()
        faust_cli.main(args=(["--quiet"] if quiet else []) + argv, prog_name=PROG, app=app)
        raise SystemExit(0)  # pragma: no cover - faust exits itself


# faust's CLI (stream.app): its commands other than `worker` refuse with one line.
def _refuse(name: str, why: str) -> click.Command:
    @click.command(name=name, help=f"Not for checkpoint-guard: {why}.", add_help_option=False,
                   context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
    def refuse() -> None:
        click.echo(f"checkpoint-guard: error: `faust {name}` does not apply to checkpoint-guard's app: {why}",
                   err=True)
        raise SystemExit(2)

    return refuse


def refuse_faust_commands(commands: dict[str, str]) -> None:
    """Replace faust's commands other than ``worker`` (and ``completion``) by one-line refusals."""
    from faust.cli.faust import cli as faust_cli

    for name, why in commands.items():
        if name in faust_cli.commands:
            faust_cli.commands[name] = _refuse(name, why)
