"""The console service's adapters: how its use cases reach the outside world (clients,
consumers, stores; docs/ARCHITECTURE.md "A service's folder")."""
