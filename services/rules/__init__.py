"""The rules service: the authority over every hand in play (RulesService in
protos/ddz/v1/rules.proto). It decides each command with the hand aggregate and
publishes what happened.

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point, ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
