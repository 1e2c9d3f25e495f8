"""Running the suite's processes: the local stack (``ddz up``) and its file, the
NATS server it starts, one way to run a service, the suite's lock and status.

May import every other package of the adapters; none imports it.
"""
