"""The gates of a GitOps repository (pre-commit hooks, ``sync --check``, the plan workflow), run for real."""
