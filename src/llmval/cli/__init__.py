"""The `llmval` command (`python -m llmval`): `check-inventory`, `schema`, `init`, `snapshot`, `bench`.

Thin: each subcommand parses its arguments and calls the package that does the work. May import any package
of llmval; nothing in llmval imports it.
"""

from .main import main

__all__ = ["main"]
