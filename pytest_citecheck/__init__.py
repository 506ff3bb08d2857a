"""pytest-citecheck: a link that loads is not evidence.

Importing this package is cheap: nothing here imports torch,
sentence-transformers or yaml.
"""

from __future__ import annotations

# The one version: pyproject.toml reads it (tool.setuptools.dynamic).
__version__ = "0.1.0"
# The project's home. pyproject's [project.urls], the SARIF log's informationUri and the
# install and pre-commit snippets in the docs all use it (a test compares them).
PROJECT_URL = "https://github.com/pytest-citecheck/pytest-citecheck"
