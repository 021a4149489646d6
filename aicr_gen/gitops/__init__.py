"""GitOps inputs: the ``ClusterSpec`` kind that describes one cluster end to end."""
