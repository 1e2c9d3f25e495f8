"""What the suite and the crowd use, read from ``/proc`` (Linux): each service's CPU
seconds and resident memory (its instances summed; ``nats-server``: every node), the
restarts of its children, and the crowd's own processes' CPU, apart.

The suite's processes are the ones its ``stack.json`` names (a stack started by the
bench, or the ``ddz up`` of the data dir); a suite found only at its addresses names
none, and its figures are then unknown (None).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from ddz.adapters.runtime import stack_file

NATS = "nats-server"


@dataclass(frozen=True)
class Sample:
    when: float  # monotonic
    cpu: dict[str, float]  # service -> CPU seconds so far
    rss_mb: dict[str, float]  # service -> resident MB now
    restarts: int
    gone: tuple[str, ...]  # children whose process is not there

    @property
    def suite_cpu(self) -> float:
        return sum(self.cpu.values())


@dataclass
class Usage:
    data_dir: Path
    crowd_pids: list[int] = field(default_factory=list)

    def sample(self) -> Sample | None:
        """The suite's use now; None when the suite's processes are
        not known (no ``stack.json``)."""
        record = stack_file.read(self.data_dir)
        if record is None:
            return None
        cpu: dict[str, float] = {}
        rss: dict[str, float] = {}
        restarts = 0
        gone: list[str] = []
        children = [(i.get("service", ""), i) for i in record.get("instances", [])]
        children += [(NATS, n) for n in record.get("nats", [])]
        for service, child in children:
            pid = int(child.get("pid", 0))
            restarts += int(child.get("restarts", 0))
            seconds, resident = cpu_of(pid), rss_mb_of(pid)
            if resident is None:
                gone.append(str(child.get("name", service)))
                continue
            cpu[service] = cpu.get(service, 0.0) + seconds
            rss[service] = round(rss.get(service, 0.0) + resident, 1)
        return Sample(time.monotonic(), cpu, rss, restarts, tuple(gone))

    def sample_crowd(self) -> float:
        """The crowd's processes' CPU seconds so far."""
        return sum(cpu_of(pid) for pid in self.crowd_pids)


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 when it is not there)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb_of(pid: int) -> float | None:
    """Resident memory of a process in MB (None when it is not there)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
