"""The audit against an event store: reading one hand or every hand to audit (``source``,
``bulk``), the settlement projection rebuilt from the settled hands (``rebuild``), and
sample hands written into a store exactly as the services write them (``sample``).
"""
