"""The parts of ``benchmarks/bench_bus_floor.py`` (its docstring says what it measures and
how): the line protocol between it and its child processes (``protocol``), the roles a
child plays on the bus (``bus_roles``, ``suite_roles``), the bus run and the gRPC run
that drive them (``bus_run``, ``grpc_floor``), and the report (``report``)."""
