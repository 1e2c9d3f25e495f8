"""The application layer: what the services do, as plain code over ports.

The use cases of each service live in its own folder: ``services/<name>/handlers.py``
and the service's other use-case modules (those the "no gRPC" import contract of
pyproject.toml lists), with the ports they need in ``services/<name>/ports.py``; they
take those ports (the event bus, the store, other services' clients, the clock) as
arguments and import no gRPC. Only what the services share is here: ``errors``, the one
error type a refused call raises, mapped to a gRPC status only in
``ddz.adapters.rpc.grpc_server``, and ``tasks``, background tasks that are not lost.
"""
