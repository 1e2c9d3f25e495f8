"""The table service: the players' front door. Opens tables, starts hands, passes the
seats' moves to the rules service, enforces turn deadlines and streams each seat's view
(TableService in protos/ddz/v1/table.proto).

Its folder (docs/ARCHITECTURE.md "A service's folder"): ``app.py`` builds it whole,
``servicer.py`` is its entry point, ``use_cases/`` what it does and ``adapters/``
how that reaches the outside world."""
