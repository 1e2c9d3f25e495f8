"""The dealer service: makes each hand's server seed, deals from it and publishes the
hand's first events (DealerService in protos/ddz/v1/dealer.proto).

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point, ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
