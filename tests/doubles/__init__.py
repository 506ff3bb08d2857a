"""Loopback test doubles of the Crawling API and the judge providers (tests only).

They speak the wire formats of shared/reference/WIRE.md and listen on 127.0.0.1 only.
"""
