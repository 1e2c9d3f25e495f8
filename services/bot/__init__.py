"""The bot service: plays every bot seat and every disconnected seat (托管) of the hands
it follows, and answers hints (BotService in protos/ddz/v1/bot.proto).

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point, ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
