"""The front ends other than pytest: the `citecheck` command (batch, audit, serve)."""
