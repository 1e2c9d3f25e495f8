"""Events on NATS JetStream: the bus, a hand's and a table's stream, the hand feeds,
instance leases, the rooms' queues, and the NATS users of the stack (who may
publish and read which subject).

May import service_db, store, security, telemetry, files, codec; not rpc or runtime.
"""
