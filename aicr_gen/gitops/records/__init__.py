"""What each tree was rendered from: the digests of its inputs (``fingerprint``) and the record ``sync`` commits
beside it (``record``), so ``sync --check`` answers on any clone without rendering."""
