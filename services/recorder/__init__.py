"""The recorder service: consumes every event into the event store and answers reads
(RecorderService in protos/ddz/v1/recorder.proto).

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py``, ``audit_servicer.py`` and ``desk_servicer.py`` are its entry points,
``use_cases/`` what it does and ``adapters/`` how that reaches the outside world."""
