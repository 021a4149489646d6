"""Components AICR's bundler treats by name (AICR 8703d8cf, pkg/bundler): the GPU Operator and the DRA driver,
each with its OpenShift variant."""

GPU_OPERATORS = ("gpu-operator", "gpu-operator-ocp")
DRA_DRIVERS = ("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-ocp")
