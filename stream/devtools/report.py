"""What a run found, measured from the streams themselves (the demo's report).

:class:`StreamReport` folds the records of the topics — input events as the worker
consumed them, the alerts it published, the dead letters — into the figures an operator
asks for first. Pure (no Kafka): feed it decoded events and alert dicts, from Kafka or
from files. The figures and how each is counted: docs/DEVELOPMENT.md "The demo's report".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from stream.domain.events import CheckpointEvent, Event

LEVELS = ("leaf", "section", "root")


@dataclass
class StreamReport:
    events: Counter = field(default_factory=Counter)
    dead_letters: Counter = field(default_factory=Counter)
    alerts: Counter = field(default_factory=Counter)  # (rule, status, level) -> n
    _last: dict[tuple[str, str], CheckpointEvent] = field(default_factory=dict)
    _orphans: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    _status: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    alert_total: int = 0

    def add_event(self, event: Event) -> None:
        self.events[event.type] += 1
        if isinstance(event, CheckpointEvent):
            self._last[(event.context_id, event.node_id)] = event

    def add_dead_letter(self, reason: str) -> None:
        self.dead_letters[reason.split(":", 1)[0]] += 1

    def add_alert(self, alert: dict[str, Any]) -> None:
        self.alert_total += 1
        self.alerts[(alert["rule"], alert["status"], alert.get("level") or "-")] += 1
        if alert["rule"] == "orphaned_referent":
            self._orphans[(alert["context_id"], alert["node_id"])] = alert["orphans"]

    def add_status(self, status: dict[str, Any]) -> None:
        self._status[(status["context_id"], status["node_id"])] = status

    def authority(self) -> dict[str, tuple[int, int, int]]:
        """``{level: (nodes, authoritative, degraded)}`` from each node's last status."""
        out = {lvl: [0, 0, 0] for lvl in LEVELS}
        for st in self._status.values():
            row = out.setdefault(st["level"], [0, 0, 0])
            row[0] += 1
            row[1] += bool(st["authoritative"])
            row[2] += bool(st["degraded_count"])
        return {lvl: (r[0], r[1], r[2]) for lvl, r in out.items()}

    def survival(self) -> dict[str, dict[str, tuple[int, int]]]:
        """``{"prohibitions"|"instructions": {level: (kept, total)}}``."""
        out = {k: {lvl: [0, 0] for lvl in LEVELS} for k in ("prohibitions", "instructions")}
        for ev in self._last.values():
            if ev.level not in LEVELS:
                continue
            for kind, carried, raw in (
                ("prohibitions", ev.negative_constraints, ev.raw_negative_constraints),
                ("instructions", ev.instructions, ev.raw_instructions),
            ):
                raw_set = set(raw)
                out[kind][ev.level][0] += len(raw_set & set(carried))
                out[kind][ev.level][1] += len(raw_set)
        return {k: {lvl: (c[0], c[1]) for lvl, c in v.items()} for k, v in out.items()}

    def most_orphaned(self, n: int = 10) -> list[tuple[str, int]]:
        counts: Counter = Counter()
        for orphans in self._orphans.values():
            counts.update(orphans)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    def render(self, console: Any, *, title: str = "checkpoint-guard report") -> None:
        """Print the report as rich tables on ``console`` (a rich Console)."""
        from rich.table import Table

        console.rule(title)
        ev = Table(title="events consumed")
        ev.add_column("type")
        ev.add_column("count", justify="right")
        for k in ("checkpoint", "artifact"):
            ev.add_row(k, str(self.events[k]))
        ev.add_row("dead letters", str(sum(self.dead_letters.values())))
        for reason, n in self.dead_letters.most_common():
            ev.add_row(f"  {reason}", str(n))
        console.print(ev)

        al = Table(title=f"alerts ({self.alert_total})")
        for col in ("rule", "status", *LEVELS, "no level"):
            al.add_column(col, justify="right" if col in (*LEVELS, "no level") else "left")
        rules = sorted({(r, s) for r, s, _ in self.alerts})
        for rule, status in rules:
            al.add_row(rule, status, *(str(self.alerts[(rule, status, lvl)]) for lvl in (*LEVELS, "-")))
        console.print(al)

        sv = Table(title="survival into summaries, per level (measured from the stream)")
        sv.add_column("content")
        for lvl in LEVELS:
            sv.add_column(lvl, justify="right")
        table = self.survival()
        for kind in ("prohibitions", "instructions"):
            cells = []
            for lvl in LEVELS:
                kept, total = table[kind][lvl]
                cells.append(f"{100 * kept / total:.0f}% ({kept}/{total})" if total else "n/a")
            sv.add_row("prohibitions (do not ...)" if kind == "prohibitions" else "positive instructions", *cells)
        console.print(sv)

        au = Table(title="may an agent recover from it? nodes at the end, per level (status records)")
        for col in ("", *LEVELS):
            au.add_column(col, justify="right" if col else "left")
        authority = self.authority()
        au.add_row("nodes", *(str(authority[lvl][0]) for lvl in LEVELS))
        au.add_row("authoritative", *(
            f"{authority[lvl][1]} ({100 * authority[lvl][1] / authority[lvl][0]:.0f}%)" if authority[lvl][0] else "0"
            for lvl in LEVELS))
        au.add_row("degraded by a node below", *(str(authority[lvl][2]) for lvl in LEVELS))
        console.print(au)

        mo = Table(title="most-orphaned referents (nodes whose summary depends on them)")
        mo.add_column("referent")
        mo.add_column("nodes", justify="right")
        for ref, n in self.most_orphaned():
            mo.add_row(ref, str(n))
        console.print(mo)
