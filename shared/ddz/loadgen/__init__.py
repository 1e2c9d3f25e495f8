"""The crowd: simulated people at human pace through the public ``TableService``
(``ddz bench crowd``), each an outside client of its own (TLS, its own player token).

``behaviour`` (what a person does, from their own seeded rng), ``person`` (one person's
conversation with the table service, hand after hand), ``tally`` (what the people
measure), ``population`` (a process of many people and the processes of the crowd),
``usage`` (the suite's and the crowd's CPU and memory, from ``/proc``), ``report`` (the
figures).
"""
