"""The control plane fixture itself: both auth methods work, RBAC is on, namespaces are enforced."""

from __future__ import annotations

from tests.cluster.envtest import ControlPlane


def test_token_and_certificate_users_are_admins(control_plane: ControlPlane) -> None:
    for context in ("admin", "cert"):
        done = control_plane.kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}", context=context)
        assert done.stdout == {"admin": "admin", "cert": "cert-admin"}[context]
        assert control_plane.kubectl("auth", "can-i", "delete", "nodes", context=context).stdout.strip() == "yes"


def test_rbac_refuses_a_user_without_bindings(control_plane: ControlPlane) -> None:
    done = control_plane.kubectl("get", "namespaces", context="nobody", check=False)
    assert done.returncode != 0
    assert "forbidden" in done.stderr
    assert not control_plane.can_i("list", "secrets", user="nobody")


def test_namespace_admission_refuses_objects_in_a_missing_namespace(control_plane: ControlPlane) -> None:
    done = control_plane.kubectl("create", "configmap", "x", "--namespace=does-not-exist", check=False)
    assert done.returncode != 0
    assert 'namespaces "does-not-exist" not found' in done.stderr
