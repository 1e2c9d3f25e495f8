"""The staff's roles at the dispute desk: ``support`` finds hands and players, reads
timelines and verdicts, hands out evidence files; ``auditor`` does that and reads the
desk's access log. A staff token (``ddz.adapters.security.staff_tokens``) names one."""

from __future__ import annotations

from typing import Literal

Role = Literal["support", "auditor"]
ROLES: tuple[Role, ...] = ("support", "auditor")
