"""aicr-gen: reproducible, certified and watched GPU Kubernetes clusters through Git."""

__version__ = "0.2.0"
