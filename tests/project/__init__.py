"""The repository's own files: packaging, GitHub workflows and presets, the demo."""
