"""Publishing a bundle to an OCI registry (``bundle --output oci://``): the target, the artifact, the push."""
