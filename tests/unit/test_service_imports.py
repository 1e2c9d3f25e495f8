"""A service process loads what it uses: ``python -m services.NAME`` imports the service
runner and the service's ``app``, and a service without a database (rules, bot, table,
play) never imports SQLAlchemy or Alembic, nor one without player or staff tokens
(rules, bot) an X.509 library. Every service start of the suite (a restart after
``kill -9`` included) pays for each library it imports, about 0.1-0.2 s of CPU each."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("sqlalchemy", "alembic", "cryptography.x509")
NOT_LOADED = {
    "rules": HEAVY,
    "bot": HEAVY,
    "table": ("sqlalchemy", "alembic"),
    "play": ("sqlalchemy", "alembic"),
}


@pytest.mark.parametrize("service", sorted(NOT_LOADED))
def test_a_service_imports_no_library_it_does_not_use(service: str) -> None:
    code = (
        f"import sys; import ddz.adapters.runtime.service_runner, services.{service}.app; "
        f"print(sorted(m for m in {NOT_LOADED[service]!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", f"services.{service} imports {out.stdout.strip()}"
