"""The account of an audited hand, for people: the report (verdict and checks), the
timeline and transcript of every event, the table as it stood after event N, the
settlement's arithmetic written out, and whose cards each view may show (``sight``).
"""
