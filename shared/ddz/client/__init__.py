"""``ddz play``: a person at a table, in a terminal.

``commands`` reads what the player types, ``screen`` draws the table with rich,
``session`` talks to the table service over gRPC like any other client, and ``app``
runs the loop: join a room, follow the hand on the seat's stream, send moves, show the
settlement, another hand or quit.
"""
