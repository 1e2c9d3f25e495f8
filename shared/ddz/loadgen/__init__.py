"""The load the suite is measured under, made by clients of the running services.

``driver``: bot tables, their hands dealt one after another as fast as the bot plays
them, read back from the recorder and the settlement as the operator's tools do
(``ddz bench e2e``, ``ddz simulate``, ``ddz demo``, the end-to-end tests).

The crowd: simulated people at human pace (``ddz bench crowd``), each an outside client
of its own (TLS, its own player token).

``behaviour`` (what a person does, from their own seeded rng), ``person`` (one person's
conversation with the table service, hand after hand), ``tally`` (what the people
measure), ``population`` (a process of many people and the processes of the crowd),
``usage`` (the suite's and the crowd's CPU and memory, from ``/proc``), ``report`` (the
figures).
"""
