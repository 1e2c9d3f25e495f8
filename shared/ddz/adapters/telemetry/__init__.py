"""What a process says about itself: its Prometheus metrics, its logs (the one
structlog setup), its traces (OpenTelemetry), its gRPC health.

May import files and codec only.
"""
