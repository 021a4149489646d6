"""Air-gapped sites: what a rendered tree pulls, the site mirror rewrite, digests locked from a registry."""
