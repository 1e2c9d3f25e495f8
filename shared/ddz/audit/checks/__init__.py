"""The checks an audit runs on one hand's stored events, and what they find.

Pure: each check reads the stored rows and what earlier checks found (``context``), and
fails with a named reason (``results``). ``describe`` words cards, moves and ledgers the
same way for a failure message and for the account of the hand (``ddz.audit.account``).
"""
