"""The bottom layer: shared defaults, errors, secret scrubbing and the HTTP retry policy.

Nothing here imports another layer of the package (see docs/architecture.md)."""
