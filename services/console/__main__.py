"""`python -m services.console`: settings, logging, serve (ddz.adapters.service_runner)."""

from ddz.adapters.service_runner import main

raise SystemExit(main("console"))
