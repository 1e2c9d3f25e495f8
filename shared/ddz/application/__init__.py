"""The application layer: what the services do, as plain code over ports.

The use cases of each service live in ``services/<name>/handlers.py`` (with the ports
they need in ``services/<name>/ports.py``); they take those ports (the event bus, the
store, other services' clients, the clock) as arguments and import no gRPC. What they
share is here: ``errors``, the one error type a refused call raises, mapped to a gRPC
status only in ``ddz.adapters.grpc_server``.
"""
