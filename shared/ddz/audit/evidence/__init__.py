"""The evidence a hand's record carries and the keys it is checked against: the evidence
file that verifies with no store (``file``), the operator's published keyring
(``published``), and the auditor's own keys found from the settings (``keys``).
"""
