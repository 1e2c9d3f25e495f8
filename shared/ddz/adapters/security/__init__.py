"""The suite's certificates (its CA, each service's identity, TLS files) and the keys that
sign events. Who may call what -- identities, rights, tokens -- is ``ddz.access``.

May import telemetry, files, codec; never messaging, rpc or runtime.
"""
