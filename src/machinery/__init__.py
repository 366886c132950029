"""Machinery: generic concurrency and id-making utilities (asyncio, threads, the clock,
randomness) that services and adapters both use. Not rules (src/domain/ stays pure), not
interfaces (src/ports/ are Protocols and their errors): it imports only the standard library
and rules."""
