"""Manifests as text, the two rules every renderer of manifests shares: whether a file holds any object, and
plain manifests as a Helm template that renders them unchanged."""

from __future__ import annotations


def has_objects(text: str) -> bool:
    """Whether a line holds anything but blanks, comments and ``---`` (AICR's test before writing a file)."""
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and stripped != "---":
            return True
    return False


def helm_literal(manifest: bytes) -> bytes:
    """Plain manifests as a Helm template that renders them unchanged (``{{`` would start an action)."""
    return manifest.replace(b"{{", b'{{ "{{" }}')
