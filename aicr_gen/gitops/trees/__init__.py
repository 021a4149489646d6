"""One cluster's managed tree: its recipe (``recipes``), everything it renders (``render_tree``), per-pool
drivers and certifications (``pools``, ``certification``), the fleet's entry points (``fleet_entry``), objects two
trees would both claim (``collisions``) and the inputs of ``diff --fleet`` (``fleet_sources``)."""
