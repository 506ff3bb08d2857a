"""The claim-file reader (:mod:`pytest_citecheck.claims.loader`), split by job: the
problems it collects (``base``), one claim checked against the schema (``claims``),
YAML composed with every value's line (``yaml_nodes``), ``outlines:`` and
``answers:`` (``outlines``, ``answers``), and JSONL batch records (``jsonl``)."""
