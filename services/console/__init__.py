"""The dispute desk: a read-only web console over the event store for support staff
and auditors (docs/OPERATIONS.md "The dispute desk", docs/AUDIT_WALKTHROUGH.md)."""
