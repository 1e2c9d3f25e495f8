"""The files of a data dir as a person meets them (one ``BadFile`` error) and key
files written whole, mode 0600.

Imports no other package of the adapters.
"""
