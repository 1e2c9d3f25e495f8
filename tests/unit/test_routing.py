"""The routing of a hand's calls to one rules instance (ddz.adapters.rpc.routing): the
rendezvous ranking, the DNS entries, and ``DDZ_RULES_ADDR`` listing several targets."""

from __future__ import annotations

import uuid

import pytest
from ddz.adapters.rpc.routing import dns_name, weight
from ddz.config import Settings

TARGETS = ["10.0.0.1:50052", "10.0.0.2:50052", "10.0.0.3:50052"]


def winner(targets: list[str], hand_id: str) -> str:
    return max(targets, key=lambda target: weight(target, hand_id))


def test_an_instance_gone_moves_only_its_own_hands_and_spreads_them() -> None:
    hands = [uuid.uuid4().hex for _ in range(3000)]
    before = {hand: winner(TARGETS, hand) for hand in hands}
    shares = [sum(1 for w in before.values() if w == t) for t in TARGETS]
    assert all(800 < share < 1200 for share in shares), shares  # about a third each
    gone = TARGETS[1]
    after = {hand: winner([t for t in TARGETS if t != gone], hand) for hand in hands}
    moved = [hand for hand in hands if before[hand] != after[hand]]
    assert all(before[hand] == gone for hand in moved)
    assert len(moved) == shares[1]
    assert {after[hand] for hand in moved} == {TARGETS[0], TARGETS[2]}  # not all to one


def test_every_client_ranks_alike_whatever_the_order_it_lists_the_instances() -> None:
    hand = uuid.uuid4().hex
    assert winner(TARGETS, hand) == winner(list(reversed(TARGETS)), hand)


@pytest.mark.parametrize(
    ("entry", "name"),
    [
        ("dns:///rules:50052", ("rules", 50052)),
        ("dns://8.8.8.8/rules.ddz.svc:50052", ("rules.ddz.svc", 50052)),
        ("dns:rules:50052", ("rules", 50052)),
        ("dns:///[::1]:50052", ("::1", 50052)),
        ("rules:50052", None),
        ("10.0.0.1:50052", None),
    ],
)
def test_dns_entries(entry: str, name: tuple[str, int] | None) -> None:
    assert dns_name(entry) == name


def test_a_dns_entry_without_a_port_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a port"):
        dns_name("dns:///rules")


def test_the_rules_address_may_list_several_targets() -> None:
    settings = Settings.from_env({"DDZ_RULES_ADDR": "10.0.0.1:50052, 10.0.0.2:50052"})
    assert settings.network.targets("rules") == ("10.0.0.1:50052", "10.0.0.2:50052")
    assert Settings.from_env({}).network.targets("rules") == ("127.0.0.1:50052",)
    with pytest.raises(ValueError, match="DDZ_RULES_ADDR"):
        Settings.from_env({"DDZ_RULES_ADDR": "10.0.0.1:50052,rules"})
