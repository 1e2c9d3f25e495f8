"""gRPC plumbing: the server every service runs, the client channels and the way
back from a failed call to a ``Refusal``, the rules instances' routing, and the
driver that plays hands as a client.

May import messaging, store, security, telemetry, files, codec; not runtime.
"""
