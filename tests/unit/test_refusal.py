"""The one error type: its reasons are the wire's, and each kind has one status code."""

from __future__ import annotations

import grpc
import pytest
from ddz.adapters.rpc.grpc_client import KIND_OF, refusal_from
from ddz.adapters.rpc.grpc_server import STATUS_OF, status_of
from ddz.application.errors import Kind, Reason, Refusal
from ddz.v1 import errors_pb2
from google.rpc import error_details_pb2


def test_reasons_are_the_names_of_the_wire_enum() -> None:
    assert [r.value for r in Reason] == list(errors_pb2.Reason.keys())


def test_every_kind_has_its_own_status_code() -> None:
    assert set(STATUS_OF) == set(Kind)
    assert len(set(STATUS_OF.values())) == len(Kind)
    assert all(KIND_OF[code] is kind for kind, code in STATUS_OF.items())


def test_an_unknown_reason_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        Refusal(Kind.INVALID, "NOT_A_REASON", "x")


def test_the_rich_status_carries_code_reason_and_metadata() -> None:
    status = status_of(Refusal.conflict("hand h is at version 3", version="3"))
    assert status.code == grpc.StatusCode.ABORTED.value[0]
    assert status.message == "hand h is at version 3"
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == (
        "VERSION_CONFLICT",
        "ddz.v1",
        {"version": "3"},
    )


class _Failed(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[()]:
        return ()


def test_a_relayed_failure_keeps_its_kind_and_names_the_service() -> None:
    refused = refusal_from(_Failed(grpc.StatusCode.UNAVAILABLE, "connection refused"), "dealer")
    assert refused.kind is Kind.UNAVAILABLE
    assert refused.reason is Reason.REASON_UNSPECIFIED
    assert refused.message == "dealer: connection refused"
    odd = refusal_from(_Failed(grpc.StatusCode.DATA_LOSS, ""), "rules")
    assert odd.kind is Kind.INTERNAL
