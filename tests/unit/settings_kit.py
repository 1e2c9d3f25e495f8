"""Reading which environment variables the settings ask for."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ddz.config import Settings


class Recording(Mapping[str, str]):
    """An environment that remembers every variable asked for."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self.values = dict(values or {})
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return self.values.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def settings_variables() -> set[str]:
    """Every ``DDZ_*`` variable ``Settings.from_env`` reads."""
    env = Recording()
    Settings.from_env(env)
    return env.asked
