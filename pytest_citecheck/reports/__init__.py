"""Reports: terminal summary, JSON/CSV, markdown, HTML and the audit index.

They render results; they know no front end's settings (docs/architecture.md)."""
