"""The documentation site's tooling: `python -m docs.generate` writes the reference pages from the code."""
