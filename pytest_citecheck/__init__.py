"""pytest-citecheck: a link that loads is not evidence.

Importing this package is cheap: nothing here imports torch,
sentence-transformers or yaml.
"""

from __future__ import annotations

__version__ = "0.1.0"
