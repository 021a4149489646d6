"""Read the cluster back: snapshots, readiness constraints and drift reports."""
