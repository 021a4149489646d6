"""Many clusters through Git: each ClusterSpec's tree (``trees/``), what changed and how reviewers read it
(``review/``), what each tree was rendered from (``records/``), and the one atomic commit (``commit/``); on top,
rendering many specs at once (``render_many``) and what ``sync``, ``sync --check`` and ``plan`` share
(``committed``, ``sync_specs``, ``check_specs``)."""
