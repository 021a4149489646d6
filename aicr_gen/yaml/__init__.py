"""YAML for aicr-gen: strict, bounded loading with file:line errors and deterministic dumping. The one package
that imports PyYAML, yaml-rs or any other YAML library; callers write ``from aicr_gen.yaml import load_text``."""

from aicr_gen.yaml.load import (
    MAX_ALIASES,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    Document,
    Path,
    decode,
    dump,
    dump_json,
    format_path,
    load_bytes,
    load_text,
    shorten,
)

__all__ = ["MAX_ALIASES", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "Document", "Path", "decode", "dump", "dump_json",
           "format_path", "load_bytes", "load_text", "shorten"]
