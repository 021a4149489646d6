"""Parity of ``aicr-gen bundle`` with AICR's own ``aicr bundle``, compared as deployments, not as files."""
