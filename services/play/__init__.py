"""The players' web front: the player's page and the TableService over gRPC-Web.

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point (a web app), ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
