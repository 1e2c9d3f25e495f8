"""The dealer service's use cases: what it does, with its ports as arguments (no adapter, no
gRPC; docs/ARCHITECTURE.md "A service's folder")."""
