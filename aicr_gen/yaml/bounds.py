"""The bounds on every file and document aicr-gen loads: a larger file, or a document that expands to more
values, more alias references or deeper nesting, is refused with its line (billion laughs cannot happen)."""

MAX_BYTES = 16 * 1024 * 1024
MAX_ALIASES = 64
MAX_NODES = 200_000
MAX_DEPTH = 100
