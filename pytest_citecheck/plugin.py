"""pytest entry point (being written)."""
