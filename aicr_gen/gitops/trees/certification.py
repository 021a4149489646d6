"""A spec's certification block (spec.certification, or a pool's) as its certification bundle: the NVCRE
Certification and the jobs that repeat it (``certify/cron.py``)."""

from __future__ import annotations

from aicr_gen.bundle import Bundle
from aicr_gen.spec.cluster import Certification


def certification_bundle(cert_spec: Certification, name: str, namespace: str, selector: dict[str, str],
                         stack_digest: str, *, field: str = "spec.certification",
                         labels: dict[str, str] | None = None) -> Bundle:
    """The certification bundle of a spec's certification block at ``field`` (checked when the spec was loaded),
    named ``name`` and targeting ``selector``; every job's Certification template carries ``stack_digest`` (the
    stack it certifies), and so does the Flux post-change Job, so it runs again when the stack changes (Argo CD's
    post-change Application gets it as an annotation instead: see ``render_tree``)."""
    from aicr_gen.certify import cron, nvcre
    from aicr_gen.spec.validate import certification_options
    entries = [nvcre.category(item, f"{field}.categories {item!r}") for item in cert_spec.categories]
    options = certification_options(cert_spec, lambda key: f"{field}.options.{key}")
    cron.check_names(name, cert_spec.schedule is not None, cert_spec.postChange)
    cert = nvcre.certification(name, namespace, target_spec=nvcre.target(selector, [], []), entries=entries,
                               global_options=options, category_options={},
                               global_thresholds=dict(cert_spec.thresholds), category_thresholds={}, labels=labels)
    return cron.render(cert, schedule=cert_spec.schedule, post_change=cert_spec.postChange,
                       stack_digest=stack_digest).with_checksums()
