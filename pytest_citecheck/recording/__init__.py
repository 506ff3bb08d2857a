"""Record and replay: cassettes, the per-claim HTTP transport and the recording lock."""
