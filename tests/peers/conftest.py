"""The peers of the differential tests: RLCard and DouZero, test-only dependencies.

CI sets ``DDZ_REQUIRE_PEERS=1``: there a peer that cannot be imported FAILS the test
instead of skipping it, so that a broken install can never pass as a green run.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType, SimpleNamespace

import pytest


def import_peer(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"peer module {module!r} cannot be imported: {exc}"
        if os.environ.get("DDZ_REQUIRE_PEERS") == "1":
            pytest.fail(f"{message} (DDZ_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="session")
def rlcard_doudizhu() -> SimpleNamespace:
    """RLCard's Dou Dizhu modules (rlcard==1.2.0): judger, utils, player, base card."""
    return SimpleNamespace(
        judger=import_peer("rlcard.games.doudizhu.judger"),
        utils=import_peer("rlcard.games.doudizhu.utils"),
        player=import_peer("rlcard.games.doudizhu.player"),
        base=import_peer("rlcard.games.base"),
    )


@pytest.fixture(scope="session")
def douzero_env() -> SimpleNamespace:
    """DouZero's move generator and detector (douzero==1.1.0; they need no torch)."""
    return SimpleNamespace(
        generator=import_peer("douzero.env.move_generator"),
        detector=import_peer("douzero.env.move_detector"),
    )
