"""The dispute desk: a read-only web console over the event store for support staff
and auditors (docs/OPERATIONS.md "The dispute desk", docs/AUDIT_WALKTHROUGH.md).

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point (a web app), ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
