"""Fleet rollouts in waves (``aicr-gen rollout``): what each cluster proves (``evidence``, read back by ``read``),
the verdict of every gate and wave (``gates``), and the commits that move a wave to a baseline (``promote``)."""
