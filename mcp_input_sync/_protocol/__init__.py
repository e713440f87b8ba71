"""The pure protocol core: no threads, sockets, sleeps or clock reads.

Functions here take what they need (including the current time) as
arguments and return decisions; the client and the runtime act on them.
"""
