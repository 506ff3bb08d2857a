from __future__ import annotations

# pytester's in-process runs drop modules first imported inside them; PyYAML's
# C extension cannot be imported twice in one process (its emitter then rejects
# the re-imported event classes). Import them once, up front.
import vcr  # noqa: F401
import yaml  # noqa: F401
