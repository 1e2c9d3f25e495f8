"""gRPC plumbing: the server every service runs (its interceptor checks each caller's
right, ``ddz.access``), the client channels (``bearer``: one that carries a token) and
the way back from a failed call to a ``Refusal``, the rules instances' routing.

May import access, messaging, store, security, telemetry, files, codec; not runtime.
"""
