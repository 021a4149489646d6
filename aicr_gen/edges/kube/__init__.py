"""The only place that talks to a cluster, through the official ``kubernetes`` client.

``config.py`` chooses the cluster and credentials (kubeconfig or in-cluster); ``client.py`` makes the requests
(the snapshot reads, cm:// ConfigMaps and their server-side apply) and turns every failure into one line. The
client costs ~0.4 s to import, so nothing here imports it at module level: only a command that talks to a
cluster pays for it.
"""
