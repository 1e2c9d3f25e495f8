"""The crowd's figures: ``CrowdReport``, as one JSON object (``to_json``; its keys are a
public contract: extend, never rename) and as rows for people (``rows``).

The steady figures (hands/s, CPU, latencies) are of the measured window: from the end
of the ramp until the crowd is told to stop (with ``--find-max``: the window of the
largest crowd that kept within the limits). Memory and latency are also given minute
by minute over the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ddz.loadgen.tally import Window, percentile


@dataclass
class Minute:
    """One minute of the run: the suite's memory at its end, its latencies, its hands."""

    minute: int
    people: int
    seated: int
    rss_mb: dict[str, float]
    move_p99_ms: float
    turn_notice_p99_ms: float
    hands_ended: int


@dataclass
class Step:
    """A crowd size of ``--find-max``: what its window measured."""

    people: int
    seated: int
    move_p99_ms: float
    turn_notice_p99_ms: float
    suite_cores: float | None
    hands_per_s: float
    within: bool
    turns_missed: int = 0  # in the step, ramp and window


@dataclass
class CrowdReport:
    seed: int
    people: int
    processes: int
    people_seated: int = 0
    window_s: float = 0.0
    hands_started: int = 0
    hands_settled: int = 0
    hands_ended_otherwise: int = 0
    hands_lost: int = 0
    lost_ids: list[str] = field(default_factory=list)
    hands_in_window: int = 0
    suite_cpu_s: float | None = None  # in the window
    suite_cpu_s_whole_run: float | None = None  # from the start until the people left
    cpu_s_whole_run_by_service: dict[str, float] = field(default_factory=dict)
    loadgen_cpu_s: float = 0.0
    cpu_by_service: dict[str, float] = field(default_factory=dict)  # ms per hand
    window: Window | None = None
    move_all: list[float] = field(default_factory=list)
    notice_all: list[float] = field(default_factory=list)
    minutes: list[Minute] = field(default_factory=list)
    restarts: int = 0
    gone: list[str] = field(default_factory=list)
    refusals: dict[str, int] = field(default_factory=dict)
    turns: dict[str, int] = field(default_factory=dict)
    audit: dict[str, int] = field(default_factory=dict)
    audit_failures: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    max_people: int | None = None  # --find-max only

    @property
    def failed(self) -> bool:
        """Lost hands or an audit failure: the run fails (exit 1)."""
        return self.hands_lost > 0 or self.audit.get("failed", 0) > 0

    @property
    def hands_per_s(self) -> float:
        return self.hands_in_window / self.window_s if self.window_s else 0.0

    def to_json(self) -> dict[str, Any]:
        window = self.window or Window([], [], 0, 0.0)
        seconds = self.window_s or 1.0
        suite = self.suite_cpu_s
        data: dict[str, Any] = {
            "seed": self.seed,
            "people": self.people,
            "processes": self.processes,
            "people_seated": self.people_seated,
            "window_s": round(self.window_s, 1),
            "hands_started": self.hands_started,
            "hands_settled": self.hands_settled,
            "hands_ended_otherwise": self.hands_ended_otherwise,
            "hands_lost": self.hands_lost,
            "lost_hands": self.lost_ids[:20],
            "hands_per_s": round(self.hands_per_s, 3),
            "suite_cores": None if suite is None else round(suite / seconds, 3),
            "suite_cpu_ms_per_hand": None
            if suite is None or not self.hands_in_window
            else round(suite * 1000 / self.hands_in_window, 1),
            "suite_cpu_ms_per_hand_by_service": self.cpu_by_service,
            # Every hand from the first deal to the last end: no partial hands at the edges.
            "suite_cpu_ms_per_hand_whole_run": None
            if self.suite_cpu_s_whole_run is None or not self.hands_started
            else round(self.suite_cpu_s_whole_run * 1000 / self.hands_started, 1),
            "suite_cpu_ms_per_hand_whole_run_by_service": {
                service: round(seconds * 1000 / self.hands_started, 1)
                for service, seconds in sorted(self.cpu_s_whole_run_by_service.items())
            }
            if self.hands_started
            else {},
            "loadgen_cores": round(self.loadgen_cpu_s / seconds, 3),
            "move_p50_ms": window.move(0.50),
            "move_p99_ms": window.move(0.99),
            "move_max_ms": window.move(1.0),
            "move_samples": len(window.move_ms),
            "turn_notice_p50_ms": window.notice(0.50),
            "turn_notice_p99_ms": window.notice(0.99),
            "turn_notice_max_ms": window.notice(1.0),
            "turn_notice_samples": len(window.notice_ms),
            "move_p99_ms_whole_run": percentile(self.move_all, 0.99),
            "turn_notice_p99_ms_whole_run": percentile(self.notice_all, 0.99),
            "rss_mb": self.rss_by_service(),
            "minutes": [vars(m) for m in self.minutes],
            "restarts": self.restarts,
            "exited": self.gone,
            "refusals": dict(sorted(self.refusals.items())),
            "turns": self.turns,
            "audit": self.audit,
            "audit_failures": self.audit_failures[:20],
        }
        if self.steps:
            data["max_people"] = self.max_people
            data["steps"] = [vars(s) for s in self.steps]
        return data

    def rss_by_service(self) -> dict[str, list[float]]:
        """Each service's resident MB at the end of each minute."""
        out: dict[str, list[float]] = {}
        for minute in self.minutes:
            for service, mb in minute.rss_mb.items():
                out.setdefault(service, []).append(mb)
        return out

    def rows(self) -> list[tuple[str, str]]:
        data = self.to_json()

        def ms(key: str) -> str:
            return " / ".join(f"{data[f'{key}_{q}_ms']:.1f}" for q in ("p50", "p99", "max"))

        cores = data["suite_cores"]
        rows = [
            ("people seated / asked", f"{self.people_seated} / {self.people}"),
            ("measured window", f"{self.window_s:.0f} s"),
            ("hands started / settled", f"{self.hands_started} / {self.hands_settled}"),
            ("hands ended otherwise / lost", f"{self.hands_ended_otherwise} / {self.hands_lost}"),
            ("hands/s", f"{self.hands_per_s:.2f}"),
            ("suite CPU (cores)", "unknown" if cores is None else f"{cores:.2f}"),
            ("suite CPU ms per hand", str(data["suite_cpu_ms_per_hand"] or "unknown")),
            ("suite CPU ms per hand, whole run", str(data["suite_cpu_ms_per_hand_whole_run"])),
            ("crowd's own CPU (cores)", f"{data['loadgen_cores']:.2f}"),
            ("move shown p50 / p99 / max (ms)", ms("move")),
            ("turn told p50 / p99 / max (ms)", ms("turn_notice")),
            ("turns told / moved / let go / missed", " / ".join(
                str(self.turns.get(k, 0)) for k in ("told", "moved", "let_go", "missed"))),
            ("drops / escapes", f"{self.turns.get('drops', 0)} / {self.turns.get('escapes', 0)}"),
            ("audit clean / failed / incomplete", " / ".join(
                str(self.audit.get(k, 0)) for k in ("clean", "failed", "incomplete"))),
            ("restarts", f"{self.restarts}" + bool(self.gone) * f" (exited: {self.gone})"),
        ]  # fmt: skip
        rows += [(f"refused: {reason}", str(n)) for reason, n in sorted(self.refusals.items())]
        rows += [
            (f"RSS MB by minute: {service}", " ".join(f"{mb:.0f}" for mb in values))
            for service, values in self.rss_by_service().items()
        ]
        for step in self.steps:
            cores = "?" if step.suite_cores is None else f"{step.suite_cores:.2f}"
            rows.append((
                f"find-max: {step.people} people",
                f"seated {step.seated}, p99 {step.move_p99_ms:.0f} / "
                f"{step.turn_notice_p99_ms:.0f} ms, {cores} cores, "
                f"{step.turns_missed} turns missed, "
                f"{'within' if step.within else 'past the limits'}",
            ))  # fmt: skip
        if self.max_people is not None:
            rows.append(("find-max: people seated within the limits", str(self.max_people)))
        return rows
