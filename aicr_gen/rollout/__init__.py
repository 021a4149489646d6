"""Fleet rollouts in waves (``aicr-gen rollout``): what each cluster proves (``evidence``, read back by ``read``),
the verdict of every gate and wave (``gates``), the fleet file edit that moves a wave to a baseline
(``fleet_edit``) and the commits that do it (``promote``)."""
