"""A run's figures per process and per hand, the bound they set on 2 cores, and the
report printed from them."""

from __future__ import annotations

from typing import Any

from bus_floor.bus_roles import PAYLOAD
from bus_floor.protocol import Measured
from bus_floor.suite_roles import SUITE_MEAN_SIZE, suite_hand

CORES = 2  # the target machine
TARGET_HANDS_PER_S = 100


def summarise(measured: Measured, *, units: int, units_per_hand: float) -> dict[str, Any]:
    """Per process: CPU ms per unit (event or call) and per hand; the 2-core bound."""
    per_process = {
        name: {
            "cpu_s": round(cpu, 3),
            "ms_per_unit": round(cpu * 1000 / units, 4),
            "ms_per_hand": round(cpu * 1000 / units * units_per_hand, 3),
        }
        for name, cpu in measured.cpu.items()
    }
    cpu_total = sum(measured.cpu.values())
    ms_per_unit = cpu_total * 1000 / units
    ms_per_hand = ms_per_unit * units_per_hand
    return {
        "wall_s": round(measured.wall, 3),
        "units_per_s": round(units / measured.wall, 1),
        "hands_per_s_measured": round(units / units_per_hand / measured.wall, 1),
        "cpu_s_total": round(cpu_total, 3),
        "cores_busy": round(cpu_total / measured.wall, 2),
        "processes": per_process,
        "cpu_ms_per_unit": round(ms_per_unit, 4),
        "cpu_ms_per_hand": round(ms_per_hand, 3),
        "hands_per_s_bound_2_cores": round(CORES * 1000 / ms_per_hand, 1),
    }


def print_report(result: dict[str, Any]) -> None:
    grpc_mode = result["mode"] == "grpc"
    unit = "call" if grpc_mode else "event"
    if grpc_mode:
        print(
            f"gRPC floor: {result['calls']} unary grpc.aio calls (100 B each way), "
            f"{result['concurrency']} concurrent callers, "
            f"{result['calls_per_hand']:g} calls per hand"
        )
    elif result["mode"] == "bus-suite-mix":
        internal = sum(hidden for _, hidden in suite_hand()(result["events_per_hand"]))
        print(
            f"bus floor (the services' consumer mix): {result['hands']} hands x "
            f"{result['events_per_hand']} events ({internal} internal) = {result['events']} "
            f"events of ~{SUITE_MEAN_SIZE} B, {result['publishers']} publisher(s) x "
            f"{result['concurrency']} hands at once, each publish awaited; consumers: "
            "table + bot (HandFeed pull, ack each), "
            "settlement (pull, hand_settled only, batch 64, ack each), "
            "recorder (pull, batch 256, 20 ms linger, ack each)"
        )
    else:
        how = "bare nats-py" if result["mode"] == "bus-raw" else "ddz EventBus adapter"
        print(
            f"bus floor ({how}): {result['hands']} hands x {result['events_per_hand']} "
            f"events = {result['events']} events of {len(PAYLOAD)} B, "
            f"{result['publishers']} publisher(s) x {result['concurrency']} hands at once, "
            f"{result['consumers']} pull consumers (fetch batch {result['batch']})"
        )
    print(
        f"wall {result['wall_s']:.2f} s: {result['units_per_s']:,.0f} {unit}s/s "
        f"({result['hands_per_s_measured']:.1f} hands/s), CPU {result['cpu_s_total']:.2f} s "
        f"= {result['cores_busy']:.2f} cores busy"
    )
    print(f"{'process':<14}{'CPU s':>8}{f'ms/{unit}':>11}{'ms/hand':>10}")
    for name, row in result["processes"].items():
        print(
            f"{name:<14}{row['cpu_s']:>8.2f}{row['ms_per_unit']:>11.4f}{row['ms_per_hand']:>10.2f}"
        )
    print(
        f"{'total':<14}{result['cpu_s_total']:>8.2f}{result['cpu_ms_per_unit']:>11.4f}"
        f"{result['cpu_ms_per_hand']:>10.2f}"
    )
    budget = CORES * 1000 / TARGET_HANDS_PER_S
    print(
        f"upper bound on {CORES} cores: {CORES * 1000} / {result['cpu_ms_per_hand']:.2f} "
        f"= {result['hands_per_s_bound_2_cores']:.0f} hands/s "
        f"(the {TARGET_HANDS_PER_S} hands/s target allows {budget:g} ms per hand)"
    )
    if not grpc_mode:
        states = result["consumer_states"]
        pending = sum(state["ack_pending"] for state in states.values())
        redelivered = sum(state["redelivered"] for state in states.values())
        if result["mode"] == "bus-suite-mix":
            delivered = ", ".join(
                f"{durable} {state['messages']}/{result['consumer_expected'][durable]}"
                for durable, state in states.items()
            )
            print(
                f"server check: messages delivered {delivered}; "
                f"{pending} acks pending, {redelivered} redeliveries"
            )
        else:
            delivered = min(state["delivered"] for state in states.values())
            print(
                f"server check: each consumer delivered {delivered}/{result['events']}, "
                f"{pending} acks pending, {redelivered} redeliveries"
            )
