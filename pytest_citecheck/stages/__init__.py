"""The pipeline stages, each usable on its own: fetch, passages, retrieval, judges, guard.

They know claims and the core layer, never recording, the engine or a front end
(docs/architecture.md)."""
