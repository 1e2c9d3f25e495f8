"""`python -m services.rules`: settings, logging, serve (ddz.adapters.service_runner)."""

from ddz.adapters.service_runner import main

raise SystemExit(main("rules"))
