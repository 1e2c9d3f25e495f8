"""Who is who and who may do what: certificates, tokens and their keys, staff tokens,
event signatures, the rights table of every RPC.

May import telemetry, files, codec; never messaging, rpc or runtime.
"""
