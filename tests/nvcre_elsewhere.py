"""For tests that certify a recipe without NVCRE (the inference examples): what a site with NVCRE installed outside
the repository does since issue 25 made such a certification an error. The spec lists its category again and
replaces policy certification-needs-nvcre by name with a warning (the shipped policy's wording before), so what
those tests check (certification trees, commit messages, plans, findings) is what it was."""

from __future__ import annotations

from pathlib import Path

POLICY_FILE = "policies/nvcre-elsewhere.yaml"  # beside the spec, out of a clusters/*.yaml glob
POLICY = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Policy
metadata:
  name: certification-needs-nvcre
spec:
  description: a cluster that certifies with NVCRE deploys NVCRE
  severity: warning
  target: spec
  rule: "spec.spec.certification == null || size(spec.spec.certification.categories) == 0 || 'nvcre' in deployed"
  path: "spec.certification.categories"
  message: >-
    the recipe has no enabled nvcre component, so nothing acts on the Certifications its jobs create; use a catalog
    overlay with nvcre (e.g. the training ones) or install NVCRE separately
"""
EDITS = (("    categories: []  # e.g. - communication/nccl-all-reduce",
          "    categories: [communication/nccl-all-reduce]"),
         ("  policies: []", f"  policies: [{POLICY_FILE}]"))


def certifying(text: str, folder: Path) -> str:
    """The text of an inference example (as shipped) that certifies anyway, its opt-out policy written to
    ``folder`` (the folder the spec is written to)."""
    write_policy(folder)
    for old, new in EDITS:
        assert old in text, old
        text = text.replace(old, new)
    return text


def write_policy(folder: Path) -> None:
    """The opt-out policy, at ``POLICY_FILE`` under ``folder``."""
    (folder / POLICY_FILE).parent.mkdir(parents=True, exist_ok=True)
    (folder / POLICY_FILE).write_text(POLICY)
