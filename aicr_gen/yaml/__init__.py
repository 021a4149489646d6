"""YAML for aicr-gen, the one package that imports PyYAML, yaml-rs or any other YAML library: ``load`` (strict,
bounded, file:line errors), ``fast`` (its yaml-rs path), ``dump`` (deterministic YAML and JSON), field paths for
messages (from ``located``), ``bounds`` (the limits every load keeps), ``stream`` (several documents in one
text), ``foreign`` (YAML others write, read as PyYAML reads it), ``edit`` (one value set in place,
every other byte kept). Callers import from here:
``from aicr_gen.yaml import load_text, dump``."""

from aicr_gen.located import FieldPath, format_path
from aicr_gen.yaml.bounds import MAX_ALIASES, MAX_BYTES, MAX_DEPTH, MAX_NODES
from aicr_gen.yaml.dump import dump, dump_json
from aicr_gen.yaml.load import Document, decode, load_bytes, load_text, shorten
from aicr_gen.yaml.stream import load_stream

__all__ = ["MAX_ALIASES", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "Document", "FieldPath", "decode", "dump", "dump_json",
           "format_path", "load_bytes", "load_stream", "load_text", "shorten"]
