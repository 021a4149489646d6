"""Field paths: where a value sits in a document (``("spec", "componentRefs", 2, "name")``), and how messages
write one."""

FieldPath = tuple[str | int, ...]


def format_path(path: FieldPath) -> str:
    """Render a field path the way users write it: ``spec.componentRefs[2].name``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(document root)"
