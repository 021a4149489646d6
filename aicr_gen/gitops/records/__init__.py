"""What each tree was rendered from: the digests of its inputs (``fingerprint``) and the record ``sync`` commits
beside it (``record``), so ``sync --check`` answers on any clone without rendering; and, by the same digests, a
spec's resolved recipe cached for ``diff --spec`` (``recipe_cache``)."""
