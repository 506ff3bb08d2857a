"""Claims: the data model, the claim-file schema and the file loader (docs/architecture.md)."""
