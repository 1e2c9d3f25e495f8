"""`python -m services.play`: settings, logging, serve (ddz.adapters.runtime.service_runner)."""

from ddz.adapters.runtime.service_runner import main

raise SystemExit(main("play"))
